// A fake sandboxd for the unit tests: a node:http server on a Unix socket in
// a temporary folder, answering what the test's route says, and keeping
// every request it took.

import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";

/**
 * What the fake daemon answers: a status, a JSON or raw body, headers, or
 * NDJSON lines sent one chunk each (after an optional pause).
 * @typedef {{status?: number, body?: unknown, raw?: Buffer | string, headers?: Record<string, string>,
 *            lines?: Array<unknown>, lineDelayMs?: number, cut?: boolean, delayMs?: number, destroy?: boolean}} Reply
 */

/** One request the fake daemon took. */
export class Seen {
  /**
   * @param {string} method
   * @param {string} path
   * @param {URLSearchParams} query
   * @param {http.IncomingHttpHeaders} headers
   * @param {Buffer} body
   */
  constructor(method, path, query, headers, body) {
    this.method = method;
    this.path = path;
    this.query = query;
    this.headers = headers;
    this.body = body;
  }

  json() {
    return JSON.parse(this.body.toString("utf8"));
  }
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a fake daemon; close() stops it and removes its folder. `early`,
 * if it answers a request, does so before its body is read, as the daemon
 * does for a body over its limit.
 * @param {(s: Seen) => Reply} route
 * @param {(method: string, url: string) => Reply | undefined} [early]
 */
export async function fakeDaemon(route, early) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-"));
  const socket = path.join(dir, "s.sock");
  /** @type {Seen[]} */
  const seen = [];
  /** @type {Set<import("node:net").Socket>} */
  const conns = new Set();
  const server = http.createServer(async (req, res) => {
    const e = early && early(req.method || "", req.url || "");
    if (e) {
      const data = Buffer.from(JSON.stringify(e.body));
      res.writeHead(e.status ?? 200, { "Content-Type": "application/json", "Content-Length": String(data.length), Connection: "close" });
      res.end(data);
      return;
    }
    /** @type {Buffer[]} */
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const u = new URL(req.url || "/", "http://sandboxd");
    const s = new Seen(req.method || "", u.pathname, u.searchParams, req.headers, Buffer.concat(chunks));
    seen.push(s);
    const r = route(s);
    if (r.delayMs) await sleep(r.delayMs);
    if (r.destroy) {
      res.socket?.destroy();
      return;
    }
    if (r.lines) {
      res.writeHead(r.status ?? 200, { "Content-Type": "application/x-ndjson", "X-Request-Id": "req-1" });
      for (const ln of r.lines) {
        res.write(typeof ln === "string" || Buffer.isBuffer(ln) ? ln : JSON.stringify(ln) + "\n");
        await sleep(r.lineDelayMs ?? 10);
      }
      if (r.cut) {
        // A stream cut before its end: the chunked body never ends.
        res.socket?.destroy();
        return;
      }
      res.end();
      return;
    }
    /** @type {Buffer} */
    let data;
    let ctype = "application/json";
    if (r.raw !== undefined) {
      data = Buffer.from(r.raw);
      ctype = "application/octet-stream";
    } else {
      data = r.body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(r.body));
    }
    const headers = { "Content-Type": ctype, "Content-Length": String(data.length), "X-Request-Id": "req-1", ...r.headers };
    res.writeHead(r.status ?? 200, headers);
    res.end(data);
  });
  server.on("connection", (c) => {
    conns.add(c);
    c.on("close", () => conns.delete(c));
  });
  await new Promise((resolve) => server.listen(socket, () => resolve(undefined)));
  return {
    socket,
    seen,
    async close() {
      for (const c of conns) c.destroy();
      await new Promise((resolve) => server.close(() => resolve(undefined)));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An error answer of the contract.
 * @param {number} status
 * @param {string} code
 * @param {string} message
 * @param {Record<string, string>} [headers]
 * @returns {Reply}
 */
export function errorReply(status, code, message, headers) {
  return { status, body: { error: { code, message } }, headers };
}

export const SESSION = {
  id: "3f2a9c0d1e4b5a67",
  owner_uid: 0,
  template: "python",
  status: "running",
  created_at: "2026-01-02T03:04:05.123456789Z",
  last_used_at: "0001-01-01T00:00:00Z",
  exec_count: 0,
  limits: { memory_mb: 256, cpus: 1.0, pids: 256, disk_mb: 1024, timeout_s: 30, idle_timeout_s: 3600 },
  network: "none",
  labels: { agent: "a1" },
  runtime: "runc",
  a_field_from_a_newer_daemon: true,
};

export const EXECUTION = {
  id: "e1",
  session_id: SESSION.id,
  language: "python",
  status: "ok",
  stdout: "0\n1\n",
  stderr: "",
  exit_code: 0,
  result: "42",
  outputs: [{ mime: "image/png", data: Buffer.from("\x89PNG", "latin1").toString("base64") }],
  started_at: "2026-01-02T03:04:05Z",
  duration_ms: 3.2,
  truncated: false,
  state_reset: false,
};

export const METRICS = { wall_ms: 3.2, cpu_ms: 2.9, memory_peak_bytes: 31457280 };

// One running (no exit code yet), one ended, one from an older daemon.
export const SUMMARIES = [
  { id: "e3", language: "shell", code_sha256: "ab".repeat(32), caller_uid: 1000, started_at: "2026-01-02T03:04:07Z", duration_ms: 0, status: "running", metrics: METRICS },
  { id: "e2", language: "python", code_sha256: "cd".repeat(32), caller_uid: 0, started_at: "2026-01-02T03:04:06Z", duration_ms: 3.2, status: "error", exit_code: 1, metrics: METRICS, truncated: true },
  { id: "e1", language: "python", started_at: "2026-01-02T03:04:05Z", duration_ms: 1.5, status: "ok", exit_code: 0 },
];
