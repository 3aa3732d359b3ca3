// Tests of the SDK against a fake daemon on a Unix socket: what goes on the
// wire, and how each answer comes back (errors by code, streams, files,
// timeouts, aborts). No sandboxd needed; sdk.test.js drives a real one.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import zlib from "node:zlib";

import * as sandboxd from "sandboxd";
import {
  BadGateway,
  Client,
  Conflict,
  ExecMetrics,
  Execution,
  ExecutionSummary,
  Internal,
  InvalidArgument,
  NotFound,
  PayloadTooLarge,
  PermissionDenied,
  ProtocolError,
  RequestTimeout,
  ResourceExhausted,
  Sandbox,
  SandboxdError,
  Session,
  STATUS_RUNNING,
  Toolbox,
  Unavailable,
  run,
} from "sandboxd";

import { FrameDecoder, encodeFrame, parseExit, resizePayload } from "../src/attach.js";
import { extractTar, packDir, readTar, tarHeader } from "../src/tar.js";
import { EXECUTION, METRICS, SESSION, SUMMARIES, errorReply, fakeDaemon } from "./fake.js";

/**
 * Runs fn with a fake daemon answering route, and stops the daemon after.
 * @template T
 * @param {(s: import("./fake.js").Seen) => import("./fake.js").Reply} route
 * @param {(d: Awaited<ReturnType<typeof fakeDaemon>>) => Promise<T>} fn
 */
async function withFake(route, fn) {
  const d = await fakeDaemon(route);
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}

describe("errors", () => {
  const cases = [
    // [status, code, class]
    [400, "invalid_argument", InvalidArgument],
    [404, "not_found", NotFound],
    [409, "conflict", Conflict],
    [403, "permission_denied", PermissionDenied],
    [413, "payload_too_large", PayloadTooLarge],
    [429, "resource_exhausted", ResourceExhausted],
    [500, "internal", Internal],
    [503, "unavailable", Unavailable],
    [502, "bad_gateway", BadGateway],
    // A code this SDK does not know takes its status's class and keeps its code.
    [404, "gone_elsewhere", NotFound],
    [418, "teapot", SandboxdError],
  ];
  for (const [status, code, cls] of cases) {
    it(`${status} ${code} is ${cls.name}`, () =>
      withFake(
        () => errorReply(Number(status), String(code), `it failed: ${code}`),
        async (d) => {
          const err = await new Client({ socket: d.socket }).getSession("x").then(
            () => assert.fail("no error"),
            (e) => e,
          );
          assert.equal(err.constructor, cls);
          assert.ok(err instanceof SandboxdError && err instanceof Error);
          assert.deepEqual(
            [err.code, err.status, err.message, err.requestId, err.name],
            [code, status, `it failed: ${code}`, "req-1", cls.name],
          );
          assert.equal(String(err), `${cls.name}: it failed: ${code}`);
        },
      ));
  }

  it("keeps Retry-After, in seconds or as a date", () =>
    withFake(
      (s) =>
        errorReply(429, "resource_exhausted", "too many sessions", {
          "Retry-After": s.method === "POST" ? "3" : new Date(Date.now() + 5000).toUTCString(),
        }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        await assert.rejects(c.createSession(), (e) => e instanceof ResourceExhausted && e.retryAfter === 3);
        await assert.rejects(c.health(), (e) => e instanceof ResourceExhausted && e.retryAfter > 3 && e.retryAfter <= 5);
      },
    ));

  it("takes a body that is not JSON as the message", () =>
    withFake(
      () => ({ status: 502, raw: "upstream fell over\n" }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).health(), (e) => {
          assert.ok(e instanceof BadGateway);
          assert.equal(e.message, "upstream fell over");
          return true;
        });
      },
    ));

  it("says when no daemon listens", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-"));
    try {
      await assert.rejects(new Client({ socket: path.join(dir, "none.sock") }).health(), (e) => {
        assert.ok(e instanceof Unavailable);
        assert.match(e.message, /is it running\?/);
        assert.equal(e.status, null);
        return true;
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("times a call out when the daemon sends nothing", () =>
    withFake(
      () => ({ body: { status: "ok" }, delayMs: 1000 }),
      async (d) => {
        const t0 = Date.now();
        await assert.rejects(new Client({ socket: d.socket, requestTimeoutMs: 200 }).health(), (e) => {
          assert.ok(e instanceof RequestTimeout);
          assert.equal(e.code, "deadline_exceeded");
          return true;
        });
        assert.ok(Date.now() - t0 < 900);
        // The call's own timeout wins over the client's.
        await assert.rejects(new Client({ socket: d.socket }).health({ requestTimeoutMs: 100 }), RequestTimeout);
      },
    ));

  it("rejects an aborted call with the signal's reason", () =>
    withFake(
      () => ({ body: { status: "ok" }, delayMs: 1000 }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 50);
        await assert.rejects(c.health({ signal: ac.signal }), (e) => e instanceof Error && e.name === "AbortError");
        await assert.rejects(c.health({ signal: AbortSignal.abort(new Error("already")) }), /already/);
        // AbortSignal.timeout rejects with its TimeoutError.
        await assert.rejects(c.health({ signal: AbortSignal.timeout(50) }), (e) => e instanceof Error && e.name === "TimeoutError");
      },
    ));

  it("calls a connection closed without an answer what it is", () =>
    withFake(
      () => ({ destroy: true }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).health(), Unavailable);
      },
    ));
});

