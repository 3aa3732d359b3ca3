// The fuller file calls against a real sandboxd ($SANDBOXD_SOCKET): stat,
// mkdir, move, a listing to a depth, and a watch that sees what the
// sandbox's code makes.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Conflict, InvalidArgument, Sandbox } from "sandboxd";

import { skip, withSandbox } from "./live.js";

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("file ops", { skip }, () => {
  it("stats, makes folders, moves and lists to a depth", () =>
    withSandbox(async (sbx) => {
      assert.equal((await sbx.files.mkdir("a/b")).created, true);
      assert.equal((await sbx.files.mkdir("a/b")).created, false);
      await sbx.commands.run("printf hi > a/b/f.txt");
      const st = await sbx.files.stat("a/b/f.txt");
      assert.deepEqual([st.type, st.size, st.owner, st.path], ["file", 2, "sandbox", "/workspace/a/b/f.txt"]);
      assert.equal((await sbx.files.move("a/b/f.txt", "a/g.txt")).path, "/workspace/a/g.txt");
      await sbx.files.write("a/h.txt", "x");
      await assert.rejects(sbx.files.move("a/g.txt", "a/h.txt"), Conflict);
      await assert.rejects(sbx.files.stat("/etc/passwd"), InvalidArgument);
      const paths = (await sbx.files.list("a", { depth: 2 })).map((e) => e.path).sort();
      assert.deepEqual(paths, ["/workspace/a/b", "/workspace/a/g.txt", "/workspace/a/h.txt"]);
    }));

  it("watches what the sandbox makes", () =>
    withSandbox(async (sbx) => {
      const watch = sbx.files.watch(".", { recursive: true });
      /** @type {Set<string>} */
      const seen = new Set();
      const collected = (async () => {
        for await (const ev of watch) {
          seen.add(`${ev.type} ${ev.path}`);
          if (seen.has("write /workspace/made.txt")) return;
        }
      })();
      // The request goes out with the generator's first step: upload until
      // the watch reports it, so that it is set.
      for (let i = 0; !seen.has("create /workspace/ready"); i++) {
        assert.ok(i < 150, "the watch never reported an upload");
        await sbx.files.write("ready", "x");
        await sleep(200);
      }
      await sbx.commands.run("echo one > made.txt; echo two >> made.txt");
      /** @type {NodeJS.Timeout | undefined} */
      let timer;
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no write seen: ${[...seen]}`)), 30_000);
      });
      try {
        await Promise.race([collected, late]);
      } finally {
        clearTimeout(timer);
      }
      assert.ok(seen.has("create /workspace/made.txt"));
    }));
});
