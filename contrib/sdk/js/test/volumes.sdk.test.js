// Volumes against a real sandboxd ($SANDBOXD_SOCKET): a 32 MB volume two
// sessions mount at once (/data, and /mnt/v read-only), what one writes the
// other reads; deleting it while they mount it is Conflict; the sessions
// deleted, then the volume.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, NotFound, Sandbox, VolumeMount } from "sandboxd";

import { RUN, skip } from "./live.js";

describe("volumes on a real daemon", { skip }, () => {
  it("shares a volume between two sessions, refuses to delete it while mounted", async () => {
    const c = new Client();
    const name = `sdk-js-${RUN}`;
    const v = await c.createVolume(name, 32);
    assert.deepEqual([v.name, v.sizeMb, v.mountedBy], [name, 32, []]);
    /** @type {Sandbox[]} */
    const sessions = [];
    try {
      assert.ok((await c.volumes()).some((x) => x.name === name));
      const a = await Sandbox.create({ labels: { run: RUN }, volumes: [{ name, path: "/data" }] });
      sessions.push(a);
      const b = await Sandbox.create({ labels: { run: RUN }, volumes: [new VolumeMount({ name, path: "/mnt/v", readOnly: true })] });
      sessions.push(b);
      assert.deepEqual(a.session.volumes, [new VolumeMount({ name, path: "/data" })]);
      assert.deepEqual((await b.info()).volumes, [new VolumeMount({ name, path: "/mnt/v", readOnly: true })]);

      const w = await a.commands.run("echo from-a > /data/f.txt");
      assert.deepEqual([w.exitCode, w.stderr], [0, ""]);
      assert.equal((await b.runCode("open('/mnt/v/f.txt').read()")).result, "'from-a\\n'");
      assert.notEqual((await b.commands.run("touch /mnt/v/g")).exitCode, 0, "a read-only mount took a write");

      assert.deepEqual([...(await c.volume(name)).mountedBy].sort(), [a.id, b.id].sort());
      await assert.rejects(c.deleteVolume(name), Conflict);

      while (sessions.length) await /** @type {Sandbox} */ (sessions.pop()).kill();
      assert.deepEqual((await c.volume(name)).mountedBy, []);
      await c.deleteVolume(name);
      await assert.rejects(c.volume(name), NotFound);
      assert.ok(!(await c.volumes()).some((x) => x.name === name));
    } finally {
      // Even after a failure midway: no session nor volume of this test is left.
      for (const s of sessions) await s.kill();
      await c.deleteVolume(name).catch((e) => {
        if (!(e instanceof NotFound)) throw e;
      });
    }
  });
});
