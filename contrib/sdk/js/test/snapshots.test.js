// Snapshots and fork against the fake daemon: what createSnapshot,
// snapshots, snapshot and deleteSnapshot send and how their answers read;
// sessions made from a snapshot, one and several (an array); fork (an
// array); bad counts and names refused before the daemon is asked.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, InvalidArgument, NotFound, Sandbox, Session, Snapshot } from "sandboxd";
import { SESSION, errorReply, fakeDaemon } from "./fake.js";

const SNAP = {
  id: "9a8b7c6d5e4f3a21",
  session_id: SESSION.id,
  name: "base",
  owner_uid: 1000,
  template: "python",
  runtime: "runc",
  memory: false,
  size_mb: 3,
  created_at: "2026-01-02T03:04:05Z",
};

const FORK_PATH = `/v1/sessions/${SESSION.id}/fork`;
const SNAPSHOTS_PATH = `/v1/sessions/${SESSION.id}/snapshots`;

/** @param {number} n */
const sessions = (n) => ({ sessions: Array.from({ length: n }, (_, i) => ({ ...SESSION, id: `s${i}` })) });

/**
 * @param {import("./fake.js").Seen} s
 * @returns {import("./fake.js").Reply}
 */
function route(s) {
  if (s.path === "/v1/sessions" && s.method === "POST") {
    const b = s.json();
    if (b.snapshot === "gone") return errorReply(404, "not_found", "no such snapshot gone");
    if ("count" in b) return { status: 201, body: sessions(b.count) };
    return { status: 201, body: SESSION };
  }
  if (s.path === SNAPSHOTS_PATH) {
    const b = s.body.length ? s.json() : {};
    if (b.name === "taken") return errorReply(409, "conflict", "snapshot taken exists");
    return { status: 201, body: { ...SNAP, name: b.name ?? "" } };
  }
  if (s.path === FORK_PATH) return { status: 201, body: sessions(s.json().count ?? 1) };
  if (s.path === "/v1/sessions/busy/fork") return errorReply(400, "invalid_argument", "count 101: at most 100");
  if (s.path === "/v1/snapshots") return { body: { snapshots: [SNAP, { ...SNAP, id: "other", name: "" }] } };
  if (s.path === "/v1/snapshots/gone") return errorReply(404, "not_found", "no such snapshot gone");
  if (s.path.startsWith("/v1/snapshots/") && s.method === "GET") return { body: SNAP };
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

describe("snapshots", () => {
  it("snapshots a session, lists, gets and deletes", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const snap = await c.createSnapshot(SESSION.id, { name: "base" });
      assert.deepEqual([last().method, last().path, last().json()], ["POST", SNAPSHOTS_PATH, { name: "base" }]);
      assert.ok(snap instanceof Snapshot);
      assert.deepEqual(
        [snap.id, snap.sessionId, snap.name, snap.ownerUid, snap.template, snap.runtime, snap.memory, snap.sizeMb, snap.createdAt?.toISOString()],
        [SNAP.id, SESSION.id, "base", 1000, "python", "runc", false, 3, "2026-01-02T03:04:05.000Z"],
      );
      await c.createSnapshot(SESSION.id);
      assert.deepEqual(last().json(), {}, "no name: none sent");
      await assert.rejects(c.createSnapshot(SESSION.id, { name: "taken" }), Conflict);

      assert.deepEqual((await c.snapshots()).map((x) => [x.id, x.name]), [[SNAP.id, "base"], ["other", ""]]);
      assert.deepEqual([last().method, last().path], ["GET", "/v1/snapshots"]);
      assert.deepEqual(await c.snapshot("base"), Snapshot.fromJSON(SNAP));
      assert.deepEqual([last().method, last().path], ["GET", "/v1/snapshots/base"]);
      await assert.rejects(c.snapshot("gone"), NotFound);

      await c.deleteSnapshot(snap);
      assert.deepEqual([last().method, last().path], ["DELETE", `/v1/snapshots/${SNAP.id}`]);
      await c.deleteSnapshot("base");
      assert.equal(last().path, "/v1/snapshots/base");

      const n = d.seen.length;
      for (const bad of ["", null]) await assert.rejects(c.deleteSnapshot(/** @type {any} */ (bad)), TypeError);
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));

  it("makes sessions from a snapshot: one alone, several as an array", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const one = await c.createSession({ snapshot: "base", labels: { k: "v" } });
      assert.deepEqual(last().json(), { snapshot: "base", labels: { k: "v" } });
      assert.deepEqual(one, Session.fromJSON(SESSION));
      await c.createSession({ snapshot: Snapshot.fromJSON(SNAP) });
      assert.deepEqual(last().json(), { snapshot: SNAP.id }, "a Snapshot goes as its id");

      const ss = await c.createSessions("base", { count: 3, env: { A: "1" } });
      assert.deepEqual(last().json(), { snapshot: "base", env: { A: "1" }, count: 3 });
      assert.deepEqual(ss.map((s) => s.id), ["s0", "s1", "s2"]);
      assert.ok(ss.every((s) => s instanceof Session));
      assert.equal((await c.createSessions(Snapshot.fromJSON(SNAP))).length, 1);
      assert.deepEqual(last().json(), { snapshot: SNAP.id, count: 1 });
      await assert.rejects(c.createSessions("gone", { count: 2 }), NotFound);

      const n = d.seen.length;
      const bad = [
        { name: "count 0", snapshot: "base", opts: { count: 0 }, err: RangeError },
        { name: "count 101", snapshot: "base", opts: { count: 101 }, err: RangeError },
        { name: "count 1.5", snapshot: "base", opts: { count: 1.5 }, err: RangeError },
        { name: "count a string", snapshot: "base", opts: { count: "2" }, err: RangeError },
        { name: "no snapshot", snapshot: "", opts: { count: 2 }, err: TypeError },
        { name: "a typo", snapshot: "base", opts: { count: 2, lables: { k: "v" } }, err: TypeError },
      ];
      for (const tc of bad) {
        await assert.rejects(c.createSessions(tc.snapshot, /** @type {any} */ (tc.opts)), tc.err, tc.name);
      }
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));

  it("forks a session into an array", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const ss = await c.forkSession(SESSION.id);
      assert.deepEqual([last().method, last().path, last().json()], ["POST", FORK_PATH, { count: 1 }]);
      assert.deepEqual(ss.map((s) => s.id), ["s0"]);
      assert.equal((await c.forkSession(SESSION.id, { count: 4 })).length, 4);
      assert.deepEqual(last().json(), { count: 4 });
      await assert.rejects(c.forkSession("busy", { count: 100 }), InvalidArgument);
      const n = d.seen.length;
      await assert.rejects(c.forkSession(SESSION.id, { count: 0 }), RangeError);
      assert.equal(d.seen.length, n, "a bad count reached the daemon");
    }));

  it("snapshots and forks a Sandbox, makes Sandboxes from a snapshot", () =>
    withFake(async (d) => {
      const last = () => d.seen[d.seen.length - 1];
      const sbx = await Sandbox.create({ socket: d.socket, snapshot: "base", name: "n1" });
      assert.deepEqual(last().json(), { snapshot: "base", name: "n1" });
      assert.equal((await sbx.createSnapshot({ name: "base2" })).name, "base2");
      assert.deepEqual([last().path, last().json()], [SNAPSHOTS_PATH, { name: "base2" }]);

      const forks = await sbx.fork({ count: 2 });
      assert.deepEqual([last().path, last().json()], [FORK_PATH, { count: 2 }]);
      assert.deepEqual(forks.map((f) => [f instanceof Sandbox, f.id]), [[true, "s0"], [true, "s1"]]);
      assert.ok(forks.every((f) => f.created && f.client === sbx.client), "forks share the client and are the caller's");

      const made = await Sandbox.fromSnapshot("base", { count: 3, labels: { k: "v" }, socket: d.socket });
      assert.deepEqual(last().json(), { snapshot: "base", labels: { k: "v" }, count: 3 });
      assert.deepEqual(made.map((s) => s.id), ["s0", "s1", "s2"]);
      assert.equal((await Sandbox.fromSnapshot("base", { socket: d.socket }))[0].id, "s0");
    }));
});
