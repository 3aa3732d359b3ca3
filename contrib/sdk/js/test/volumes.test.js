// Volumes against the fake daemon: what createVolume, volumes, volume and
// deleteVolume send and how their answers read, the mounts a session's
// create sends (plain objects and VolumeMounts) and reads back, and bad
// mounts refused before the daemon is asked.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, NotFound, Sandbox, Volume, VolumeMount } from "sandboxd";
import { SESSION, errorReply, fakeDaemon } from "./fake.js";

const VOL = { name: "data", size_mb: 32, used_mb: 1, owner_uid: 1000, created_at: "2026-01-02T03:04:05Z", mounted_by: ["s1"] };

/**
 * @param {import("./fake.js").Seen} s
 * @returns {import("./fake.js").Reply}
 */
function route(s) {
  if (s.path === "/v1/sessions") return { status: 201, body: { ...SESSION, volumes: s.json().volumes || [] } };
  if (s.path === "/v1/volumes" && s.method === "POST") {
    const b = s.json();
    if (b.name === "taken") return errorReply(409, "conflict", "volume taken exists");
    return { status: 201, body: { ...VOL, ...b, mounted_by: [] } };
  }
  if (s.path === "/v1/volumes") return { body: { volumes: [VOL, { ...VOL, name: "other", mounted_by: null }] } };
  if (s.path === "/v1/volumes/gone") return errorReply(404, "not_found", "no such volume gone");
  if (s.path === "/v1/volumes/data" && s.method === "DELETE") return errorReply(409, "conflict", "volume data is mounted by s1");
  if (s.path.startsWith("/v1/volumes/") && s.method === "GET") return { body: VOL };
  return { status: 204 };
}

/** @param {(d: Awaited<ReturnType<typeof fakeDaemon>>, c: Client) => Promise<void>} fn */
async function withFake(fn) {
  const d = await fakeDaemon(route);
  try {
    await fn(d, new Client({ socket: d.socket }));
  } finally {
    await d.close();
  }
}

describe("volumes", () => {
  it("creates, lists, gets and deletes", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const v = await c.createVolume("scratch", 32);
      assert.deepEqual([last().method, last().path, last().json()], ["POST", "/v1/volumes", { name: "scratch", size_mb: 32 }]);
      assert.ok(v instanceof Volume);
      assert.deepEqual(
        [v.name, v.sizeMb, v.usedMb, v.ownerUid, v.createdAt?.toISOString(), v.mountedBy],
        ["scratch", 32, 1, 1000, "2026-01-02T03:04:05.000Z", []],
      );
      await c.createVolume("opts", { sizeMb: 64, requestTimeoutMs: 1000 });
      assert.deepEqual(last().json(), { name: "opts", size_mb: 64 });
      await assert.rejects(c.createVolume("taken", 32), Conflict);

      assert.deepEqual((await c.volumes()).map((x) => [x.name, x.mountedBy]), [["data", ["s1"]], ["other", []]]);
      assert.deepEqual([last().method, last().path], ["GET", "/v1/volumes"]);
      assert.deepEqual(await c.volume("data"), Volume.fromJSON(VOL));
      assert.deepEqual([last().method, last().path], ["GET", "/v1/volumes/data"]);
      await assert.rejects(c.volume("gone"), NotFound);

      await c.deleteVolume(v);
      assert.deepEqual([last().method, last().path], ["DELETE", "/v1/volumes/scratch"]);
      await assert.rejects(c.deleteVolume("data"), Conflict);
      // Root's {uid}/{name} stays one segment.
      await c.volume("1000/data");
      assert.equal(last().path, "/v1/volumes/1000%2Fdata");

      const n = d.seen.length;
      for (const bad of ["", null]) await assert.rejects(c.deleteVolume(/** @type {any} */ (bad)), TypeError);
      await assert.rejects(c.createVolume("x", /** @type {any} */ ({})), TypeError);
      await assert.rejects(c.createVolume("x", /** @type {any} */ ("32")), TypeError);
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));

  // What Sandbox.create({volumes}) sends: the wire's objects, read_only only when set.
  const cases = [
    {
      name: "plain objects",
      volumes: [{ name: "data", path: "/data" }, { name: "data", path: "/ro", readOnly: true }],
      want: [{ name: "data", path: "/data" }, { name: "data", path: "/ro", read_only: true }],
    },
    {
      name: "VolumeMounts",
      volumes: [new VolumeMount({ name: "data", path: "/data" }), new VolumeMount({ name: "data", path: "/ro", readOnly: true })],
      want: [{ name: "data", path: "/data" }, { name: "data", path: "/ro", read_only: true }],
    },
    { name: "one mount alone", volumes: { name: "data", path: "/mnt/v" }, want: [{ name: "data", path: "/mnt/v" }] },
    { name: "readOnly false", volumes: [{ name: "data", path: "/d", readOnly: false }], want: [{ name: "data", path: "/d" }] },
  ];
  for (const tc of cases) {
    it(`mounts ${tc.name}`, () =>
      withFake(async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket, volumes: tc.volumes });
        assert.deepEqual(d.seen[d.seen.length - 1].json().volumes, tc.want);
        const got = tc.want.map((w) => new VolumeMount({ name: w.name, path: w.path, readOnly: w.read_only === true }));
        assert.deepEqual(sbx.session.volumes, got);
      }));
  }

  it("sends no volumes without them", () =>
    withFake(async (d) => {
      const sbx = await Sandbox.create({ socket: d.socket });
      assert.equal("volumes" in d.seen[d.seen.length - 1].json(), false);
      assert.deepEqual(sbx.session.volumes, []);
    }));

  const bad = [
    { name: "a typo", volumes: [{ name: "data", path: "/d", read_only: true }] },
    { name: "a string", volumes: ["data:/d"] },
    { name: "a string alone", volumes: "data:/d" },
  ];
  for (const tc of bad) {
    it(`refuses ${tc.name} before asking the daemon`, () =>
      withFake(async (d, c) => {
        await assert.rejects(c.createSession({ volumes: tc.volumes }), TypeError);
        assert.equal(d.seen.length, 0);
      }));
  }
});