describe("requests", () => {
  it("sends the create's fields, snake_case, and reads the session", () =>
    withFake(
      () => ({ status: 201, body: SESSION }),
      async (d) => {
        const sbx = await Sandbox.create({
          template: "python",
          memoryMb: 256,
          cpus: 0.5,
          timeoutS: 10,
          idleTimeoutS: 0,
          labels: { agent: "a1" },
          allow: "pypi.org",
          egressKbps: undefined,
          socket: d.socket,
        });
        assert.deepEqual(d.seen[0].json(), {
          template: "python",
          memory_mb: 256,
          cpus: 0.5,
          timeout_s: 10,
          idle_timeout_s: 0,
          allow: ["pypi.org"],
          labels: { agent: "a1" },
        });
        assert.equal(d.seen[0].headers["content-type"], "application/json");
        assert.match(String(d.seen[0].headers["user-agent"]), /^sandboxd-js\//);
        const s = sbx.session;
        assert.deepEqual(
          [sbx.id, s.status, s.limits.memoryMb, s.limits.idleTimeoutS, s.labels, s.runtime, s.ownerUid],
          [SESSION.id, "running", 256, 3600, { agent: "a1" }, "runc", 0],
        );
        assert.equal(s.createdAt?.toISOString(), "2026-01-02T03:04:05.123Z");
        assert.equal(s.lastUsedAt, null);
        // A daemon that grants no MCP server omits mcp_servers.
        assert.deepEqual(s.mcpServers, []);
      },
    ));

  it("sends and reads the session's MCP servers", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, mcp_servers: ["github", "slack"] } }),
      async (d) => {
        const sbx = await Sandbox.create({ mcpServers: ["github", "slack"], socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { mcp_servers: ["github", "slack"] });
        assert.deepEqual(sbx.session.mcpServers, ["github", "slack"]);
        // A single name goes as a list, as allow's does; junk reads as none.
        await new Client({ socket: d.socket }).createSession({ mcpServers: "github" });
        assert.deepEqual(d.seen[1].json(), { mcp_servers: ["github"] });
        assert.deepEqual(Session.fromJSON({ id: "s", mcp_servers: "github" }).mcpServers, []);
      },
    ));

  it("sends and reads the session's idle action", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, idle_action: "pause" } }),
      async (d) => {
        const sbx = await Sandbox.create({ idleAction: "pause", socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { idle_action: "pause" });
        assert.equal(sbx.session.idleAction, "pause");
        await new Client({ socket: d.socket }).createSession({ idleAction: "stop" });
        assert.deepEqual(d.seen[1].json(), { idle_action: "stop" });
        // A daemon that does not say reads as "".
        assert.equal(Session.fromJSON(SESSION).idleAction, "");
      },
    ));

  it("sends, moves and reads the session's deadline", () =>
    withFake(
      (s) => {
        const body = s.body.length ? s.json() : {};
        if (s.method === "PATCH" && body.deadline_s === 0) return { body: SESSION };
        return { status: s.method === "POST" ? 201 : 200, body: { ...SESSION, deadline: "2026-11-29T02:00:00Z" } };
      },
      async (d) => {
        const sbx = await Sandbox.create({ deadlineS: 600, socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { deadline_s: 600 });
        assert.equal(sbx.session.deadline?.toISOString(), "2026-11-29T02:00:00.000Z");
        const s = await sbx.setDeadline(3600);
        assert.deepEqual([d.seen[1].method, d.seen[1].path, d.seen[1].json()], ["PATCH", `/v1/sessions/${SESSION.id}`, { deadline_s: 3600 }]);
        assert.ok(s.deadline instanceof Date);
        // 0 removes it: it goes (it is not "absent"), and the answer has none.
        await sbx.setDeadline(0);
        assert.deepEqual([d.seen[2].json(), sbx.session.deadline], [{ deadline_s: 0 }, null]);
        const c = new Client({ socket: d.socket });
        assert.ok((await c.updateSession("s1", { deadlineS: 60 })).deadline instanceof Date);
        assert.equal(d.seen[3].path, "/v1/sessions/s1");
        // A daemon that does not say has no deadline.
        assert.equal(Session.fromJSON(SESSION).deadline, null);
      },
    ));

  it("sends and reads the session's name", () =>
    withFake(
      () => ({ status: 201, body: { ...SESSION, name: "build-1" } }),
      async (d) => {
        const sbx = await Sandbox.create({ name: "build-1", socket: d.socket });
        assert.deepEqual(d.seen[0].json(), { name: "build-1" });
        assert.equal(sbx.session.name, "build-1");
        assert.equal(Session.fromJSON(SESSION).name, "");
      },
    ));

  it("interrupts the running execution", () => {
    let interrupted = true;
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/gone/interrupt") return errorReply(404, "not_found", "no session gone");
        return { body: { interrupted } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        const sbx = await Sandbox.create({ socket: d.socket });
        const cases = [
          // [id, call]
          ["s1", () => c.interrupt("s1")],
          [SESSION.id, () => sbx.interrupt()],
        ];
        for (const [id, call] of cases) {
          for (const want of [true, false]) {
            interrupted = want;
            d.seen.length = 0;
            assert.equal(await /** @type {() => Promise<boolean>} */ (call)(), want);
            const raw = d.seen[0];
            assert.deepEqual([raw.method, raw.path, raw.body.length], ["POST", `/v1/sessions/${id}/interrupt`, 0]);
          }
        }
        await assert.rejects(c.interrupt("gone"), NotFound);
      },
    );
  });

  it("pauses and resumes, keeping the session it answers", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/busy/pause") return errorReply(409, "conflict", "an execution is running: interrupt it or wait");
        const status = s.path.endsWith("/pause") ? "paused" : s.path.endsWith("/hibernate") ? "hibernated" : "running";
        return { body: { ...SESSION, status } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        for (const [op, call, status] of /** @type {const} */ ([
          ["pause", (/** @type {string} */ id) => c.pauseSession(id), "paused"],
          ["resume", (/** @type {string} */ id) => c.resumeSession(id), "running"],
          ["hibernate", (/** @type {string} */ id) => c.hibernateSession(id), "hibernated"],
        ])) {
          d.seen.length = 0;
          assert.equal((await call("s1")).status, status);
          assert.deepEqual([d.seen[0].method, d.seen[0].path, d.seen[0].body.length], ["POST", `/v1/sessions/s1/${op}`, 0]);
        }
        const sbx = await Sandbox.create({ socket: d.socket });
        const p = await sbx.pause();
        assert.deepEqual([p.status, sbx.session.status, d.seen.at(-1)?.path], ["paused", "paused", `/v1/sessions/${SESSION.id}/pause`]);
        const r = await sbx.resume();
        assert.deepEqual([r.status, sbx.session.status, d.seen.at(-1)?.path], ["running", "running", `/v1/sessions/${SESSION.id}/resume`]);
        await assert.rejects(c.pauseSession("busy"), (e) => e instanceof Conflict && e.status === 409);
      },
    ));

  it("sends an Idempotency-Key, and tells a create made from one that was not", () => {
    /** @type {Map<string, string>} */
    const made = new Map();
    return withFake(
      (s) => {
        const key = s.headers["idempotency-key"];
        if (key === undefined) return { status: 201, body: SESSION };
        const body = s.body.toString();
        if (!made.has(String(key))) {
          made.set(String(key), body);
          return { status: 201, body: SESSION };
        }
        if (made.get(String(key)) !== body) return errorReply(409, "conflict", `Idempotency-Key ${key} made session ${SESSION.id} with another request`);
        return { status: 200, body: SESSION };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        // Without a key, no header: a plain create, as before.
        assert.equal((await c.createSession({ labels: { a: "1" } })).id, SESSION.id);
        assert.equal(d.seen.at(-1)?.headers["idempotency-key"], undefined);
        // The key goes as the header, never in the body; 201 then 200.
        let r = await c.createSessionOnce("k-1", { memoryMb: 256 });
        assert.deepEqual([r.session.id, r.created, d.seen.at(-1)?.headers["idempotency-key"], d.seen.at(-1)?.json()], [SESSION.id, true, "k-1", { memory_mb: 256 }]);
        r = await c.createSessionOnce("k-1", { memoryMb: 256 });
        assert.deepEqual([r.session.id, r.created], [SESSION.id, false]);
        assert.equal((await c.createSession({ idempotencyKey: "k-1", memoryMb: 256 })).id, SESSION.id);
        assert.equal(d.seen.at(-1)?.headers["idempotency-key"], "k-1");
        // The key with another request is a conflict.
        await assert.rejects(c.createSession({ idempotencyKey: "k-1", memoryMb: 512 }), Conflict);
        // An empty key would be none: refused before anything is sent.
        const n = d.seen.length;
        await assert.rejects(c.createSession({ idempotencyKey: "" }), TypeError);
        assert.equal(d.seen.length, n);

        // Sandbox says whether it made the session; connect never did.
        const sbx = await Sandbox.create({ idempotencyKey: "k-2", labels: { agent: "a1" }, socket: d.socket });
        assert.deepEqual([sbx.created, d.seen.at(-1)?.headers["idempotency-key"], d.seen.at(-1)?.json()], [true, "k-2", { labels: { agent: "a1" } }]);
        const again = await Sandbox.create({ idempotencyKey: "k-2", labels: { agent: "a1" }, socket: d.socket });
        assert.deepEqual([again.id, again.created], [sbx.id, false]);
        assert.equal((await Sandbox.create({ socket: d.socket })).created, true);
        assert.equal((await Sandbox.connect(sbx.id, { socket: d.socket })).created, false);
        // A Toolbox takes it as any option of Sandbox.create.
        const tb = new Toolbox({ idempotencyKey: "k-3", socket: d.socket });
        try {
          assert.equal((await tb.getSandbox()).id, SESSION.id);
          assert.equal(d.seen.at(-1)?.headers["idempotency-key"], "k-3");
        } finally {
          await tb.close();
        }
      },
    );
  });

  it("starts an execution without waiting for it", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path === "/v1/sessions/bad/exec") return { status: 202, body: { eid: "e9" } }; // not the contract's answer
        return { status: 202, body: { id: "e9" } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        assert.equal(await c.startExec("s1", "x", { language: "shell", timeoutS: 2.5, env: { A: "1" }, cwd: "sub" }), "e9");
        const raw = d.seen.at(-1);
        assert.deepEqual([raw?.method, raw?.path, raw?.headers.accept], ["POST", "/v1/sessions/s1/exec", undefined]);
        assert.deepEqual(raw?.json(), { language: "shell", code: "x", timeout_s: 2.5, env: { A: "1" }, cwd: "sub", wait: false });
        const sbx = await Sandbox.create({ socket: d.socket });
        const cases = [
          // [call, body]
          [() => sbx.submit("print(1)"), { language: "python", code: "print(1)", wait: false }],
          [() => sbx.submit("ls", { language: "shell", timeoutS: 1 }), { language: "shell", code: "ls", timeout_s: 1, wait: false }],
          [() => sbx.commands.submit("make", { cwd: "p" }), { language: "shell", code: "make", cwd: "p", wait: false }],
        ];
        for (const [call, body] of cases) {
          assert.equal(await /** @type {() => Promise<string>} */ (call)(), "e9");
          assert.deepEqual([d.seen.at(-1)?.path, d.seen.at(-1)?.json()], [`/v1/sessions/${SESSION.id}/exec`, body]);
        }
        await assert.rejects(c.startExec("bad", "x"), ProtocolError);
      },
    ));

  it("gets an execution, and waits for its end", () => {
    let left = 0;
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path.endsWith("/gone")) return errorReply(404, "not_found", "no execution gone in session s1");
        if (s.path.endsWith("/forever")) return { body: { ...EXECUTION, status: "running", stdout: "tick\n" } };
        if (left > 0) {
          left--;
          return { body: { ...EXECUTION, id: "e9", status: "running", stdout: "0\n", result: null, outputs: [] } };
        }
        return { body: { ...EXECUTION, id: "e9", metrics: METRICS, code_sha256: "ab".repeat(32), caller_uid: 1000 } };
      },
      async (d) => {
        const c = new Client({ socket: d.socket });
        left = 1;
        let e = await c.execution("s1", "a/b");
        assert.deepEqual([d.seen.at(-1)?.method, d.seen.at(-1)?.path], ["GET", "/v1/sessions/s1/executions/a%2Fb"]);
        assert.deepEqual([e.status, e.stdout, e.result, e.ok], [STATUS_RUNNING, "0\n", null, false]);
        e = await c.execution("s1", "e9");
        assert.deepEqual([e.status, e.result, e.callerUid, e.codeSha256], ["ok", "42", 1000, "ab".repeat(32)]);
        assert.deepEqual(e.metrics, new ExecMetrics({ wallMs: 3.2, cpuMs: 2.9, memoryPeakBytes: 31457280 }));

        // It asks until the execution no longer runs.
        const sbx = await Sandbox.create({ socket: d.socket });
        for (const wait of [() => c.waitExecution("s1", "e9", { pollMs: 10 }), () => sbx.waitExecution("e9", { pollMs: 10 })]) {
          left = 3;
          d.seen.length = 0;
          e = await wait();
          assert.deepEqual([e.status, e.id, d.seen.length], ["ok", "e9", 4]);
          assert.ok(d.seen.every((r) => r.method === "GET" && r.path.endsWith("/executions/e9")));
        }
        assert.equal((await sbx.execution("e9")).status, "ok");

        // A bounded wait gives up with RequestTimeout; the execution runs on.
        const t0 = Date.now();
        await assert.rejects(sbx.waitExecution("forever", { timeoutMs: 200, pollMs: 50 }), (err) => {
          assert.ok(err instanceof RequestTimeout);
          assert.match(err.message, /forever/);
          return true;
        });
        assert.ok(Date.now() - t0 < 2000);
        // An aborted wait rejects with the signal's reason, between two asks too.
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        await assert.rejects(sbx.waitExecution("forever", { pollMs: 5000, signal: ac.signal }), { name: "AbortError" });
        await assert.rejects(sbx.waitExecution("gone"), NotFound);
        await assert.rejects(c.waitExecution("s1", "e9", { pollMs: 0 }), RangeError);
      },
    );
  });

  it("lists executions as summaries", () =>
    withFake(
      (s) => (s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { body: { executions: [...SUMMARIES, "junk", null] } }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        for (const call of [() => sbx.client.executions(sbx.id, { limit: 3 }), () => sbx.executions({ limit: 3 })]) {
          const list = await call();
          assert.equal(d.seen.at(-1)?.query.get("limit"), "3");
          assert.equal(list.length, 3);
          const [running, failed, old] = list;
          assert.ok(running instanceof ExecutionSummary);
          assert.deepEqual(
            [running.id, running.status, running.exitCode, running.callerUid, running.ok],
            ["e3", "running", null, 1000, false],
          );
          assert.deepEqual(running.metrics, new ExecMetrics({ wallMs: 3.2, cpuMs: 2.9, memoryPeakBytes: 31457280 }));
          // uid 0 (root) is a uid, not an absent one.
          assert.deepEqual(
            [failed.exitCode, failed.callerUid, failed.truncated, failed.codeSha256, failed.durationMs],
            [1, 0, true, "cd".repeat(32), 3.2],
          );
          assert.deepEqual([old.exitCode, old.ok, old.metrics, old.callerUid, old.codeSha256], [0, true, null, null, ""]);
          assert.equal(old.startedAt?.toISOString(), "2026-01-02T03:04:05.000Z");
          // Summaries hold no output.
          assert.equal("stdout" in running, false);
        }
      },
    ));

  it("drains the node, and undoes it", () =>
    withFake(
      (s) => (s.method === "GET" ? { body: { node_id: "n1", state: "ready" } } : { body: { node_id: "n1", state: s.json().drain ? "draining" : "ready" } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        assert.equal((await c.node()).state, "ready");
        for (const [call, on, state] of /** @type {const} */ ([
          [() => c.drain(), true, "draining"],
          [() => c.drain(false), false, "ready"],
          [() => c.drain(true, { requestTimeoutMs: 1000 }), true, "draining"],
        ])) {
          const n = await call();
          const raw = d.seen.at(-1);
          assert.deepEqual([raw?.method, raw?.path, raw?.json(), n.state, n.node_id], ["POST", "/v1/node/drain", { drain: on }, state, "n1"]);
        }
        const d2 = await fakeDaemon(() => errorReply(403, "permission_denied", "only root may drain the node"));
        try {
          await assert.rejects(new Client({ socket: d2.socket }).drain(), PermissionDenied);
        } finally {
          await d2.close();
        }
      },
    ));

  it("refuses a field the contract does not have", async () => {
    await assert.rejects(Sandbox.create({ memroyMb: 1, socket: "/nonexistent" }), TypeError);
    await assert.rejects(new Client({ socket: "/nonexistent" }).run("1", { memroyMb: 1 }), TypeError);
    await assert.rejects(new Client({ socket: "/nonexistent" }).listSessions({ label: "agent" }), TypeError);
  });

  it("takes the socket from SANDBOXD_SOCKET", () =>
    withFake(
      () => ({ body: { status: "ok" } }),
      async (d) => {
        const old = process.env.SANDBOXD_SOCKET;
        process.env.SANDBOXD_SOCKET = d.socket;
        try {
          const c = new Client();
          assert.equal(c.socket, d.socket);
          assert.equal(await c.health(), "ok");
        } finally {
          if (old === undefined) delete process.env.SANDBOXD_SOCKET;
          else process.env.SANDBOXD_SOCKET = old;
        }
        delete process.env.SANDBOXD_SOCKET;
        try {
          assert.equal(new Client().socket, "/run/sandboxd/sandboxd.sock");
        } finally {
          if (old !== undefined) process.env.SANDBOXD_SOCKET = old;
        }
      },
    ));

  it("escapes paths and sends queries", () =>
    withFake(
      () => ({ body: { sessions: [SESSION], executions: [EXECUTION] } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const cases = [
          // [call, method, raw path, query]
          [() => c.getSession("a/b?c"), "GET", "/v1/sessions/a%2Fb%3Fc", []],
          [() => c.listSessions({ label: "agent=a1", labels: { team: "x y" } }), "GET", "/v1/sessions", ["agent=a1", "team=x y"]],
          [() => c.listSessions({ label: ["a=1", "b=2"] }), "GET", "/v1/sessions", ["a=1", "b=2"]],
          [() => Sandbox.list({ labels: { a: "1" }, socket: d.socket }), "GET", "/v1/sessions", ["a=1"]],
          [() => c.executions("s1", { limit: 5 }), "GET", "/v1/sessions/s1/executions", []],
          [() => c.executions("s1"), "GET", "/v1/sessions/s1/executions", []],
          [() => c.stopSession("s1"), "POST", "/v1/sessions/s1/stop", []],
          [() => c.startSession("s1"), "POST", "/v1/sessions/s1/start", []],
          [() => c.restartSession("s1"), "POST", "/v1/sessions/s1/restart", []],
          [() => c.pauseSession("s1"), "POST", "/v1/sessions/s1/pause", []],
          [() => c.resumeSession("s1"), "POST", "/v1/sessions/s1/resume", []],
          [() => c.hibernateSession("s1"), "POST", "/v1/sessions/s1/hibernate", []],
          [() => c.interrupt("s1"), "POST", "/v1/sessions/s1/interrupt", []],
          [() => c.stats("s1"), "GET", "/v1/sessions/s1/stats", []],
          [() => c.deleteSession("s1"), "DELETE", "/v1/sessions/s1", []],
        ];
        for (const [call, method, p, labels] of cases) {
          d.seen.length = 0;
          await /** @type {() => Promise<unknown>} */ (call)();
          assert.equal(d.seen.length, 1);
          assert.deepEqual([d.seen[0].method, d.seen[0].path, d.seen[0].query.getAll("label")], [method, p, labels]);
        }
        d.seen.length = 0;
        const hist = await c.executions("s1", { limit: 5 });
        assert.equal(d.seen[0].query.get("limit"), "5");
        assert.deepEqual(hist.map((e) => e.id), ["e1"]);
        const list = await c.listSessions();
        assert.deepEqual(list.map((s) => s.id), [SESSION.id]);
      },
    ));

  it("sends an exec's body and reads the Execution", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        const e = await new Client({ socket: d.socket }).exec("s1", "x", {
          language: "shell",
          timeoutS: 2.5,
          env: { A: "1" },
          cwd: "sub",
        });
        assert.deepEqual(d.seen[0].json(), { language: "shell", code: "x", timeout_s: 2.5, env: { A: "1" }, cwd: "sub" });
        assert.equal(d.seen[0].headers.accept, undefined);
        assert.deepEqual([e.result, e.status, e.ok, e.text, e.exitCode, e.sessionId], ["42", "ok", true, "42", 0, SESSION.id]);
        assert.deepEqual([...(e.outputs[0].png || [])], [0x89, 0x50, 0x4e, 0x47]);
        assert.equal(e.outputs[0].html, null);
        assert.equal(e.startedAt?.toISOString(), "2026-01-02T03:04:05.000Z");
      },
    ));

  it("sends a one-shot run's body", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        await run("print(1)", {
          files: { "a.txt": "hi", "b.bin": Buffer.from([0, 255]) },
          timeoutS: 1.5,
          memoryMb: 128,
          mcpServers: ["github"],
          socket: d.socket,
        });
        assert.equal(d.seen[0].path, "/v1/run");
        assert.deepEqual(d.seen[0].json(), {
          memory_mb: 128,
          mcp_servers: ["github"],
          timeout_s: 2,
          language: "python",
          code: "print(1)",
          files: [
            { path: "a.txt", content_base64: "aGk=" },
            { path: "b.bin", content_base64: "AP8=" },
          ],
        });
      },
    ));

  it("sends an install's body, and a network change", () =>
    withFake(
      (s) => (s.path.endsWith("/packages") ? { body: EXECUTION } : { status: s.method === "POST" ? 201 : 200, body: SESSION }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await sbx.install("numpy==1.26.4", { indexUrl: "http://index/simple" });
        assert.deepEqual([d.seen[1].path, d.seen[1].json()], [
          `/v1/sessions/${SESSION.id}/packages`,
          { packages: ["numpy==1.26.4"], index_url: "http://index/simple" },
        ]);
        await sbx.install(["a", "b"]);
        assert.deepEqual(d.seen[2].json(), { packages: ["a", "b"] });
        await sbx.setNetwork("allowlist", { allow: "pypi.org", egressKbps: 100 });
        assert.deepEqual([d.seen[3].method, d.seen[3].json()], ["PATCH", { network: "allowlist", allow: ["pypi.org"], egress_kbps: 100 }]);
      },
    ));
});

