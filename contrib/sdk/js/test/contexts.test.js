// Code contexts against the fake daemon: what create, list, delete and
// restart send and how their answers read, the context an execution names,
// and file metadata and permissions.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { CodeContext, InvalidArgument, NotFound, Sandbox } from "sandboxd";
import { EXECUTION, SESSION, errorReply, fakeDaemon } from "./fake.js";

const CTX = { id: "c1", language: "python", cwd: "/workspace", created_at: "2026-01-02T03:04:05Z" };

/**
 * @param {import("./fake.js").Seen} s
 * @returns {import("./fake.js").Reply}
 */
function route(s) {
  if (s.path === "/v1/sessions") return { status: 201, body: SESSION };
  if (s.path.endsWith("/contexts") && s.method === "POST") return { status: 201, body: { ...CTX, ...s.json() } };
  if (s.path.endsWith("/contexts")) return { body: { contexts: [{ ...CTX, id: "default" }, CTX] } };
  if (s.path.endsWith("/contexts/default") && s.method === "DELETE") return errorReply(400, "invalid_argument", "the default context is never deleted");
  if (s.path.includes("/contexts/gone")) return errorReply(404, "not_found", "no context gone in session");
  if (s.path.endsWith("/restart")) return { body: CTX };
  if (s.path.endsWith("/exec")) return s.json().wait === false ? { status: 202, body: { id: "e1" } } : { body: EXECUTION };
  if (s.path.endsWith("/files") && s.method === "PUT") return { status: 201, body: { path: "/workspace/a", size: 1 } };
  if (s.path.endsWith("/files/stat")) {
    return { body: { name: "a", path: "/workspace/a", type: "file", permissions: "-rw-r--r--", metadata: { author: "me" } } };
  }
  if (s.path.endsWith("/files")) return { body: { entries: [{ name: "a", type: "file", permissions: "-rw-r--r--", metadata: { author: "me" } }, { name: "b" }] } };
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

describe("code contexts", () => {
  it("creates, lists, restarts and deletes", () =>
    withFake(async (d, sbx) => {
      const base = `/v1/sessions/${sbx.id}/contexts`;
      const last = () => d.seen[d.seen.length - 1];
      const c = await sbx.contexts.create();
      assert.deepEqual([last().method, last().path, last().json()], ["POST", base, {}]);
      assert.ok(c instanceof CodeContext);
      assert.deepEqual([c.id, c.language, c.cwd, c.createdAt?.toISOString()], ["c1", "python", "/workspace", "2026-01-02T03:04:05.000Z"]);
      await sbx.contexts.create({ language: "shell", cwd: "sub", from: c });
      assert.deepEqual(last().json(), { language: "shell", cwd: "sub", from: "c1" });
      await sbx.contexts.create({ from: "default" });
      assert.deepEqual(last().json(), { from: "default" });
      assert.deepEqual((await sbx.contexts.list()).map((x) => x.id), ["default", "c1"]);
      assert.deepEqual([last().method, last().path], ["GET", base]);
      assert.equal((await sbx.contexts.restart(c)).id, "c1");
      assert.deepEqual([last().method, last().path], ["POST", `${base}/c1/restart`]);
      await sbx.contexts.delete("c1");
      assert.deepEqual([last().method, last().path], ["DELETE", `${base}/c1`]);
      await assert.rejects(sbx.contexts.delete("default"), InvalidArgument);
      await assert.rejects(sbx.contexts.restart("gone"), NotFound);
      await sbx.contexts.delete("a/b");
      assert.equal(last().path, `${base}/a%2Fb`);
      const n = d.seen.length;
      await assert.rejects(sbx.contexts.delete(""), TypeError);
      await assert.rejects(sbx.runCode("1", { context: /** @type {any} */ (7) }), TypeError);
      assert.equal(d.seen.length, n, "a bad call reached the daemon");
    }));

  it("runs code in the context it names", () =>
    withFake(async (d, sbx) => {
      const last = () => d.seen[d.seen.length - 1].json();
      await sbx.runCode("1", { context: new CodeContext({ id: "c1" }) });
      assert.deepEqual(last(), { language: "python", code: "1", context: "c1" });
      await sbx.commands.run("pwd", { context: "sh1" });
      assert.deepEqual(last(), { language: "shell", code: "pwd", context: "sh1" });
      assert.equal(await sbx.submit("1", { context: "c1" }), "e1");
      assert.deepEqual(last(), { language: "python", code: "1", context: "c1", wait: false });
      await sbx.commands.submit("pwd", { context: "c1" });
      assert.equal(last().context, "c1");
      await sbx.runCode("1");
      assert.equal("context" in last(), false);
    }));
});

describe("file metadata", () => {
  it("writes metadata as headers", () =>
    withFake(async (d, sbx) => {
      await sbx.files.write("a", "x", { metadata: { author: "me", kind: "note" } });
      const h = d.seen[d.seen.length - 1].headers;
      assert.deepEqual([h["x-sandboxd-meta-author"], h["x-sandboxd-meta-kind"]], ["me", "note"]);
      await sbx.files.write("a", "x");
      assert.deepEqual(Object.keys(d.seen[d.seen.length - 1].headers).filter((k) => k.startsWith("x-sandboxd-meta-")), []);
    }));

  it("reads permissions and metadata", () =>
    withFake(async (d, sbx) => {
      const st = await sbx.files.stat("a");
      assert.deepEqual([st.permissions, st.metadata], ["-rw-r--r--", { author: "me" }]);
      const [a, b] = await sbx.files.list(".");
      assert.deepEqual([a.permissions, a.metadata], ["-rw-r--r--", { author: "me" }]);
      assert.deepEqual([b.permissions, b.metadata], ["", {}]);
    }));
});
