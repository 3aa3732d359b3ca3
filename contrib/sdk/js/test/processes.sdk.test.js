// Attached processes against a real sandboxd ($SANDBOXD_SOCKET): input
// written and closed, stdout and stderr apart, a terminal resized, a timeout
// and a signal, output followed from the start and from now.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Conflict, NotFound, Sandbox } from "sandboxd";

import { skip, withSandbox } from "./live.js";

/**
 * What each stream got, the exit code of the last chunk, and the
 * generator's return value.
 * @param {AsyncGenerator<import("sandboxd").ProcessChunk, number | null>} gen
 */
async function byStream(gen) {
  /** @type {Record<string, string>} */
  const streams = {};
  let last = null;
  for (;;) {
    const next = await gen.next();
    if (next.done) return { streams, code: last, returned: next.value };
    const c = next.value;
    if (c.ended) last = c.exitCode;
    else streams[c.stream] = (streams[c.stream] ?? "") + c.text;
  }
}

describe("attached processes", { skip }, () => {
  it("takes input and keeps stdout and stderr apart", () =>
    withSandbox(async (sbx) => {
      const p = await sbx.processes.start(["sh", "-c", "echo err >&2; cat; exit 4"], { stdin: true, tag: "cat" });
      assert.equal(p.attached, true);
      await sbx.processes.writeStdin(p.pid, Buffer.from("hello\n"));
      const listed = (await sbx.processes.list()).find((x) => x.pid === p.pid);
      assert.deepEqual([listed?.attached, listed?.tag, listed?.argv[0]], [true, "cat", "sh"]);
      await sbx.processes.writeStdin(p.pid, "bye\n");
      await sbx.processes.closeStdin(p.pid);
      assert.deepEqual(await byStream(sbx.processes.output(p.pid)), { streams: { stdout: "hello\nbye\n", stderr: "err\n" }, code: 4, returned: 4 });
      // Read again without follow, from an offset: what is kept.
      const again = await byStream(sbx.processes.output(p.pid, { follow: false, from: 0 }));
      assert.equal(again.streams.stdout, "hello\nbye\n");
      await assert.rejects(sbx.processes.writeStdin(p.pid, "late"), Conflict);
      await assert.rejects(sbx.processes.resize(p.pid, 10, 10), Conflict);
      await assert.rejects(byStream(sbx.processes.output(999999)), NotFound);
    }));

  it("runs on a terminal that is resized", () =>
    withSandbox(async (sbx) => {
      const p = await sbx.processes.start(["sh", "-c", 'read x; stty size; echo "$TERM"'], { tty: { rows: 24, cols: 80 } });
      assert.deepEqual(p.tty, { rows: 24, cols: 80 });
      await sbx.processes.resize(p.pid, 30, 100);
      await sbx.processes.writeStdin(p.pid, "go\n");
      const { streams, code } = await byStream(sbx.processes.output(p.pid));
      assert.deepEqual([Object.keys(streams), code], [["pty"], 0]);
      assert.match(streams.pty, /30 100/);
    }));

  it("ends with its timeout or a signal", () =>
    withSandbox(async (sbx) => {
      const slow = await sbx.processes.start(["sh", "-c", "echo early; sleep 60"], { stdin: true, timeoutS: 1 });
      const timedOut = await byStream(sbx.processes.output(slow.pid, { from: "now" }));
      assert.ok([undefined, "early\n"].includes(timedOut.streams.stdout), JSON.stringify(timedOut));
      assert.equal(timedOut.code, 137);
      const p = await sbx.processes.start(["sleep", "60"], { stdin: true });
      await sbx.processes.signal(p.pid, "TERM");
      assert.equal((await byStream(sbx.processes.output(p.pid))).returned, 143);
      await assert.rejects(sbx.processes.signal(999999, "TERM"), NotFound);
    }));
});