describe("streams", () => {
  it("calls back in order, and awaits a callback's promise", () => {
    const lines = [
      { type: "stdout", data: "0\n" },
      { type: "stderr", data: "warn\n" },
      { type: "progress", data: "a newer daemon's" },
      // A line split across two chunks, and a character split across them.
      '{"type":"stdout","da',
      'ta":"1 \u00e9\\n"}\n',
      Buffer.from('{"type":"stdout","data":"\u00e9'),
      '"}\n',
      { type: "done", execution: EXECUTION },
    ];
    return withFake(
      () => ({ lines }),
      async (d) => {
        /** @type {string[][]} */
        const got = [];
        const e = await new Client({ socket: d.socket }).exec("s1", "x", {
          onStdout: (s) => got.push(["out", s]),
          onStderr: async (s) => {
            await new Promise((r) => setTimeout(r, 30));
            got.push(["err", s]);
          },
        });
        assert.deepEqual(got, [
          ["out", "0\n"],
          ["err", "warn\n"],
          ["out", "1 \u00e9\n"],
          ["out", "\u00e9"],
        ]);
        assert.equal(e.result, "42");
        assert.equal(d.seen[0].headers.accept, "application/x-ndjson");
      },
    );
  });

  it("throws an error line's class", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }, { type: "error", error: { code: "conflict", message: "stopped: start it first" } }] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), (e) => {
          assert.ok(e instanceof Conflict);
          assert.deepEqual([e.message, e.status, e.requestId], ["stopped: start it first", null, "req-1"]);
          return true;
        });
      },
    ));

  it("calls a stream that ends early a ProtocolError", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("calls a stream cut short a ProtocolError", () =>
    withFake(
      () => ({ lines: [{ type: "stdout", data: "a" }], cut: true }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("calls a bad line a ProtocolError", () =>
    withFake(
      () => ({ lines: ["not json\n"] }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} }), ProtocolError);
      },
    ));

  it("takes an Execution whole from a daemon that does not stream", () =>
    withFake(
      () => ({ body: EXECUTION }),
      async (d) => {
        const e = await new Client({ socket: d.socket }).exec("s1", "x", { onStdout: () => {} });
        assert.equal(e.result, "42");
      },
    ));

  it("times out when the daemon sends nothing between lines, not over the whole stream", () =>
    withFake(
      () => ({ lines: [1, 2, 3, 4].map((i) => ({ type: "stdout", data: String(i) })).concat([{ type: "done", execution: EXECUTION }]), lineDelayMs: 250 }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        /** @type {string[]} */
        const got = [];
        // 1.25 s in all, never 250 ms without a line: a 600 ms timeout holds.
        const e = await c.exec("s1", "x", { onStdout: (s) => got.push(s), requestTimeoutMs: 600 });
        assert.deepEqual([got, e.result], [["1", "2", "3", "4"], "42"]);
        await assert.rejects(c.exec("s1", "x", { onStdout: () => {}, requestTimeoutMs: 100 }), RequestTimeout);
      },
    ));
});

