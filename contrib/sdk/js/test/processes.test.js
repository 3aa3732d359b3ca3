// Attached processes against the fake daemon: what starting one with stdin,
// a terminal, a tag and a timeout sends, input, resize and signal calls, and
// the output stream read as chunks that end with the exit code.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, InvalidArgument, NotFound, ProcessChunk, ProtocolError, Sandbox } from "sandboxd";
import { SESSION, errorReply, fakeDaemon } from "./fake.js";

/**
 * @param {string} stream
 * @param {string} data
 * @param {number} offset
 */
const out = (stream, data, offset) => ({ stream, data_b64: Buffer.from(data).toString("base64"), offset });

// A process that wrote "hi\n" on stdout, "oops\n" on stderr, and ended with 3.
const LINES = [out("stdout", "hi\n", 0), out("stderr", "oops\n", 3), { exit_code: 3, offset: 8 }];

const ATTACHED = { pid: 42, command: "cat", started_at: "2026-01-02T03:04:05Z", attached: true, tag: "t1", argv: ["cat"], tty: { rows: 24, cols: 80 } };

/**
 * @param {import("./fake.js").Seen} s
 * @returns {import("./fake.js").Reply}
 */
function route(s) {
  if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
  if (s.path.endsWith("/processes")) return { status: 201, body: ATTACHED };
  if (s.path.includes("/processes/7/")) return errorReply(404, "not_found", "no process 7 in session s");
  if (s.path.includes("/processes/8/")) return errorReply(409, "conflict", "process 8 ended");
  if (s.path.endsWith("/processes/9/output")) return { lines: [{ stream: "stdout", data_b64: "!!", offset: 0 }] };
  if (s.path.endsWith("/processes/10/output")) {
    return { lines: [out("stdout", "a", 0), { type: "error", error: { code: "invalid_argument", message: "bad from" } }] };
  }
  if (s.path.endsWith("/output")) return { lines: s.query.get("follow") === "1" ? LINES : LINES.slice(0, 2) };
  return { status: 204 };
}

/** @param {(d: Awaited<ReturnType<typeof fakeDaemon>>, sbx: Sandbox) => Promise<void>} fn */
async function withFake(fn) {
  const d = await fakeDaemon(route);
  try {
    await fn(d, await Sandbox.create({ socket: d.socket }));
  } finally {
    await d.close();
  }
}

/**
 * Every chunk of a generator, and its return value.
 * @template T, R
 * @param {AsyncGenerator<T, R>} gen
 * @returns {Promise<[T[], R]>}
 */
async function drain(gen) {
  const got = [];
  for (;;) {
    const next = await gen.next();
    if (next.done) return [got, next.value];
    got.push(next.value);
  }
}

