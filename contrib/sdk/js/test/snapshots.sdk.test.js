// Snapshots and fork against a real sandboxd ($SANDBOXD_SOCKET): a session
// writes a file and is snapshotted; a session made from the snapshot has the
// file and its first execution says stateReset (files only); two made at
// once; a fork of two; the snapshot listed, got by name, deleted.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, NotFound, Sandbox } from "sandboxd";

import { RUN, skip } from "./live.js";

describe("snapshots on a real daemon", { skip }, () => {
  it("snapshots a session, makes sessions from it, forks, deletes", async () => {
    const c = new Client();
    const name = `sdk-js-${RUN}`;
    /** @type {Sandbox[]} */
    const sessions = [];
    /** @type {string | undefined} */
    let snapId;
    try {
      const src = await Sandbox.create({ labels: { run: RUN } });
      sessions.push(src);
      await src.files.write("kept.txt", "from the source\n");
      const snap = await src.createSnapshot({ name });
      snapId = snap.id;
      assert.ok(snap.id);
      assert.deepEqual([snap.name, snap.sessionId, snap.template, snap.memory], [name, src.id, src.session.template, false]);

      // One from the snapshot: the file, and a fresh interpreter said.
      const one = await Sandbox.create({ snapshot: name, labels: { copy: "1" } });
      sessions.push(one);
      assert.notEqual(one.id, src.id);
      assert.deepEqual(one.session.labels, { run: RUN, copy: "1" }, "labels are added to the snapshot's");
      const first = await one.runCode("open('/workspace/kept.txt').read()");
      assert.deepEqual([first.status, first.result, first.stateReset], ["ok", "'from the source\\n'", true]);
      assert.equal((await one.runCode("1")).stateReset, false, "only the first execution says stateReset");

      // Several at once, an array.
      const many = await Sandbox.fromSnapshot(snap, { count: 2 });
      sessions.push(...many);
      assert.equal(new Set(many.map((s) => s.id)).size, 2);
      for (const s of many) assert.equal(await s.files.read("kept.txt", "utf8"), "from the source\n");

      // A fork of the running source: where it is now.
      await src.files.write("later.txt", "after the snapshot\n");
      const forks = await src.fork({ count: 2 });
      sessions.push(...forks);
      assert.equal(new Set([src.id, ...forks.map((f) => f.id)]).size, 3);
      for (const f of forks) {
        const r = await f.commands.run("cat /workspace/kept.txt /workspace/later.txt");
        assert.deepEqual([r.exitCode, r.stdout, r.stateReset], [0, "from the source\nafter the snapshot\n", true]);
      }
      assert.equal((await src.runCode("1")).result, "1", "the source runs on");

      while (sessions.length) await /** @type {Sandbox} */ (sessions.pop()).kill();
      assert.ok((await c.snapshots()).some((s) => s.id === snap.id));
      assert.equal((await c.snapshot(name)).id, snap.id, "a snapshot outlives its session");
      await c.deleteSnapshot(name);
      await assert.rejects(c.snapshot(snap.id), NotFound);
      assert.ok(!(await c.snapshots()).some((s) => s.id === snap.id));
    } finally {
      // Even after a failure midway: no session nor snapshot of this test is left.
      for (const s of sessions) await s.kill();
      if (snapId) {
        await c.deleteSnapshot(snapId).catch((e) => {
          if (!(e instanceof NotFound)) throw e;
        });
      }
    }
  });
});