describe("sandbox", () => {
  it("bounds an execution by its timeout and a grace, else the session's", () =>
    withFake(
      (s) => (s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { body: EXECUTION, delayMs: 300 }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket, requestTimeoutMs: 100 });
        // The client's 100 ms is for other calls: an execution waits for
        // the session's timeout_s (30) and a grace.
        assert.equal((await sbx.runCode("x")).result, "42");
        await assert.rejects(sbx.runCode("x", { requestTimeoutMs: 100 }), RequestTimeout);
        assert.equal((await sbx.commands.run("ls", { timeoutS: 1 })).result, "42");
        assert.deepEqual(d.seen.at(-1)?.json(), { language: "shell", code: "ls", timeout_s: 1 });
      },
    ));

  it("kill is false for a session gone, and await using deletes", () => {
    let deletes = 0;
    return withFake(
      (s) => {
        if (s.method === "DELETE") return ++deletes === 1 ? { status: 204 } : errorReply(404, "not_found", "no such session");
        return { status: 201, body: SESSION };
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await sbx[Symbol.asyncDispose]();
        assert.equal(deletes, 1);
        assert.equal(await sbx.kill(), false);
        assert.equal(await sbx.delete(), false);
        assert.equal(String(sbx), `Sandbox(id=${SESSION.id}, status=running, socket=${d.socket})`);
      },
    );
  });

  it("connects to a session and shares a client", () =>
    withFake(
      () => ({ body: SESSION }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const sbx = await Sandbox.connect(SESSION.id, { client: c });
        assert.equal(sbx.client, c);
        assert.equal(d.seen[0].path, `/v1/sessions/${SESSION.id}`);
        assert.equal(await sbx.isRunning(), true);
      },
    ));
});

describe("files", () => {
  it("writes, reads, lists, removes", () => {
    /** @type {Map<string, Buffer>} */
    const store = new Map();
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        const p = s.query.get("path") || "";
        if (s.method === "PUT") {
          store.set(p, s.body);
          return { status: 201, body: { path: "/workspace/" + p, size: s.body.length } };
        }
        if (s.method === "DELETE") {
          store.delete(p);
          return { status: 204 };
        }
        if (p === "." || p === "/workspace") {
          return {
            body: {
              entries: [...store.keys()].map((name) => ({
                name,
                type: "file",
                size: store.get(name)?.length,
                mode: "-rw-r--r--",
                modified_at: "2026-01-02T03:04:05Z",
              })),
            },
          };
        }
        const b = store.get(p);
        return b ? { raw: b } : errorReply(404, "not_found", `no file ${p}`);
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const data = Buffer.alloc(768, 0).map((_, i) => i % 256);
        const w = await sbx.files.write("data.bin", data);
        assert.deepEqual([w.path, w.size], ["/workspace/data.bin", 768]);
        assert.equal(d.seen.at(-1)?.headers["content-type"], "application/octet-stream");
        assert.equal(d.seen.at(-1)?.headers["content-length"], "768");
        assert.deepEqual(await sbx.files.read("data.bin"), data);

        await sbx.files.write("t.txt", "h\u00e9llo");
        assert.equal(await sbx.files.read("t.txt", "utf8"), "h\u00e9llo");
        assert.equal(await sbx.files.read("t.txt", { encoding: "utf8" }), "h\u00e9llo");
        assert.equal(await sbx.files.readText("t.txt"), "h\u00e9llo");
        await sbx.files.write("u8", new Uint8Array([1, 2, 3]).subarray(1));
        assert.deepEqual([...store.get("u8") || []], [2, 3]);

        // A stream goes chunked.
        await sbx.files.write("s.txt", Readable.from([Buffer.from("stre"), Buffer.from("amed")]));
        assert.equal(store.get("s.txt")?.toString(), "streamed");
        assert.equal(d.seen.at(-1)?.headers["transfer-encoding"], "chunked");
        async function* gen() {
          yield new Uint8Array([104, 105]);
        }
        await sbx.files.write("g.txt", gen());
        assert.equal(store.get("g.txt")?.toString(), "hi");

        const entries = await sbx.files.list();
        const dataInfo = entries.find((e) => e.name === "data.bin");
        assert.deepEqual([dataInfo?.type, dataInfo?.size, dataInfo?.isDir], ["file", 768, false]);
        assert.equal(dataInfo?.modifiedAt?.getUTCFullYear(), 2026);
        await assert.rejects(sbx.files.read("."), (e) => /** @type {any} */ (e).code === "EISDIR");
        await assert.rejects(sbx.files.list("data.bin"), (e) => /** @type {any} */ (e).code === "ENOTDIR");
        assert.equal(await sbx.files.exists("data.bin"), true);
        assert.equal(await sbx.files.exists("other.bin"), false);
        assert.equal(await sbx.files.exists("/workspace"), true);
        await sbx.files.remove("data.bin");
        assert.equal(await sbx.files.exists("data.bin"), false);
        await assert.rejects(sbx.files.read("data.bin"), NotFound);
      },
    );
  });
});

describe("uploads", () => {
  it("tells the daemon's answer to an upload it refused before reading it", async () => {
    const d = await fakeDaemon(
      () => ({ status: 500 }),
      (method) => (method === "PUT" ? errorReply(413, "payload_too_large", "the upload is over max_upload_bytes") : undefined),
    );
    try {
      const c = new Client({ socket: d.socket });
      let closed = false;
      // 64 MiB, more than the socket buffers hold: the daemon answers and
      // closes while it is still being sent.
      const chunk = Buffer.alloc(1 << 20, 1);
      const body = Readable.from((function* () {
        for (let i = 0; i < 64; i++) yield chunk;
      })());
      body.on("close", () => (closed = true));
      await assert.rejects(c.putFile("s1", "big.bin", body), (e) => {
        assert.ok(e instanceof PayloadTooLarge, String(e));
        assert.equal(e.message, "the upload is over max_upload_bytes");
        return true;
      });
      await new Promise((r) => setImmediate(r));
      assert.ok(closed, "the upload's source was left open");
      await assert.rejects(c.putFile("s1", "big.bin", Buffer.alloc(64 << 20)), PayloadTooLarge);
    } finally {
      await d.close();
    }
  });
});

const PROCESS = { pid: 42, ppid: 1, command: "sleep 300", started_at: "2026-01-02T03:04:05Z", cpu_seconds: 0.25, rss_bytes: 4096, detached: true };

