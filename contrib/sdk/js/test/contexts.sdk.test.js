// Code contexts against a real sandboxd ($SANDBOXD_SOCKET): two contexts
// keep their own variables, a copy of default starts with default's and
// then diverges, restart clears one, a deleted one is NotFound; a shell
// context's folder; file metadata written and read back.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { NotFound, Sandbox } from "sandboxd";

import { skip, withSandbox } from "./live.js";

describe("code contexts on a real daemon", { skip }, () => {
  it("keeps contexts apart, copies from default, restarts and deletes", () =>
    withSandbox(async (sbx) => {
      assert.equal((await sbx.runCode("x = 'default'")).status, "ok");
      const a = await sbx.contexts.create();
      const b = await sbx.contexts.create();
      assert.deepEqual([a.language, a.cwd], ["python", "/workspace"]);
      await sbx.runCode("x = 'a'", { context: a });
      await sbx.runCode("x = 'b'", { context: b.id });
      assert.equal((await sbx.runCode("x", { context: a })).result, "'a'");
      assert.equal((await sbx.runCode("x", { context: b })).result, "'b'");
      assert.equal((await sbx.runCode("x")).result, "'default'");

      // A copy of default has default's variables, then its own.
      const c = await sbx.contexts.create({ from: "default" });
      assert.equal((await sbx.runCode("x", { context: c })).result, "'default'");
      await sbx.runCode("x = 'copy'", { context: c });
      assert.equal((await sbx.runCode("x", { context: c })).result, "'copy'");
      assert.equal((await sbx.runCode("x")).result, "'default'");

      const ids = (await sbx.contexts.list()).map((x) => x.id);
      assert.equal(ids[0], "default");
      assert.deepEqual([...ids].sort(), ["default", a.id, b.id, c.id].sort());

      assert.equal((await sbx.contexts.restart(a)).id, a.id);
      const e = await sbx.runCode("x", { context: a });
      assert.deepEqual([e.status, e.error && e.error.name], ["error", "NameError"]);
      assert.equal((await sbx.runCode("x", { context: b })).result, "'b'");

      await sbx.contexts.delete(b);
      await assert.rejects(sbx.runCode("x", { context: b }), NotFound);
      assert.ok(!(await sbx.contexts.list()).some((x) => x.id === b.id));
    }));

  it("runs shell commands in a shell context's folder", () =>
    withSandbox(async (sbx) => {
      await sbx.files.mkdir("sub");
      const sh = await sbx.contexts.create({ language: "shell", cwd: "sub" });
      assert.deepEqual([sh.language, sh.cwd], ["shell", "/workspace/sub"]);
      assert.equal((await sbx.commands.run("pwd", { context: sh })).stdout.trim(), "/workspace/sub");
    }));

  it("writes file metadata and reads it back", () =>
    withSandbox(async (sbx) => {
      await sbx.files.write("m.txt", "hi", { metadata: { author: "sdk" } });
      const st = await sbx.files.stat("m.txt");
      assert.deepEqual([st.metadata, st.permissions[0]], [{ author: "sdk" }, "-"]);
      const ent = (await sbx.files.list(".")).find((f) => f.name === "m.txt");
      assert.deepEqual(ent && ent.metadata, { author: "sdk" });
      assert.ok(ent && ent.permissions.startsWith("-rw"));
    }));
});