describe("attached processes", () => {
  it("starts with stdin, a terminal, a tag and a timeout", () =>
    withFake(async (d, sbx) => {
      const p = await sbx.processes.start(["cat"], { stdin: true, tty: { rows: 24, cols: 80 }, tag: "t1", timeoutS: 30 });
      const raw = d.seen.at(-1);
      assert.deepEqual([raw?.method, raw?.path, raw?.json()], [
        "POST",
        `/v1/sessions/${sbx.id}/processes`,
        { argv: ["cat"], stdin: true, tty: { rows: 24, cols: 80 }, tag: "t1", timeout_s: 30 },
      ]);
      assert.deepEqual([p.pid, p.attached, p.tag, p.tty], [42, true, "t1", { rows: 24, cols: 80 }]);
      // Without them the request is what it always was.
      await sbx.processes.start("sleep 1");
      assert.deepEqual(d.seen.at(-1)?.json(), { argv: ["/bin/sh", "-c", "sleep 1"] });
      const n = d.seen.length;
      for (const bad of [{ tty: { rows: 0, cols: 80 } }, { tty: { rows: 24, cols: 70000 } }, { tty: { rows: 24.5, cols: 80 } }, { timeoutS: 0 }, { timeoutS: -1 }]) {
        await assert.rejects(sbx.processes.start(["cat"], /** @type {any} */ (bad)), RangeError, JSON.stringify(bad));
      }
      await assert.rejects(sbx.processes.start(["cat"], /** @type {any} */ ({ tty: 24 })), TypeError);
      assert.equal(d.seen.length, n, "a bad start reached the daemon");
    }));

  it("writes and closes input, resizes and signals", () =>
    withFake(async (d, sbx) => {
      const base = `/v1/sessions/${sbx.id}/processes/42`;
      await sbx.processes.writeStdin(42, Buffer.from("\x00bytes\n", "latin1"));
      let raw = d.seen.at(-1);
      assert.deepEqual([raw?.method, raw?.path, raw?.query.toString(), raw?.body.toString("latin1")], ["POST", base + "/stdin", "", "\x00bytes\n"]);
      await sbx.processes.writeStdin(42, "héllo", { eof: true });
      raw = d.seen.at(-1);
      assert.deepEqual([raw?.query.get("eof"), raw?.body.toString("utf8")], ["1", "héllo"]);
      await sbx.processes.closeStdin(42);
      raw = d.seen.at(-1);
      assert.deepEqual([raw?.path, raw?.query.get("eof"), raw?.body.length], [base + "/stdin", "1", 0]);
      await sbx.processes.resize(42, 40, 120);
      assert.deepEqual([d.seen.at(-1)?.path, d.seen.at(-1)?.json()], [base + "/resize", { rows: 40, cols: 120 }]);
      await sbx.processes.signal(42, "INT");
      assert.deepEqual([d.seen.at(-1)?.method, d.seen.at(-1)?.path, d.seen.at(-1)?.json()], ["POST", base + "/signal", { signal: "INT" }]);
      await sbx.processes.signal(42, 9);
      assert.deepEqual(d.seen.at(-1)?.json(), { signal: "9" });
      await sbx.processes.signal(42);
      assert.deepEqual(d.seen.at(-1)?.json(), { signal: "TERM" });
      await assert.rejects(sbx.processes.resize(42, 0, 80), RangeError);
      await assert.rejects(sbx.processes.writeStdin(42, /** @type {any} */ (42)), TypeError);
      await assert.rejects(sbx.processes.signal(7), NotFound);
      await assert.rejects(sbx.processes.writeStdin(7, "x"), NotFound);
      await assert.rejects(sbx.processes.writeStdin(8, "x"), Conflict);
      await assert.rejects(sbx.processes.resize(8, 24, 80), Conflict);
    }));

  it("reads the output as chunks that end with the exit code", () =>
    withFake(async (d, sbx) => {
      const [chunks, code] = await drain(sbx.processes.output(42));
      const raw = d.seen.at(-1);
      assert.deepEqual([raw?.method, raw?.path, raw?.query.toString()], ["GET", `/v1/sessions/${sbx.id}/processes/42/output`, "from=start&follow=1"]);
      assert.equal(raw?.headers.accept, "application/x-ndjson");
      assert.ok(chunks.every((c) => c instanceof ProcessChunk));
      assert.deepEqual(
        chunks.map((c) => [c.stream, c.text, c.offset, c.exitCode, c.ended]),
        [
          ["stdout", "hi\n", 0, null, false],
          ["stderr", "oops\n", 3, null, false],
          ["", "", 8, 3, true],
        ],
      );
      assert.equal(chunks[1].nextOffset, 8);
      assert.equal(code, 3);
      await drain(sbx.processes.output(42, { from: 3 }));
      assert.equal(d.seen.at(-1)?.query.toString(), "from=3&follow=1");
      // Without follow: what there is, no end, no exit code.
      const [some, none] = await drain(sbx.processes.output(42, { follow: false, from: "now" }));
      assert.deepEqual([some.map((c) => c.stream), none, d.seen.at(-1)?.query.toString()], [["stdout", "stderr"], null, "from=now"]);
      // The client has it too, as the Go client does.
      const [viaClient] = await drain(new Client({ socket: d.socket }).processOutput(sbx.id, 42));
      assert.deepEqual(viaClient.map((c) => c.exitCode), [null, null, 3]);
      // Leaving the loop early hangs up.
      for await (const c of sbx.processes.output(42)) {
        assert.equal(c.stream, "stdout");
        break;
      }

      const n = d.seen.length;
      for (const bad of ["end", -1, 1.5, true]) {
        await assert.rejects(drain(sbx.processes.output(42, { from: /** @type {any} */ (bad) })), RangeError, String(bad));
      }
      assert.equal(d.seen.length, n, "a bad from reached the daemon");
      await assert.rejects(drain(sbx.processes.output(9)), ProtocolError);
      await assert.rejects(drain(sbx.processes.output(10)), InvalidArgument);
      await assert.rejects(drain(sbx.processes.output(7)), NotFound);
    }));
});