describe("processes", () => {
  it("starts, lists and signals", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.method === "POST") return { status: 201, body: { pid: 42, command: "sleep 300", started_at: "2026-01-02T03:04:05Z", detached: true } };
        if (s.method === "GET") return { body: { processes: [{ pid: 1, ppid: 0, command: "agent", cpu_seconds: 1, rss_bytes: 1 }, PROCESS, "junk"] } };
        if (s.path.endsWith("/processes/7")) return errorReply(404, "not_found", "no process 7 in session s");
        return { status: 204 };
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const p = await sbx.processes.start(["sleep", "300"], { env: { A: "1" }, cwd: "sub" });
        assert.deepEqual([d.seen.at(-1)?.method, d.seen.at(-1)?.path, d.seen.at(-1)?.json()], [
          "POST",
          `/v1/sessions/${sbx.id}/processes`,
          { argv: ["sleep", "300"], env: { A: "1" }, cwd: "sub" },
        ]);
        assert.ok(p instanceof sandboxd.Process);
        assert.deepEqual([p.pid, p.command, p.detached, p.exitCode, p.ppid, p.startedAt?.toISOString()], [42, "sleep 300", true, null, 0, "2026-01-02T03:04:05.000Z"]);
        // A string is a command line for /bin/sh; the client takes argv alone.
        await sbx.processes.start("echo hi && sleep 1");
        assert.deepEqual(d.seen.at(-1)?.json(), { argv: ["/bin/sh", "-c", "echo hi && sleep 1"] });
        await assert.rejects(sbx.client.startProcess(sbx.id, /** @type {any} */ ("sleep 300")), TypeError);

        const ps = await sbx.processes.list();
        assert.deepEqual(ps.map((x) => [x.pid, x.detached]), [[1, false], [42, true]]);
        assert.deepEqual([ps[1].cpuSeconds, ps[1].rssBytes, ps[0].startedAt], [0.25, 4096, null]);

        assert.equal(await sbx.processes.kill(42), true);
        const raw = d.seen.at(-1);
        assert.deepEqual([raw?.method, raw?.path, raw?.query.get("signal")], ["DELETE", `/v1/sessions/${sbx.id}/processes/42`, "TERM"]);
        assert.equal(await sbx.processes.kill(42, "KILL"), true);
        assert.equal(d.seen.at(-1)?.query.get("signal"), "KILL");
        assert.equal(await sbx.processes.kill(42, 9), true);
        assert.equal(d.seen.at(-1)?.query.get("signal"), "9");
        await sbx.client.signalProcess(sbx.id, 42);
        assert.equal(d.seen.at(-1)?.query.has("signal"), false);
        assert.equal(await sbx.processes.kill(7), false);
        await assert.rejects(sbx.client.signalProcess(sbx.id, 7), NotFound);
      },
    ));

  it("reads logs from an offset, and follows them to the end", () => {
    // The process writes "one\n", then "two\n", then ends with 3; the fake
    // serves the log from the offset asked, as the daemon does.
    const log = { data: Buffer.alloc(0), asks: 0 };
    const script = [["one\n", true, null], ["", true, null], ["two\n", true, null], ["", false, 3]];
    const reset = () => {
      log.data = Buffer.alloc(0);
      log.asks = 0;
    };
    return withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path.endsWith("/processes/9/logs")) return errorReply(404, "not_found", "no output of process 9");
        if (s.path.endsWith("/processes/8/logs")) return { raw: "x" };
        const [more, running, code] = script[Math.min(log.asks++, script.length - 1)];
        log.data = Buffer.concat([log.data, Buffer.from(String(more))]);
        /** @type {Record<string, string>} */
        const headers = { "Sandboxd-Process-Running": running ? "true" : "false" };
        if (code !== null) headers["Sandboxd-Process-Exit-Code"] = String(code);
        return { raw: log.data.subarray(Number(s.query.get("offset") || 0)), headers };
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        /** @type {string[]} */
        const got = [];
        const it = sbx.processes.follow(5, { pollMs: 10 });
        let next;
        while (!(next = await it.next()).done) got.push(next.value.toString());
        assert.deepEqual([got, next.value], [["one\n", "two\n"], 3]);
        const offsets = d.seen.filter((r) => r.path.endsWith("/logs")).map((r) => r.query.get("offset") ?? "0");
        assert.deepEqual(offsets, ["0", "4", "4", "8"]);

        const lg = await sbx.processes.logs(5, { offset: 4 });
        assert.ok(lg instanceof sandboxd.ProcessLogs);
        assert.deepEqual([lg.data.toString(), lg.running, lg.exitCode, lg.offset, lg.nextOffset, lg.text], ["two\n", false, 3, 4, 8, "two\n"]);
        reset();
        assert.equal(await sbx.processes.wait(5, { pollMs: 10 }), 3);
        reset();
        const chunks = [];
        for await (const c of sbx.processes.follow(5, { pollMs: 10 })) chunks.push(String(c));
        assert.deepEqual(chunks, ["one\n", "two\n"]);

        await assert.rejects(sbx.processes.logs(9), NotFound);
        await assert.rejects(sbx.processes.logs(8), ProtocolError);
        await assert.rejects(sbx.processes.follow(5, { pollMs: 0 }).next(), RangeError);
      },
    );
  });

  it("bounds a follow, and aborts it", () =>
    withFake(
      (s) => (s.path === "/v1/sessions" ? { status: 201, body: SESSION } : { raw: "", headers: { "Sandboxd-Process-Running": "true" } }),
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const t0 = Date.now();
        await assert.rejects(sbx.processes.wait(5, { timeoutMs: 200, pollMs: 50 }), RequestTimeout);
        assert.ok(Date.now() - t0 < 2000);
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 100);
        await assert.rejects(sbx.processes.wait(5, { pollMs: 50, signal: ac.signal }), (e) => /** @type {any} */ (e).name === "AbortError");
      },
    ));
});

// A tar made by Python's tarfile (PAX format): res/, res/a.txt "alpha"
// (mode 4755), res/<120 d>/deep.txt "deep", res/link -> a.txt, res/abs ->
// /workspace/res/a.txt, res/hard (a hard link to res/a.txt); gzipped and
// base64 here. Another writer than this SDK's, for its reader.
const PY_TAR = Buffer.from(
  "H4sIAAAAAAACA+3YzUrEMBQF4Kx9ij5B83eTrASXLn2FaAOVGbSkHezjm1QQpkhxcztiz7dJ6aaLw8nlNqdRCmaqCM4tZ7E+l2dN" +
    "zlAIipb33pejcWIHl3GKuXxSHFMu+cd2mife/Gk7f7fKPzhvRaOQP7t4Hvoo4Kha2cqHpzg/ptilzHf//9D77/4bHa5mgdLllRPN" +
    "jP6z02SbIU79fR0E3Y3ILqWhDqE7FPIG85873lpqT7Qx/+l6/lttA2H+76E2Dy04dv/Pr28n9v0vhN/vf1qR9aIx3IsJ+v+1/z2P" +
    "4m/lb7Uu97+RH+/5NA7xJUm2PRX5yz7mjjv/7fm/zl+b+v9H7/Fz4uD5AwAAAAAAAAAAwP/1CdLv4BEAKAAA",
  "base64",
);

