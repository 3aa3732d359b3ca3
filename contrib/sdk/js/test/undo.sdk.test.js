// Undo and volume sharing against a real sandboxd ($SANDBOXD_SOCKET): a
// session with checkpoints 3 sets x, then deletes it and writes a file in
// one execution; undo brings x back and takes the file away; going back
// further than it keeps, or in a session without checkpoints, is Conflict.
// A volume's sharing replaced, then taken away.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, NotFound, Sandbox } from "sandboxd";

import { RUN, skip, withSandbox } from "./live.js";

describe("undo on a real daemon", { skip }, () => {
  it("takes the interpreter and /workspace back over the last execution", async () => {
    const sbx = await Sandbox.create({ labels: { run: RUN }, checkpoints: 3 });
    try {
      assert.equal(sbx.session.checkpoints, 3);
      assert.equal((await sbx.runCode("x = 1")).status, "ok");
      const r = await sbx.runCode("del x\nopen('/workspace/undone.txt', 'w').write('gone after undo')");
      assert.equal(r.status, "ok");
      assert.ok(await sbx.files.exists("undone.txt"));

      assert.equal(await sbx.undo(), 1);
      assert.equal((await sbx.runCode("x")).result, "1", "x is back");
      assert.equal(await sbx.files.exists("undone.txt"), false, "the file written since is gone");

      // Of the three it keeps, one was used, and the executions since keep
      // one each: four steps are more than it has.
      await assert.rejects(sbx.undo(4), Conflict);
      assert.equal((await sbx.runCode("x")).result, "1", "a refused undo changes nothing");
    } finally {
      await sbx.kill();
    }
  });

  it("refuses a session without checkpoints", () =>
    withSandbox(async (sbx) => {
      assert.equal(sbx.session.checkpoints, 0);
      await assert.rejects(sbx.undo(), Conflict);
    }));
});

describe("volume sharing on a real daemon", { skip }, () => {
  it("replaces whom a volume is shared with", async () => {
    const c = new Client();
    const name = `sdk-js-${RUN}-shared`;
    const v = await c.createVolume(name, 32);
    try {
      assert.deepEqual(v.sharedWith, []);
      const other = 4000000 + ((process.getuid?.() ?? 0) % 1000); // a uid with no sessions
      assert.deepEqual((await c.updateVolume(name, { sharedWith: [other] })).sharedWith, [other]);
      assert.deepEqual((await c.volume(name)).sharedWith, [other]);
      assert.deepEqual((await c.updateVolume(v, { sharedWith: [] })).sharedWith, []);
      assert.deepEqual((await c.volume(name)).sharedWith, []);
    } finally {
      await c.deleteVolume(name).catch((e) => {
        if (!(e instanceof NotFound)) throw e;
      });
    }
  });
});
