// Undo and checkpoints against the fake daemon: what a create with
// checkpoints sends and how the session reads back, what undo sends (steps,
// 1 by default) and resolves to, bad steps refused before the daemon is
// asked, the daemon's refusals as errors; a volume's sharing replaced.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, InvalidArgument, NotFound, Sandbox, Volume } from "sandboxd";
import { SESSION, errorReply, fakeDaemon } from "./fake.js";

const UNDO_PATH = `/v1/sessions/${SESSION.id}/undo`;
const VOL = { name: "data", size_mb: 32, used_mb: 1, owner_uid: 1000, created_at: "2026-01-02T03:04:05Z", shared_with: [1001] };

/**
 * @param {import("./fake.js").Seen} s
 * @returns {import("./fake.js").Reply}
 */
function route(s) {
  if (s.path === "/v1/sessions" && s.method === "POST") {
    const b = s.json();
    return { status: 201, body: { ...SESSION, ...("checkpoints" in b ? { checkpoints: b.checkpoints } : {}) } };
  }
  if (s.path === UNDO_PATH) {
    const steps = s.json().steps ?? 1;
    if (steps > 3) return errorReply(409, "conflict", `session keeps 3 checkpoints: it cannot go back ${steps} executions`);
    return { body: { undone: steps } };
  }
  if (s.path === "/v1/sessions/plain/undo") return errorReply(409, "conflict", "session plain keeps no checkpoints");
  if (s.path === "/v1/sessions/odd/undo") return errorReply(400, "invalid_argument", "steps 17: undo goes back 1 to 16 executions");
  if (s.path === "/v1/volumes/data" && s.method === "PATCH") {
    const b = s.json();
    if (b.shared_with.includes(1002)) return errorReply(409, "conflict", "user 1002 has session s9 mounting it");
    return { body: { ...VOL, shared_with: b.shared_with.length ? b.shared_with : null } };
  }
  if (s.path === "/v1/volumes/gone") return errorReply(404, "not_found", "no such volume gone");
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

describe("undo", () => {
  it("creates with checkpoints", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const s = await c.createSession({ checkpoints: 3 });
      assert.deepEqual(last().json(), { checkpoints: 3 });
      assert.equal(s.checkpoints, 3);
      assert.equal((await c.createSession()).checkpoints, 0, "absent: none");
      assert.deepEqual(last().json(), {});
    }));

  it("sends steps and resolves to how many were undone", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      assert.equal(await c.undo(SESSION.id), 1);
      assert.deepEqual([last().method, last().path, last().json()], ["POST", UNDO_PATH, { steps: 1 }]);
      assert.equal(await c.undo(SESSION.id, 3), 3);
      assert.deepEqual(last().json(), { steps: 3 });
      assert.equal(await c.undo(SESSION.id, { steps: 2, requestTimeoutMs: 1000 }), 2);
      assert.deepEqual(last().json(), { steps: 2 });
      assert.equal(await c.undo(SESSION.id, undefined, { requestTimeoutMs: 1000 }), 1);
      await assert.rejects(c.undo(SESSION.id, 5), Conflict);
      await assert.rejects(c.undo("plain"), Conflict);
      await assert.rejects(c.undo("odd", 16), InvalidArgument);

      const n = d.seen.length;
      for (const bad of [0, 17, -1, 1.5, "2", true]) {
        await assert.rejects(c.undo(SESSION.id, /** @type {any} */ (bad)), RangeError, `steps ${JSON.stringify(bad)}`);
      }
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));

  it("undoes from a Sandbox", () =>
    withFake(async (d) => {
      const last = () => d.seen[d.seen.length - 1];
      const sbx = await Sandbox.create({ socket: d.socket, checkpoints: 3 });
      assert.deepEqual(last().json(), { checkpoints: 3 });
      assert.equal(sbx.session.checkpoints, 3);
      assert.equal(await sbx.undo(), 1);
      assert.deepEqual([last().path, last().json()], [UNDO_PATH, { steps: 1 }]);
      assert.equal(await sbx.undo(2), 2);
      assert.equal(await sbx.undo({ steps: 3 }), 3);
      assert.deepEqual(last().json(), { steps: 3 });
      await assert.rejects(sbx.undo(4), Conflict);
    }));
});

describe("volume sharing", () => {
  it("replaces whom a volume is shared with", () =>
    withFake(async (d, c) => {
      const last = () => d.seen[d.seen.length - 1];
      const v = await c.updateVolume("data", { sharedWith: [1001, 1003] });
      assert.ok(v instanceof Volume);
      assert.deepEqual([last().method, last().path, last().json()], ["PATCH", "/v1/volumes/data", { shared_with: [1001, 1003] }]);
      assert.deepEqual(v.sharedWith, [1001, 1003]);
      const none = await c.updateVolume(Volume.fromJSON(VOL), { sharedWith: [], requestTimeoutMs: 1000 });
      assert.equal(last().body.toString(), '{"shared_with":[]}', "[]: shared with no one, sent as such");
      assert.deepEqual(none.sharedWith, []);
      await assert.rejects(c.updateVolume("data", { sharedWith: [1002] }), Conflict);
      await assert.rejects(c.updateVolume("gone", { sharedWith: [] }), NotFound);

      const n = d.seen.length;
      /** @type {Array<[string, any, any]>} */
      const cases = [
        ["no name", "", { sharedWith: [1] }],
        ["no sharedWith", "data", {}],
        ["no options", "data", undefined],
        ["a uid alone", "data", { sharedWith: 1001 }],
        ["a string uid", "data", { sharedWith: ["1001"] }],
        ["a negative uid", "data", { sharedWith: [-1] }],
      ];
      for (const [name, vol, opts] of cases) {
        await assert.rejects(c.updateVolume(vol, opts), TypeError, name);
      }
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));
});