describe("folders", () => {
  /** @param {string} [prefix] */
  const tmp = (prefix = "sandboxd-js-dir-") => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

  /**
   * A tar stream of entries written with this SDK's headers (for names a
   * tar writer would never make).
   * @param {Array<[string, string, string?]>} entries [name, type, content or link]
   */
  function tarOf(entries) {
    const parts = [];
    for (const [name, type, v = ""] of entries) {
      const data = type === "0" ? Buffer.from(v) : Buffer.alloc(0);
      parts.push(tarHeader({ name, type, mode: 0o644, mtime: 0, size: data.length, linkname: type === "2" ? v : "" }), data, Buffer.alloc((512 - (data.length % 512)) % 512));
    }
    parts.push(Buffer.alloc(1024));
    return Buffer.concat(parts);
  }

  /** @param {Buffer} tar */
  const serving = (tar) => (/** @type {import("./fake.js").Seen} */ s) => {
    if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
    if (s.method === "PUT") return { status: 201, body: { path: "/workspace/dest", size: 11, files: 2 } };
    return { raw: tar, headers: { "Content-Type": "application/x-tar" } };
  };

  it("writes headers tar readers take", () => {
    const h = tarHeader({ name: "proj/a.txt", type: "0", mode: 0o4755, mtime: 1700000000, size: 5 });
    assert.equal(h.length, 512);
    assert.equal(h.subarray(0, 10).toString(), "proj/a.txt");
    assert.equal(h.subarray(100, 108).toString(), "0004755\0");
    assert.equal(h.subarray(124, 136).toString(), "00000000005\0");
    assert.equal(h.subarray(257, 265).toString("latin1"), "ustar\u000000");
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
    assert.equal(h.subarray(148, 156).toString("latin1"), sum.toString(8).padStart(6, "0") + "\0 ");
    assert.equal(String.fromCharCode(h[156]), "0");
    // A name longer than ustar holds goes in a PAX record first.
    const long = tarHeader({ name: "x".repeat(150) + "/é", type: "2", mode: 0o777, mtime: 0, size: 0, linkname: "y".repeat(120) });
    assert.equal(long.length, 512 * 3);
    assert.equal(String.fromCharCode(long[156]), "x");
    assert.match(long.subarray(512, 1024).toString(), new RegExp(`^\\d+ path=${"x".repeat(150)}/é\n\\d+ linkpath=${"y".repeat(120)}\n`));
  });

  it("reads another writer's tar: PAX names, links, modes, and skips hard links", async () => {
    const dir = tmp();
    try {
      const out = path.join(dir, "out");
      const tar = zlib.gunzipSync(PY_TAR);
      const long = "d".repeat(120);
      const written = await extractTar([tar], out);
      assert.deepEqual(
        written,
        ["res", "res/a.txt", `res/${long}/deep.txt`, "res/link", "res/abs"].map((p) => path.join(out, p)),
      );
      assert.equal(fs.readFileSync(path.join(out, "res", "a.txt"), "utf8"), "alpha");
      assert.equal(fs.readFileSync(path.join(out, "res", long, "deep.txt"), "utf8"), "deep");
      assert.equal(fs.readlinkSync(path.join(out, "res", "link")), "a.txt");
      assert.equal(fs.readlinkSync(path.join(out, "res", "abs")), "/workspace/res/a.txt");
      assert.equal(fs.existsSync(path.join(out, "res", "hard")), false);
      // No setuid bit; the owner may read and write.
      assert.equal(fs.statSync(path.join(out, "res", "a.txt")).mode & 0o7777, 0o755);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uploads a folder as tar, streamed", async () => {
    const dir = tmp();
    try {
      const src = path.join(dir, "proj");
      fs.mkdirSync(path.join(src, "sub", "deeper"), { recursive: true });
      fs.writeFileSync(path.join(src, "a.txt"), "hello");
      const blob = Buffer.alloc(256 * 5).map((_, i) => i % 256);
      fs.writeFileSync(path.join(src, "sub", "deeper", "b.bin"), blob);
      fs.chmodSync(path.join(src, "sub", "deeper", "b.bin"), 0o755);
      fs.symlinkSync("../a.txt", path.join(src, "sub", "rel"));
      fs.symlinkSync("/workspace/elsewhere", path.join(src, "abs"));
      const long = "n".repeat(150);
      fs.writeFileSync(path.join(src, long), "long");
      await withFake(serving(Buffer.alloc(0)), async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const w = await sbx.files.uploadDir(src, "dest");
        assert.deepEqual([w.path, w.size, w.files], ["/workspace/dest", 11, 2]);
        const raw = d.seen.at(-1);
        assert.deepEqual([raw?.method, raw?.query.get("path"), raw?.query.get("format")], ["PUT", "dest", "tar"]);
        assert.deepEqual([raw?.headers["content-type"], raw?.headers["transfer-encoding"]], ["application/x-tar", "chunked"]);
        /** @type {Record<string, {type: string, linkname: string, mode: number, data: string}>} */
        const got = {};
        for await (const e of readTar([raw?.body ?? Buffer.alloc(0)])) {
          const chunks = [];
          for await (const c of e.data()) chunks.push(c);
          got[e.name] = { type: e.type, linkname: e.linkname, mode: e.mode, data: Buffer.concat(chunks).toString("latin1") };
        }
        assert.deepEqual(Object.keys(got).sort(), ["proj/", "proj/a.txt", "proj/abs", `proj/${long}`, "proj/sub/", "proj/sub/deeper/", "proj/sub/deeper/b.bin", "proj/sub/rel"].sort());
        assert.equal(got["proj/a.txt"].data, "hello");
        assert.equal(got["proj/sub/deeper/b.bin"].data, blob.toString("latin1"));
        assert.equal(got["proj/sub/deeper/b.bin"].mode, 0o755);
        assert.deepEqual([got["proj/sub/rel"].type, got["proj/sub/rel"].linkname, got["proj/abs"].linkname], ["2", "../a.txt", "/workspace/elsewhere"]);
        assert.equal(got[`proj/${long}`].data, "long");
        assert.ok(raw?.body.subarray(-1024).every((x) => x === 0));

        // A local failure is its own error, before anything is sent.
        const before = d.seen.length;
        await assert.rejects(sbx.files.uploadDir(path.join(dir, "none")), (e) => /** @type {any} */ (e).code === "ENOENT");
        await assert.rejects(sbx.files.uploadDir(path.join(src, "a.txt")), (e) => /** @type {any} */ (e).code === "ENOTDIR");
        assert.equal(d.seen.length, before);
        if (process.geteuid && process.geteuid() !== 0) {
          fs.chmodSync(path.join(src, "sub", "deeper", "b.bin"), 0);
          await assert.rejects(sbx.files.uploadDir(src), (e) => /** @type {any} */ (e).code === "EACCES");
        }
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("downloads a folder, and again over it", async () => {
    const dir = tmp();
    try {
      const tar = tarOf([["res/", "5"], ["res/a.txt", "0", "alpha"], ["res/sub/", "5"], ["res/sub/b.txt", "0", "beta"], ["res/sub/up", "2", "../a.txt"]]);
      await withFake(serving(tar), async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const out = path.join(dir, "out");
        const written = await sbx.files.downloadDir("res", out);
        assert.deepEqual([d.seen.at(-1)?.query.get("path"), d.seen.at(-1)?.query.get("format")], ["res", "tar"]);
        assert.deepEqual(written, ["res", "res/a.txt", "res/sub", "res/sub/b.txt", "res/sub/up"].map((p) => path.join(out, p)));
        assert.equal(fs.readFileSync(path.join(out, "res", "sub", "up"), "utf8"), "alpha");
        assert.deepEqual(await sbx.files.downloadDir("res", out), written);
        // The raw stream.
        const stream = await sbx.client.getTar(sbx.id, "res");
        const chunks = [];
        for await (const c of stream) chunks.push(c);
        assert.deepEqual(Buffer.concat(chunks), tar);
        const w = await sbx.client.putTar(sbx.id, "into", tar);
        assert.deepEqual([d.seen.at(-1)?.body, w.files], [tar, 2]);
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses what would be written outside the folder", async () => {
    const dir = tmp();
    const outside = path.join(dir, "outside");
    fs.mkdirSync(outside);
    const cases = [
      // [case, entries, what it rejects with]
      ["absolute", [["/tmp/sandboxd-js-evil.txt", "0", "x"]], ProtocolError],
      ["dotdot", [["res/", "5"], ["res/../../evil.txt", "0", "x"]], ProtocolError],
      ["through a link", [["res/", "5"], ["res/out", "2", outside], ["res/out/evil.txt", "0", "x"]], "ENOTDIR"],
      ["through a relative link", [["res/", "5"], ["res/up", "2", "../.."], ["res/up/evil.txt", "0", "x"]], "ENOTDIR"],
    ];
    try {
      for (const [name, entries, want] of cases) {
        await withFake(serving(tarOf(/** @type {any} */ (entries))), async (d) => {
          const sbx = await Sandbox.create({ socket: d.socket });
          await assert.rejects(sbx.files.downloadDir("res", path.join(dir, "o", String(name))), (e) =>
            typeof want === "string" ? /** @type {any} */ (e).code === want : e instanceof /** @type {any} */ (want),
          );
        });
        assert.deepEqual(fs.readdirSync(outside), [], String(name));
      }
      assert.equal(fs.existsSync("/tmp/sandboxd-js-evil.txt"), false);

      // A file whose name is a symlink already there replaces the link: its
      // target is untouched.
      const victim = path.join(outside, "victim.txt");
      fs.writeFileSync(victim, "keep");
      const out = path.join(dir, "replace");
      fs.mkdirSync(path.join(out, "res"), { recursive: true });
      fs.symlinkSync(victim, path.join(out, "res", "a.txt"));
      await withFake(serving(tarOf([["res/", "5"], ["res/a.txt", "0", "new"]])), async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await sbx.files.downloadDir("res", out);
      });
      assert.equal(fs.lstatSync(path.join(out, "res", "a.txt")).isSymbolicLink(), false);
      assert.equal(fs.readFileSync(path.join(out, "res", "a.txt"), "utf8"), "new");
      assert.equal(fs.readFileSync(victim, "utf8"), "keep");

      // A stream cut before its end is told, between entries too.
      const whole = tarOf([["res/", "5"], ["res/a.txt", "0", "alpha"], ["res/b.txt", "0", "beta"]]);
      for (const cut of [512 * 5, 512 * 3, 700, 0]) {
        await withFake(serving(whole.subarray(0, cut)), async (d) => {
          const sbx = await Sandbox.create({ socket: d.socket });
          await assert.rejects(sbx.files.downloadDir("res", path.join(dir, "cut")), ProtocolError, `cut at ${cut}`);
        });
      }
      await withFake(serving(Buffer.from("not a tar stream at all".repeat(40))), async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        await assert.rejects(sbx.files.downloadDir("res", path.join(dir, "junk")), ProtocolError);
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("packs a folder that is there, and only that", async () => {
    await assert.rejects(packDir("/nonexistent/sandboxd-js"), (e) => /** @type {any} */ (e).code === "ENOENT");
  });
});

/**
 * A daemon's attach end on a Unix socket: it takes one connection, reads
 * the request, answers `head`, then runs serve on the socket.
 * @param {Buffer | string} head
 * @param {(sock: net.Socket, frames: AsyncGenerator<{type: number, payload: Buffer}>) => Promise<void>} [serve]
 */
async function fakeAttach(head, serve) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-attach-"));
  const socket = path.join(dir, "s.sock");
  /** @type {{line: string, headers: Record<string, string>, body: any}} */
  const request = { line: "", headers: {}, body: null };
  /** @type {Set<net.Socket>} */
  const conns = new Set();
  /** @type {unknown} */
  let error = null;
  const server = net.createServer(async (sock) => {
    conns.add(sock);
    sock.on("close", () => conns.delete(sock));
    sock.on("error", () => {});
    /** @type {Buffer[]} */
    const pending = [];
    /** @type {(() => void) | null} */
    let wake = null;
    let ended = false;
    sock.on("data", (b) => {
      pending.push(b);
      if (wake) wake();
    });
    sock.on("end", () => {
      ended = true;
      if (wake) wake();
    });
    let buf = Buffer.alloc(0);
    const more = async () => {
      while (!pending.length && !ended) await new Promise((r) => (wake = () => r(undefined)));
      if (!pending.length) return false;
      buf = Buffer.concat([buf, ...pending.splice(0)]);
      return true;
    };
    try {
      while (buf.indexOf("\r\n\r\n") < 0) if (!(await more())) return;
      const end = buf.indexOf("\r\n\r\n");
      const lines = buf.subarray(0, end).toString().split("\r\n");
      buf = buf.subarray(end + 4);
      request.line = lines[0];
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        request.headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const n = Number(request.headers["content-length"]);
      while (buf.length < n) if (!(await more())) return;
      request.body = JSON.parse(buf.subarray(0, n).toString());
      buf = buf.subarray(n);
      sock.write(head);
      if (!serve) {
        sock.end();
        return;
      }
      // The client's frames, from what came with the request on.
      const dec = new FrameDecoder();
      const frames = (async function* () {
        for (;;) {
          const b = buf;
          buf = Buffer.alloc(0);
          yield* dec.push(b);
          if (!(await more())) return;
        }
      })();
      await serve(sock, frames);
    } catch (err) {
      error = err;
    } finally {
      sock.end();
    }
  });
  await new Promise((resolve) => server.listen(socket, () => resolve(undefined)));
  return {
    socket,
    request,
    get error() {
      return error;
    },
    async close() {
      for (const c of conns) c.destroy();
      await new Promise((resolve) => server.close(() => resolve(undefined)));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const UPGRADED = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: sandboxd-attach/1\r\nX-Request-Id: req-9\r\n\r\n";

/** @param {number} type @param {Buffer | string} [payload] */
const frame = (type, payload = "") => encodeFrame(type, Buffer.from(payload));
/** @param {number} code */
const exitFrame = (code) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(code);
  return encodeFrame(3, b);
};

/**
 * Runs fn with a fake attach end, and stops it after.
 * @param {Buffer | string} head
 * @param {Parameters<typeof fakeAttach>[1]} serve
 * @param {(f: Awaited<ReturnType<typeof fakeAttach>>) => Promise<void>} fn
 */
async function withAttach(head, serve, fn) {
  const f = await fakeAttach(head, serve);
  try {
    await fn(f);
  } finally {
    await f.close();
  }
}

describe("attach", () => {
  it("encodes and decodes frames", () => {
    assert.deepEqual(encodeFrame(0, Buffer.from("hi")), Buffer.from([0, 0, 0, 0, 2, 104, 105]));
    assert.deepEqual(encodeFrame(4), Buffer.from([4, 0, 0, 0, 0]));
    assert.deepEqual(resizePayload(24, 80), Buffer.from([0, 24, 0, 80]));
    assert.deepEqual(resizePayload(65535, 0), Buffer.from([255, 255, 0, 0]));
    assert.throws(() => resizePayload(-1, 80), RangeError);
    assert.throws(() => resizePayload(24, 65536), RangeError);
    for (const [bytes, code] of [[[0, 0, 0, 3], 3], [[0, 0, 0, 137], 137], [[255, 255, 255, 255], -1], [[128, 0, 0, 0], -(2 ** 31)]]) {
      assert.equal(parseExit(Buffer.from(/** @type {number[]} */ (bytes))), code);
    }
    assert.throws(() => parseExit(Buffer.from([0, 3])), ProtocolError);
    assert.throws(() => encodeFrame(0, Buffer.alloc((1 << 20) + 1)), RangeError);
    // Frames come in whatever pieces the socket gives.
    const dec = new FrameDecoder();
    const all = Buffer.concat([frame(1, "ab"), frame(2, ""), frame(1, "cde")]);
    const got = [];
    for (let i = 0; i < all.length; i += 3) got.push(...dec.push(all.subarray(i, i + 3)));
    assert.deepEqual(got.map((f) => [f.type, f.payload.toString()]), [[1, "ab"], [2, ""], [1, "cde"]]);
    assert.equal(dec.pending, false);
    assert.throws(() => new FrameDecoder().push(Buffer.from([1, 0, 0x10, 0, 1])), ProtocolError);
  });

  it("sends input, resizes, reads output and the exit status", () => {
    /** @type {Array<[number, string]>} */
    const got = [];
    return withAttach(
      UPGRADED,
      async (sock, frames) => {
        sock.write(Buffer.concat([frame(1, "ready\n"), frame(2, "warn"), frame(9, "?")]));
        for await (const f of frames) {
          got.push([f.type, f.payload.toString("hex")]);
          if (f.type === 4) break;
        }
        const data = Buffer.concat(got.filter(([t]) => t === 0).map(([, p]) => Buffer.from(p, "hex")));
        sock.write(Buffer.concat([frame(1, data), exitFrame(137)]));
      },
      async (f) => {
        const c = new Client({ socket: f.socket });
        const a = await c.attach("s/1", ["cat"], { tty: true, rows: 24, cols: 80, env: { T: "1" }, cwd: "w" });
        assert.ok(a instanceof sandboxd.Attached);
        assert.equal(a.requestId, "req-9");
        await a.resize(50, 132);
        await a.write("abc");
        await a.write(Buffer.from("déf"));
        await a.closeStdin();
        const out = [];
        for await (const chunk of a) out.push([chunk.stream, chunk.data.toString()]);
        assert.deepEqual(out, [["stdout", "ready\n"], ["stderr", "warn"], ["stdout", "abcdéf"]]);
        assert.deepEqual([await a.wait(), a.exitCode, String(a)], [137, 137, "Attached(exited 137)"]);
        await assert.rejects(a.write("late"), /exited with 137/);
        a.close();
        assert.deepEqual(got, [[5, "00320084"], [0, Buffer.from("abc").toString("hex")], [0, Buffer.from("déf").toString("hex")], [4, ""]]);
        assert.equal(f.request.line, "POST /v1/sessions/s%2F1/attach HTTP/1.1");
        assert.deepEqual([f.request.headers.connection, f.request.headers.upgrade, f.request.headers["content-type"]], ["Upgrade", "sandboxd-attach/1", "application/json"]);
        assert.deepEqual(f.request.body, { argv: ["cat"], env: { T: "1" }, cwd: "w", tty: true, rows: 24, cols: 80 });
        assert.equal(f.error, null);
      },
    );
  });

  it("feeds input as it reads output (cat of 3 MiB), and runs a string with /bin/sh", () => {
    const big = Buffer.alloc(3 << 20).map((_, i) => (i * 7) % 251);
    return withAttach(
      UPGRADED,
      async (sock, frames) => {
        for await (const f of frames) {
          if (f.type === 4) break;
          if (!sock.write(frame(1, f.payload))) await new Promise((r) => sock.once("drain", () => r(undefined)));
        }
        sock.write(Buffer.concat([frame(2, "e!"), exitFrame(3)]));
      },
      async (f) => {
        await withFake(
          () => ({ status: 201, body: SESSION }),
          async (d) => {
            const sbx = await Sandbox.create({ socket: d.socket });
            sbx._client = new Client({ socket: f.socket }); // the attach goes to the fake attach end
            const r = await sbx.commands.runWithInput(["cat"], big, { timeoutMs: 30_000 });
            assert.deepEqual([r.exitCode, r.stdout.length, r.stdout.equals(big), r.stderr.toString()], [3, big.length, true, "e!"]);
            assert.deepEqual(f.request.body, { argv: ["cat"] });
          },
        );
      },
    );
  });

  it("runs a shell line, and drops output wait() alone is given", () =>
    withAttach(
      UPGRADED,
      async (sock, frames) => {
        let n = 0;
        for await (const f of frames) {
          if (f.type === 4) break;
          n += f.payload.length;
        }
        sock.write(Buffer.concat([frame(1, `${n}\n`), exitFrame(0)]));
      },
      async (f) => {
        const c = new Client({ socket: f.socket });
        const sbx = new Sandbox(c, Session.fromJSON(SESSION));
        const a = await sbx.attach("wc -c");
        await a.write("héllo");
        await a.closeStdin();
        assert.equal(await a.wait(), 0);
        assert.deepEqual(f.request.body, { argv: ["/bin/sh", "-c", "wc -c"] });
      },
    ));

  it("rejects a refusal as any call's error", async () => {
    const body = JSON.stringify({ error: { code: "not_found", message: "no session s1" } });
    const chunked = JSON.stringify({ error: { code: "invalid_argument", message: "cannot run nope: no such file" } });
    const cases = [
      // [case, head, check]
      ["by length", `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nX-Request-Id: r1\r\nContent-Length: ${body.length}\r\n\r\n${body}`, (/** @type {any} */ e) => e instanceof NotFound && e.message === "no session s1" && e.requestId === "r1"],
      ["chunked", `HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n${chunked.length.toString(16)}\r\n${chunked}\r\n0\r\n\r\n`, (/** @type {any} */ e) => e instanceof InvalidArgument && /cannot run nope/.test(e.message)],
      ["to the close", "HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\nstopped: start it first", (/** @type {any} */ e) => e instanceof Conflict && e.message === "stopped: start it first"],
      ["not upgraded", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", (/** @type {any} */ e) => e instanceof ProtocolError && /not 101/.test(e.message)],
      ["another protocol", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", (/** @type {any} */ e) => e instanceof ProtocolError && /websocket/.test(e.message)],
    ];
    for (const [name, head, check] of cases) {
      await withAttach(String(head), undefined, async (f) => {
        await assert.rejects(new Client({ socket: f.socket }).attach("s1", ["ls"]), /** @type {any} */ (check), String(name));
      });
    }
    await assert.rejects(new Client({ socket: "/nonexistent/sandboxd.sock" }).attach("s1", ["ls"]), Unavailable);
    await assert.rejects(new Client({ socket: "/nonexistent/sandboxd.sock" }).attach("s1", /** @type {any} */ ("ls")), TypeError);
  });

  it("keeps the exit status a daemon sent before a write found it gone", async () => {
    // The daemon's end in a process of its own, so that this one can be
    // busy meanwhile: it answers 101, then 50 ms later the exit and a close.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-gone-"));
    const socket = path.join(dir, "s.sock");
    const exit = Buffer.concat([frame(2, "bye"), exitFrame(3)]).toString("base64");
    const script = `
      const net = require("node:net");
      const srv = net.createServer((sock) => {
        let got = "";
        sock.on("data", (b) => {
          got += b.toString("latin1");
          if (!got.includes("\\r\\n\\r\\n") || sock.answered) return;
          sock.answered = true;
          sock.write(${JSON.stringify(UPGRADED)});
          // Closed whole, as the daemon's conn.Close() does.
          setTimeout(() => sock.write(Buffer.from("${exit}", "base64"), () => { sock.destroy(); srv.close(); }), 50);
        });
      });
      srv.listen(${JSON.stringify(socket)}, () => process.stdout.write("ready\\n"));
    `;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise((resolve, reject) => {
        child.stdout.once("data", resolve);
        child.once("exit", reject);
      });
      const a = await new Client({ socket }).attach("s1", ["sh", "-c", "exit 3"]);
      // Busy, as a loaded process may be: the exit frame and the close come
      // in before this reads them, and the write meets the close.
      const until = Date.now() + 300;
      while (Date.now() < until);
      await assert.rejects(a.write("too late"), (e) => ["EPIPE", "ECONNRESET"].includes(/** @type {any} */ (e).code));
      const out = [];
      for await (const c of a) out.push([c.stream, c.data.toString()]);
      assert.deepEqual([out, await a.wait()], [[["stderr", "bye"]], 3]);
    } finally {
      child.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("tells a connection cut before the exit, and times a run out", async () => {
    await withAttach(UPGRADED, async (sock) => void sock.write(frame(1, "ab")), async (f) => {
      const a = await new Client({ socket: f.socket }).attach("s1", ["ls"]);
      const out = [];
      await assert.rejects(
        (async () => {
          for await (const c of a) out.push(c.data.toString());
        })(),
        ProtocolError,
      );
      assert.deepEqual(out, ["ab"]);
      await assert.rejects(a.wait(), ProtocolError);
    });
    await withAttach(UPGRADED, async (sock) => void sock.write(Buffer.concat([frame(1, "ab")]).subarray(0, 6)), async (f) => {
      const a = await new Client({ socket: f.socket }).attach("s1", ["ls"]);
      await assert.rejects(a.wait(), /middle of a frame/);
    });
    await withAttach(UPGRADED, async (sock) => void sock.write(Buffer.from([1, 0, 0x10, 0, 1])), async (f) => {
      const a = await new Client({ socket: f.socket }).attach("s1", ["ls"]);
      await assert.rejects(a.wait(), ProtocolError);
    });
    await withAttach(UPGRADED, (sock) => new Promise((r) => sock.once("close", () => r(undefined))), async (f) => {
      const c = new Client({ socket: f.socket });
      const sbx = new Sandbox(c, Session.fromJSON(SESSION));
      const t0 = Date.now();
      await assert.rejects(sbx.commands.runWithInput(["sleep", "100"], "", { timeoutMs: 200 }), RequestTimeout);
      assert.ok(Date.now() - t0 < 2000);
    });
  });
});

describe("health", () => {
  const UNHEALTHY = {
    status: "unhealthy",
    reasons: ["database: disk I/O error"],
    checks: { database: { ok: false, detail: "disk I/O error" }, cgroups: { ok: true }, junk: "x" },
    data_dir: { free_mb: 100, min_free_mb: 512, ok: false },
    error: { code: "unavailable", message: "sandboxd is unhealthy: database: disk I/O error" },
  };

  it("reads a healthy daemon's Health", () =>
    withFake(
      () => ({ body: { status: "ok", checks: { database: { ok: true } }, data_dir: { free_mb: 9000, min_free_mb: 512, ok: true } } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const h = await c.healthStatus();
        assert.ok(h instanceof sandboxd.Health);
        assert.deepEqual([h.ok, h.status, h.reasons, h.checks.database.ok, h.dataDir?.freeMb, h.error], [true, "ok", [], true, 9000, null]);
        assert.equal(await c.health(), "ok");
      },
    ));

  it("answers an unhealthy daemon's reasons, where health() rejects", () =>
    withFake(
      () => ({ status: 503, body: UNHEALTHY }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const h = await c.healthStatus();
        assert.deepEqual([h.ok, h.status, h.reasons, h.checks.database.detail, h.checks.cgroups.ok, Object.keys(h.checks).sort()], [
          false,
          "unhealthy",
          ["database: disk I/O error"],
          "disk I/O error",
          true,
          ["cgroups", "database"],
        ]);
        assert.deepEqual([h.error?.code, h.dataDir?.minFreeMb], ["unavailable", 512]);
        await assert.rejects(c.health(), (e) => e instanceof Unavailable && e.status === 503 && e.message === "sandboxd is unhealthy: database: disk I/O error");
      },
    ));

  it("rejects a 503 that is not a Health, and a daemon not there", async () => {
    await withFake(
      () => errorReply(503, "unavailable", "draining", { "Retry-After": "30" }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).healthStatus(), (e) => e instanceof Unavailable && e.message === "draining" && e.retryAfter === 30);
      },
    );
    await withFake(
      () => ({ status: 500, raw: "boom" }),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).healthStatus(), Internal);
      },
    );
    await assert.rejects(new Client({ socket: "/nonexistent/sandboxd.sock" }).healthStatus(), Unavailable);
    // A degraded daemon from before the checks is no error, and not ok.
    await withFake(
      () => ({ body: { status: "degraded" } }),
      async (d) => {
        const c = new Client({ socket: d.socket });
        assert.deepEqual([(await c.healthStatus()).ok, await c.health()], [false, "degraded"]);
      },
    );
  });
});

describe("models", () => {
  const cases = [
    // [json, check]
    [{}, (/** @type {Execution} */ e) => e.status === "" && e.result === null && e.outputs.length === 0 && e.error === null],
    [
      { result: null, error: { name: "ZeroDivisionError", value: "division by zero" } },
      (/** @type {Execution} */ e) => String(e.error) === "ZeroDivisionError: division by zero",
    ],
    [{ exit_code: "x", outputs: "x" }, (/** @type {Execution} */ e) => e.exitCode === 0 && e.outputs.length === 0],
    [{ started_at: "not a time" }, (/** @type {Execution} */ e) => e.startedAt === null],
    [{ started_at: "2026-01-02T03:04:05.5+02:00" }, (/** @type {Execution} */ e) => e.startedAt?.toISOString() === "2026-01-02T01:04:05.500Z"],
    [
      { outputs: [{ mime: "text/html", data: Buffer.from("<b>x</b>").toString("base64") }, null] },
      (/** @type {Execution} */ e) => e.outputs.length === 1 && e.outputs[0].html === "<b>x</b>" && e.outputs[0].png === null,
    ],
    [null, (/** @type {Execution} */ e) => e.status === ""],
    // A daemon (or a history) older than metrics, code_sha256 and caller_uid.
    [{}, (/** @type {Execution} */ e) => e.metrics === null && e.codeSha256 === "" && e.callerUid === null],
    [{ metrics: "x", caller_uid: "0" }, (/** @type {Execution} */ e) => e.metrics === null && e.callerUid === null],
    [
      { metrics: { cpu_ms: 1.5 }, caller_uid: 0 },
      (/** @type {Execution} */ e) => e.metrics?.cpuMs === 1.5 && e.metrics.wallMs === 0 && e.callerUid === 0,
    ],
    [{ status: "running" }, (/** @type {Execution} */ e) => e.status === STATUS_RUNNING && !e.ok],
  ];
  for (const [raw, check] of cases) {
    it(`reads ${JSON.stringify(raw)} leniently`, () => {
      assert.ok(/** @type {(e: Execution) => boolean} */ (check)(Execution.fromJSON(raw)));
    });
  }

  it("exports what the Python SDK does", () => {
    for (const name of [
      "Sandbox",
      "Client",
      "Commands",
      "Files",
      "run",
      "SandboxdError",
      "InvalidArgument",
      "NotFound",
      "Conflict",
      "PermissionDenied",
      "PayloadTooLarge",
      "ResourceExhausted",
      "Internal",
      "Unavailable",
      "BadGateway",
      "RequestTimeout",
      "ProtocolError",
      "ExecMetrics",
      "Execution",
      "ExecutionError",
      "ExecutionSummary",
      "FileInfo",
      "FileWritten",
      "Limits",
      "Output",
      "Session",
      "Stats",
      "Process",
      "ProcessLogs",
      "Processes",
      "Attached",
      "Health",
      "HealthCheck",
      "DataDirHealth",
      "ErrorDetail",
      "DEFAULT_SOCKET",
      "SOCKET_ENV",
    ]) {
      assert.ok(name in sandboxd, name);
    }
  });
});
