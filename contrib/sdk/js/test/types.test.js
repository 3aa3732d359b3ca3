// The type declarations (index.d.ts) against the code: TypeScript (a
// devDependency, installed by `npm ci`) type-checks test/usage.ts against
// them, and the sources' own JSDoc types; and every value src/index.js
// (and src/langchain.js) exports is declared, and nothing more.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import * as sandboxd from "sandboxd";
import * as langchain from "sandboxd/langchain";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
const skip = fs.existsSync(tsc) ? false : "typescript is not installed: npm ci first";

// What a TypeScript project for Node 18 and later that uses the SDK sets.
const STRICT = [
  "--noEmit",
  "--strict",
  "--module",
  "nodenext",
  "--moduleResolution",
  "nodenext",
  "--target",
  "es2022",
  "--lib",
  "es2022,esnext.disposable",
  "--types",
  "node",
];

/** @param {string[]} args */
async function typecheck(args) {
  try {
    await promisify(execFile)(process.execPath, [tsc, ...STRICT, ...args], { cwd: root });
  } catch (err) {
    const e = /** @type {{stdout?: string, stderr?: string}} */ (err);
    assert.fail(`tsc ${args.join(" ")}:\n${e.stdout || ""}${e.stderr || ""}`);
  }
}

describe("types", () => {
  it("type-checks a typed use against index.d.ts", { skip }, () => typecheck([path.join("test", "usage.ts")]));

  it("type-checks the sources' JSDoc", { skip }, () =>
    typecheck(["--allowJs", "--checkJs", ...fs
      .readdirSync(path.join(root, "src"))
      .filter((f) => f.endsWith(".js"))
      .map((f) => path.join("src", f))]));

  const entries = [
    // [declarations, the module]
    ["index.d.ts", sandboxd],
    ["langchain.d.ts", langchain],
  ];
  for (const [file, mod] of entries) {
    it(`declares every value ${file} stands for`, () => {
      const dts = fs.readFileSync(path.join(root, String(file)), "utf8");
      const declared = [...dts.matchAll(/^export declare (?:const|class|function) (\w+)/gm)].map((m) => m[1]).sort();
      assert.deepEqual(declared, Object.keys(mod).sort());
    });
  }
});
