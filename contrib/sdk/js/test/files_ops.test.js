// The fuller file calls against the fake daemon: stat, mkdir, move,
// listing to a depth, and watch (an async generator).

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, Conflict, FileEvent, NotFound, ResourceExhausted, Sandbox } from "sandboxd";
import { SESSION, errorReply, fakeDaemon } from "./fake.js";

const STAT = {
  name: "a.txt",
  path: "/workspace/a.txt",
  type: "file",
  size: 5,
  mode: "0644",
  permissions: "-rw-r--r--",
  owner: "sandbox",
  group: "sandbox",
  mtime: "2026-01-02T03:04:05Z",
};

/**
 * @param {(s: import("./fake.js").Seen) => import("./fake.js").Reply} route
 * @param {(d: Awaited<ReturnType<typeof fakeDaemon>>) => Promise<void>} fn
 */
async function withFake(route, fn) {
  const d = await fakeDaemon(route);
  try {
    await fn(d);
  } finally {
    await d.close();
  }
}

describe("file ops", () => {
  it("stats", () =>
    withFake(
      (s) => (s.query.get("path") === "a.txt" ? { body: STAT } : errorReply(404, "not_found", "no such file")),
      async (d) => {
        const c = new Client({ socket: d.socket });
        const st = await c.statFile("s1", "a.txt");
        assert.equal(st.permissions, "-rw-r--r--");
        assert.equal(st.owner, "sandbox");
        assert.equal(st.mtime?.getUTCFullYear(), 2026);
        assert.equal(st.symlinkTarget, null);
        assert.equal(d.seen[0].path, "/v1/sessions/s1/files/stat");
        await assert.rejects(c.statFile("s1", "nope"), NotFound);
      },
    ));

  it("makes folders and moves", () =>
    withFake(
      (s) => {
        if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
        if (s.path.endsWith("/mkdir")) return { status: 201, body: { ...STAT, type: "dir", created: true } };
        if (s.json().to === "taken") return errorReply(409, "conflict", "taken exists");
        return { body: { ...STAT, path: "/workspace/b.txt" } };
      },
      async (d) => {
        const sbx = await Sandbox.create({ socket: d.socket });
        const made = await sbx.files.mkdir("a/b");
        assert.equal(made.created, true);
        assert.ok(made.isDir);
        assert.deepEqual(d.seen[1].json(), { path: "a/b" });
        assert.equal((await sbx.files.move("a.txt", "b.txt")).path, "/workspace/b.txt");
        assert.deepEqual(d.seen[2].json(), { from: "a.txt", to: "b.txt" });
        await assert.rejects(sbx.files.move("a.txt", "taken"), Conflict);
      },
    ));

  it("lists to a depth", () =>
    withFake(
      () => ({ body: { entries: [{ name: "a", type: "dir", path: "/workspace/a" }, { name: "b", type: "file", path: "/workspace/a/b" }] } }),
      async (d) => {
        const got = await new Client({ socket: d.socket }).listFolder("s1", ".", 2);
        assert.deepEqual(
          got.map((e) => e.path),
          ["/workspace/a", "/workspace/a/b"],
        );
        assert.equal(d.seen[0].query.get("depth"), "2");
      },
    ));

  it("watches", () =>
    withFake(
      () => ({ lines: [{ type: "create", path: "/workspace/a" }, { type: "write", path: "/workspace/a" }] }),
      async (d) => {
        const got = [];
        for await (const ev of new Client({ socket: d.socket }).watchFiles("s1", ".", { recursive: true })) got.push(ev);
        assert.deepEqual(got, [new FileEvent({ type: "create", path: "/workspace/a" }), new FileEvent({ type: "write", path: "/workspace/a" })]);
        assert.equal(d.seen[0].query.get("recursive"), "1");
        assert.equal(d.seen[0].headers.accept, "application/x-ndjson");
      },
    ));

  it("ends a watch with its error line", () =>
    withFake(
      () => ({ lines: [{ type: "create", path: "/workspace/a" }, { type: "error", error: { code: "resource_exhausted", message: "too many" } }] }),
      async (d) => {
        const it = new Client({ socket: d.socket }).watchFiles("s1", ".");
        assert.equal((await it.next()).value?.type, "create");
        await assert.rejects(it.next(), ResourceExhausted);
      },
    ));

  it("refuses a watch as any call", () =>
    withFake(
      () => errorReply(409, "conflict", "start it first"),
      async (d) => {
        await assert.rejects(new Client({ socket: d.socket }).watchFiles("s1", ".").next(), Conflict);
      },
    ));
});
