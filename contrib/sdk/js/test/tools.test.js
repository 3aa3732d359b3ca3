// Tests of the tools for agent frameworks (src/tools.js) against a fake
// daemon, as the Python SDK's test_tools_unit.py does for its own: the
// definitions in each API's form, the check of a model's arguments, what a
// call answers in each API's message and how its text is bounded. The
// answers are the Python SDK's, to the character. No sandboxd needed;
// tools.sdk.test.js drives a real one.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import {
  Client,
  DEFAULT_MAX_CHARS,
  Sandbox,
  Session,
  TOOL_NAMES,
  TOOLS_VERSION,
  Toolbox,
  anthropicTools,
  definitions,
  dispatch,
  openaiResponsesTools,
  openaiTools,
} from "sandboxd";

import { SCHEMA_KEYWORDS } from "../src/toolschema.js";
import { EXECUTION, SESSION, errorReply, fakeDaemon } from "./fake.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SID = SESSION.id;
const PNG = Buffer.from("\x89PNG\r\n\x1a\nfake", "latin1").toString("base64");
// Both APIs' rule for a tool's name.
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** @param {Record<string, any>} [fields] */
function execution(fields = {}) {
  return { ...EXECUTION, outputs: [], result: null, stdout: "", stderr: "", ...fields };
}

/**
 * A fake daemon for the tools: a session, its files (kept in a Map) and
 * executions answered from a queue.
 */
async function daemon() {
  /** @type {Map<string, Buffer>} */
  const files = new Map();
  /** @type {import("./fake.js").Reply[]} */
  const answers = [];
  const fake = await fakeDaemon((s) => {
    if (s.path === "/v1/sessions" && s.method === "POST") return { status: 201, body: SESSION };
    if (s.path === `/v1/sessions/${SID}` && s.method === "DELETE") return { status: 204 };
    if (s.path.endsWith("/files")) {
      const p = s.query.get("path") || "";
      if (s.method === "PUT") {
        files.set(p, s.body);
        return { status: 201, body: { path: "/workspace/" + p, size: s.body.length } };
      }
      if (p === "dir") return { body: { entries: [{ name: "a.txt", type: "file", size: 3, mode: "-rw-r--r--" }] } };
      const b = files.get(p);
      return b ? { raw: b } : errorReply(404, "not_found", `no file ${p} in session ${SID}`);
    }
    if (s.path.endsWith("/exec") || s.path.endsWith("/packages")) return answers.shift() || { body: execution() };
    return errorReply(404, "not_found", "no such endpoint");
  });
  const sbx = new Sandbox(new Client({ socket: fake.socket }), Session.fromJSON(SESSION));
  return { fake, files, answers, sbx };
}

/**
 * Runs fn with the fake daemon of the tools, and stops it after.
 * @template T
 * @param {(d: Awaited<ReturnType<typeof daemon>>) => Promise<T>} fn
 */
async function withDaemon(fn) {
  const d = await daemon();
  try {
    return await fn(d);
  } finally {
    await d.fake.close();
  }
}

/**
 * Every keyword of a schema, nested ones too.
 * @param {any} s
 * @returns {Set<string>}
 */
function keywords(s) {
  const out = new Set(Object.keys(s));
  for (const [k, v] of Object.entries(s)) {
    if (k === "properties") for (const p of Object.values(v)) for (const w of keywords(p)) out.add(w);
    else if (k === "items") for (const w of keywords(v)) out.add(w);
  }
  return out;
}

describe("tool definitions", () => {
  it("are the Python SDK's tools.json, byte for byte", () => {
    const ours = fs.readFileSync(path.join(root, "src", "tools.json"));
    const doc = JSON.parse(ours.toString("utf8"));
    assert.equal(typeof doc.$comment, "string");
    assert.equal(doc.version, TOOLS_VERSION);
    assert.deepEqual(TOOL_NAMES, ["run_python", "run_shell", "write_file", "read_file", "install_packages"]);
    assert.deepEqual(
      doc.tools.map((/** @type {any} */ t) => t.name),
      TOOL_NAMES,
    );
    // In the source tree; TestJSSDK runs a copy of this package alone, and
    // compares the two files itself.
    const canon = path.join(root, "..", "python", "src", "sandboxd", "tools.json");
    if (fs.existsSync(canon)) {
      assert.ok(ours.equals(fs.readFileSync(canon)), `src/tools.json differs from ${canon}: copy it (cp ${canon} src/tools.json)`);
    }
  });

  it("leave the main entry without dependencies", () => {
    // Only sandboxd/langchain may import a package; node: modules are Node's.
    for (const f of fs.readdirSync(path.join(root, "src")).filter((f) => f.endsWith(".js") && f !== "langchain.js")) {
      const src = fs.readFileSync(path.join(root, "src", f), "utf8");
      for (const m of src.matchAll(/^(?!\s*\/\/).*from "([^"]+)";$/gm)) {
        assert.ok(m[1].startsWith("./") || m[1].startsWith("node:"), `src/${f} imports ${m[1]}`);
      }
    }
  });

  it("have schemas of the keywords the check knows", () => {
    /** @type {Record<string, string[]>} */
    const required = {
      run_python: ["code"],
      run_shell: ["command"],
      write_file: ["path", "content"],
      read_file: ["path"],
      install_packages: ["packages"],
    };
    for (const t of definitions()) {
      assert.deepEqual(Object.keys(t).sort(), ["description", "input_schema", "name"]);
      assert.match(t.name, NAME);
      assert.ok(t.description.length > 20 && t.description.length < 1024, t.name);
      const s = t.input_schema;
      assert.deepEqual([s.type, s.additionalProperties, s.required], ["object", false, required[t.name]]);
      for (const [k, p] of Object.entries(s.properties)) assert.ok(p.type && p.description, k);
      for (const k of keywords(s)) assert.ok(SCHEMA_KEYWORDS.includes(k), `${t.name} uses ${k}, which the check does not know`);
    }
    const text = definitions()
      .map((t) => t.description)
      .join(" ");
    for (const said of ["persistent interpreter", "between run_python calls", "no network access unless the session allows it", "/workspace"]) {
      assert.ok(text.includes(said), said);
    }
  });

  it("come in each API's form", () => {
    const canon = new Map(definitions().map((t) => [t.name, t]));
    for (const t of openaiTools()) {
      assert.deepEqual(Object.keys(t).sort(), ["function", "type"]);
      assert.equal(t.type, "function");
      assert.deepEqual(Object.keys(t.function).sort(), ["description", "name", "parameters"]);
      assert.deepEqual([t.function.description, t.function.parameters], [canon.get(t.function.name)?.description, canon.get(t.function.name)?.input_schema]);
    }
    for (const t of openaiResponsesTools()) {
      assert.deepEqual(Object.keys(t).sort(), ["description", "name", "parameters", "type"]);
      assert.deepEqual([t.type, t.parameters], ["function", canon.get(t.name)?.input_schema]);
    }
    for (const t of anthropicTools()) assert.deepEqual(t, canon.get(t.name));
  });

  it("come as a subset", () => {
    const cases = [
      // [names, the tools given, in that order]
      [undefined, TOOL_NAMES],
      [["read_file", "run_shell"], ["read_file", "run_shell"]],
      ["run_python", ["run_python"]],
      [new Set(["write_file"]), ["write_file"]],
    ];
    for (const [names, want] of cases) {
      assert.deepEqual(
        openaiTools({ names: /** @type {any} */ (names) }).map((t) => t.function.name),
        want,
      );
    }
    assert.deepEqual(
      anthropicTools({ names: ["install_packages"] }).map((t) => t.name),
      ["install_packages"],
    );
    assert.deepEqual(
      openaiResponsesTools({ names: ["read_file"] }).map((t) => t.name),
      ["read_file"],
    );
    assert.throws(() => anthropicTools({ names: /** @type {any} */ (["run_python", "browse"]) }), TypeError);
    assert.throws(() => new Toolbox({}, { names: /** @type {any} */ (["rm_rf"]) }), TypeError);
  });

  it("are copies", () => {
    openaiTools()[0].function.parameters.properties = {};
    anthropicTools()[0].input_schema.required.push("x");
    assert.deepEqual(definitions({ names: ["run_python"] })[0].input_schema.required, ["code"]);
    assert.ok("code" in openaiTools()[0].function.parameters.properties);
  });
});

describe("tool arguments", () => {
  it("refuses what does not fit, before the daemon sees it", () =>
    withDaemon(async (d) => {
      const cases = [
        // [tool, arguments, error code, in the message]
        ["browse", { url: "x" }, "unknown_tool", "the tools are run_python, run_shell"],
        ["", null, "unknown_tool", "there is no tool ''"],
        ["run_python", '{"code": "1"', "invalid_argument", "not valid JSON"],
        ["run_python", "[1]", "invalid_argument", "must be a JSON object"],
        ["run_python", null, "invalid_argument", "missing argument `code`"],
        ["run_python", "", "invalid_argument", "missing argument `code`"],
        ["run_python", { code: 1 }, "invalid_argument", "`code` must be a string, not an integer"],
        ["run_python", { code: "1", timeout: 5 }, "invalid_argument", "unknown argument `timeout`"],
        ["run_shell", { command: "" }, "invalid_argument", "`command` must not be empty"],
        ["install_packages", { packages: "numpy" }, "invalid_argument", "`packages` must be an array, not a string"],
        ["install_packages", { packages: [] }, "invalid_argument", "at least 1"],
        ["install_packages", { packages: ["numpy", true] }, "invalid_argument", "`packages`[1] must be a string, not true or false"],
        ["write_file", { path: "a", content: "x", encoding: "hex" }, "invalid_argument", 'one of "utf-8", "base64"'],
        ["write_file", { path: "a", content: "%%%", encoding: "base64" }, "invalid_argument", "not valid base64"],
        ["write_file", { path: "a", content: "abc", encoding: "base64" }, "invalid_argument", "Incorrect padding"],
        ["write_file", { path: "a" }, "invalid_argument", "missing argument `content`"],
        ["write_file", { path: "a", content: "\ud800" }, "invalid_argument", "not valid UTF-8 text (surrogates not allowed at 0)"],
      ];
      const tb = new Toolbox(d.sbx);
      for (const [name, args, code, said] of cases) {
        const r = await tb.run(String(name), /** @type {any} */ (args));
        const msg = `${name} ${JSON.stringify(args)}`;
        assert.equal(r.isError, true, msg);
        assert.deepEqual([r.errorCode, r.data.error.code], [code, code], msg);
        assert.ok(r.data.error.message.includes(said), `${msg}: ${r.data.error.message}`);
        assert.deepEqual(JSON.parse(r.text), r.data);
      }
      assert.deepEqual(d.fake.seen, [], "a refused call reached the daemon");
    }));

  it("runs only a subset's tools", () =>
    withDaemon(async (d) => {
      const tb = new Toolbox(d.sbx, { names: ["read_file"] });
      assert.deepEqual(
        tb.anthropicTools().map((t) => t.name),
        ["read_file"],
      );
      const r = await tb.run("run_shell", { command: "rm -rf ." });
      assert.deepEqual([r.errorCode, r.data.error.message], ["unknown_tool", "there is no tool 'run_shell': the tools are read_file"]);
    }));

  it("gives the daemon's errors with their codes", () =>
    withDaemon(async (d) => {
      d.answers.push(errorReply(409, "conflict", `session ${SID} is stopped: start it first`));
      let r = await new Toolbox(d.sbx).run("run_python", { code: "1" });
      assert.deepEqual([r.isError, r.errorCode], [true, "conflict"]);
      assert.deepEqual(r.data, { error: { code: "conflict", message: `session ${SID} is stopped: start it first` } });
      assert.equal(/** @type {any} */ (r.exception).status, 409);
      r = await dispatch(d.sbx, "read_file", { path: "nothing.txt" });
      assert.deepEqual([r.isError, r.errorCode], [true, "not_found"]);
    }));
});

describe("tool calls", () => {
  it("run Python, with figures in each API's message", () =>
    withDaemon(async (d) => {
      d.answers.push({ body: execution({ result: "42", stdout: "hi\n", outputs: [{ mime: "image/png", data: PNG }] }) });
      const r = await new Toolbox(d.sbx, { timeoutS: 7 }).run("run_python", '{"code": "print(\'hi\')\\n6 * 7"}', { callId: "call_1" });
      assert.deepEqual(d.fake.seen[0].json(), { language: "python", code: "print('hi')\n6 * 7", timeout_s: 7 });
      assert.equal(r.isError, false);
      assert.deepEqual(r.data, { status: "ok", result: "42", stdout: "hi\n", stderr: "", images: ["image/png"] });
      // Python's json.dumps, to the character.
      assert.equal(r.text, '{"status": "ok", "result": "42", "stdout": "hi\\n", "stderr": "", "images": ["image/png"]}');
      assert.deepEqual(
        r.images.map((o) => [o.mime, o.data]),
        [["image/png", PNG]],
      );
      assert.deepEqual(r.toOpenAI(), { role: "tool", tool_call_id: "call_1", content: r.text });
      assert.deepEqual(r.toOpenAIResponses(), {
        type: "function_call_output",
        call_id: "call_1",
        output: [
          { type: "input_text", text: r.text },
          { type: "input_image", image_url: "data:image/png;base64," + PNG, detail: "auto" },
        ],
      });
      assert.deepEqual(r.toAnthropic(), {
        type: "tool_result",
        tool_use_id: "call_1",
        content: [
          { type: "text", text: r.text },
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
        ],
        is_error: false,
      });
      assert.deepEqual(r.openaiImagesMessage(), {
        role: "user",
        content: [
          { type: "text", text: "The images made by the run_python call call_1:" },
          { type: "image_url", image_url: { url: "data:image/png;base64," + PNG } },
        ],
      });
      assert.deepEqual(JSON.parse(JSON.stringify(r)).images, [{ mime: "image/png", data: PNG }]);
    }));

  it("tell a Python exception", () =>
    withDaemon(async (d) => {
      const tb = 'Traceback (most recent call last):\n  File "<cell>", line 1\nZeroDivisionError: division by zero\n';
      d.answers.push(
        { body: execution({ status: "error", exit_code: 1, stderr: tb, error: { name: "ZeroDivisionError", value: "division by zero", traceback: tb } }) },
        { body: execution({ status: "error", exit_code: 1, error: { name: "E", value: "v", traceback: "Traceback: E" } }) },
      );
      let r = await new Toolbox(d.sbx).run("run_python", { code: "1/0" }, { callId: "c" });
      assert.deepEqual(r.data, { status: "error", result: null, stdout: "", stderr: tb, error: { name: "ZeroDivisionError", value: "division by zero" } });
      assert.ok(r.isError && r.toAnthropic().is_error);
      assert.equal(r.errorCode, null);
      assert.equal(r.toOpenAIResponses().output, r.text);
      assert.equal(r.openaiImagesMessage(), null);
      // A traceback that stderr lacks is given.
      r = await new Toolbox(d.sbx).run("run_python", { code: "raise E" });
      assert.equal(r.data.traceback, "Traceback: E");
    }));

  it("say how an execution ended", () =>
    withDaemon(async (d) => {
      const cases = [
        // [execution, the message]
        [{ status: "timeout", state_reset: true }, "stopped: it ran past its time limit; the interpreter was restarted: variables and imports are gone, files stay"],
        [{ status: "killed", exit_code: 137 }, "killed: it went over a limit of the sandbox (most often memory)"],
        [{ status: "lost", error: { name: "Lost", value: "the sandbox was gone" } }, "its output is lost: the sandbox's daemon restarted while it ran; the sandbox was gone"],
        [{ status: "ok", truncated: true }, "the sandbox cut the output at its own limit"],
      ];
      for (const [fields, msg] of cases) {
        const f = /** @type {Record<string, any>} */ (fields);
        d.answers.push({ body: execution(f) });
        const r = await new Toolbox(d.sbx).run("run_python", { code: "x" });
        assert.equal(r.data.message, msg);
        assert.ok(!("error" in r.data));
        assert.equal(r.isError, f.status !== "ok");
      }
    }));

  it("run shell commands and install packages", () =>
    withDaemon(async (d) => {
      d.answers.push({ body: execution({ language: "shell", status: "error", exit_code: 3, stdout: "out\n" }) });
      let r = await new Toolbox(d.sbx).run("run_shell", { command: "echo out; exit 3" });
      assert.deepEqual(d.fake.seen[0].json(), { language: "shell", code: "echo out; exit 3" });
      assert.deepEqual([r.data, r.isError], [{ status: "error", exit_code: 3, stdout: "out\n", stderr: "" }, true]);

      d.answers.push({ body: execution({ language: "shell", stdout: "Successfully installed sbxdemo-1.0\n" }) });
      r = await new Toolbox(d.sbx, { indexUrl: "http://index.test/simple" }).run("install_packages", { packages: ["sbxdemo==1.0"] });
      assert.deepEqual(
        [d.fake.seen[1].path, d.fake.seen[1].json()],
        [`/v1/sessions/${SID}/packages`, { packages: ["sbxdemo==1.0"], index_url: "http://index.test/simple" }],
      );
      assert.deepEqual([r.data.status, r.data.exit_code, r.isError], ["ok", 0, false]);
    }));

  it("write and read files", () =>
    withDaemon(async (d) => {
      const tb = new Toolbox(d.sbx);
      let r = await tb.run("write_file", { path: "notes/a.txt", content: "h\u00e9llo\n" });
      assert.deepEqual([r.data, d.files.get("notes/a.txt")], [{ path: "/workspace/notes/a.txt", size: 7 }, Buffer.from("h\u00e9llo\n")]);
      const blob = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const b64 = blob.toString("base64");
      // Models wrap long base64 in lines.
      r = await tb.run("write_file", { path: "b.bin", content: b64.slice(0, 40) + "\n" + b64.slice(40), encoding: "base64" });
      assert.deepEqual([r.data.size, d.files.get("b.bin")], [256, blob]);

      r = await tb.run("read_file", { path: "notes/a.txt" });
      assert.deepEqual(r.data, { path: "/workspace/notes/a.txt", size: 7, encoding: "utf-8", content: "h\u00e9llo\n" });
      r = await tb.run("read_file", { path: "b.bin" });
      assert.deepEqual([r.data.encoding, Buffer.from(r.data.content, "base64")], ["base64", blob]);
      d.files.set("nul.txt", Buffer.from("a\x00b"));
      assert.equal((await tb.run("read_file", { path: "nul.txt" })).data.encoding, "base64");
      // A byte order mark stays, as Python's decoder keeps it.
      d.files.set("bom.txt", Buffer.from("\ufeffx"));
      assert.equal((await tb.run("read_file", { path: "bom.txt" })).data.content, "\ufeffx");
      r = await tb.run("read_file", { path: "dir" });
      assert.deepEqual(r.data, { path: "/workspace/dir", type: "folder", entries: [{ name: "a.txt", type: "file", size: 3 }] });
      r = await tb.run("read_file", { path: "/tmp/../tmp/x" });
      assert.deepEqual([r.errorCode, r.isError], ["not_found", true]);
      // The path shown is resolved as Python's posixpath.normpath does.
      d.files.set("./sub//../n.txt", Buffer.from("n"));
      r = await tb.run("read_file", { path: "./sub//../n.txt" });
      assert.equal(r.data.path, "/workspace/n.txt");
    }));
});

describe("tool call shapes", () => {
  it("are told apart and answered in their API's message", () =>
    withDaemon(async (d) => {
      const tb = new Toolbox(d.sbx);
      for (let i = 0; i < 8; i++) d.answers.push({ body: execution({ result: "2" }) });
      const chat = { id: "call_a", type: "function", function: { name: "run_python", arguments: '{"code": "1 + 1"}' } };
      assert.deepEqual(await tb.handleOpenAI(chat), {
        role: "tool",
        tool_call_id: "call_a",
        content: '{"status": "ok", "result": "2", "stdout": "", "stderr": ""}',
      });
      const resp = { type: "function_call", id: "fc_1", call_id: "call_c", name: "run_python", arguments: '{"code": "1 + 1"}' };
      assert.deepEqual(await tb.handleOpenAIResponses(resp), {
        type: "function_call_output",
        call_id: "call_c",
        output: '{"status": "ok", "result": "2", "stdout": "", "stderr": ""}',
      });
      const use = { type: "tool_use", id: "toolu_d", name: "run_python", input: { code: "1 + 1" } };
      let got = await tb.handleAnthropic(use);
      assert.deepEqual([got.type, got.tool_use_id, got.is_error, got.content[0].type], ["tool_result", "toolu_d", false, "text"]);
      got = await tb.handleAnthropic({ type: "tool_use", id: "toolu_e", name: "run_shell", input: {} });
      assert.deepEqual([got.tool_use_id, got.is_error], ["toolu_e", true]);
      assert.ok(got.content[0].text.includes("missing argument `command`"));

      for (const [call, cid] of [
        [chat, "call_a"],
        [resp, "call_c"],
        [use, "toolu_d"],
      ]) {
        const r = await tb.handle(call);
        assert.deepEqual([r.callId, r.data.result], [cid, "2"]);
      }
      const r = await tb.handle({ what: "ever" });
      assert.equal(r.errorCode, "invalid_argument");
      assert.throws(() => r.toOpenAI(), TypeError);
    }));
});

describe("tool result text", () => {
  it("is cut to maxChars, keeping both ends of output", () =>
    withDaemon(async (d) => {
      const cases = [
        // [tool, execution, fields cut]
        ["run_shell", { stdout: Array.from({ length: 20000 }, (_, i) => `line ${i}\n`).join(""), stderr: "warn\n" }, ["stdout"]],
        ["run_shell", { stdout: "o".repeat(30000), stderr: "e".repeat(30000) }, ["stdout", "stderr"]],
        // Control characters take six characters each in JSON.
        ["run_shell", { stdout: "\x01".repeat(30000) }, ["stdout"]],
        ["run_python", { result: "'" + "r".repeat(50000) + "'", stdout: "small" }, ["result"]],
        // Python counts code points, not UTF-16 units.
        ["run_shell", { stdout: "\u{1F600}".repeat(5000) }, ["stdout"]],
      ];
      for (const [tool, fields, cut] of cases) {
        const f = /** @type {Record<string, string>} */ (fields);
        d.answers.push({ body: execution(f) });
        const r = await new Toolbox(d.sbx, { maxChars: 3000 }).run(String(tool), tool === "run_python" ? { code: "x" } : { command: "x" });
        const chars = [...r.text].length;
        assert.ok(chars <= 3000 && chars > 2000, `${chars} characters`);
        assert.deepEqual(r.cut, cut);
        const shown = JSON.parse(r.text);
        assert.ok(shown.note.includes("cut to fit the 3000 characters"));
        for (const k of /** @type {string[]} */ (cut)) {
          assert.ok(shown[k].includes("characters cut …]"));
          // Both ends of an output are kept.
          assert.ok(shown[k].startsWith(f[k].slice(0, 20)) && shown[k].endsWith(f[k].slice(-4)), k);
        }
        // data keeps it all.
        assert.equal(r.data.stdout, f.stdout ?? "");
      }
    }));

  it("keeps a file's start", () =>
    withDaemon(async (d) => {
      d.files.set("big.txt", Buffer.from(Array.from({ length: 10000 }, (_, i) => `row ${i}\n`).join("")));
      const r = await new Toolbox(d.sbx, { maxChars: 2000 }).run("read_file", { path: "big.txt" });
      const shown = JSON.parse(r.text);
      assert.ok(r.text.length <= 2000);
      assert.ok(shown.content.startsWith("row 0\nrow 1\n"));
      assert.match(shown.content, /\n\[… \d+ more characters cut\]$/);
      assert.deepEqual([shown.size, r.cut], [d.files.get("big.txt")?.length, ["content"]]);
    }));

  it("is whole when it fits", () =>
    withDaemon(async (d) => {
      d.answers.push({ body: execution({ stdout: "x".repeat(19000) }) });
      const r = await new Toolbox(d.sbx).run("run_shell", { command: "x" });
      assert.deepEqual([r.cut, JSON.parse(r.text).stdout], [[], "x".repeat(19000)]);
      assert.equal(DEFAULT_MAX_CHARS, 20000);
      assert.throws(() => new Toolbox(d.sbx, { maxChars: 10 }), RangeError);
    }));
});

describe("tool session", () => {
  it("is made on first use, once, and deleted by close", () =>
    withDaemon(async (d) => {
      const tb = new Toolbox({ socket: d.fake.socket, memoryMb: 256, labels: { agent: "a1" } });
      assert.equal(tb.openaiTools().length, 5);
      assert.deepEqual(d.fake.seen, [], "offering the tools made a session");
      assert.equal(tb.sandbox, null);
      // Parallel tool calls share the one session.
      await Promise.all([tb.run("run_shell", { command: "ls" }), tb.run("run_shell", { command: "ls" })]);
      await tb.run("run_shell", { command: "ls" });
      assert.deepEqual([d.fake.seen[0].method, d.fake.seen[0].path], ["POST", "/v1/sessions"]);
      assert.deepEqual(d.fake.seen[0].json(), { memory_mb: 256, labels: { agent: "a1" } });
      assert.equal(d.fake.seen.filter((s) => s.path === "/v1/sessions").length, 1);
      assert.equal(tb.sandbox?.id, SID);
      await tb[Symbol.asyncDispose]();
      const last = d.fake.seen[d.fake.seen.length - 1];
      assert.deepEqual([last.method, last.path], ["DELETE", `/v1/sessions/${SID}`]);
      const n = d.fake.seen.length;
      await tb.close();
      assert.equal(d.fake.seen.length, n);
      assert.equal(tb.sandbox, null);
    }));

  it("given is kept", () =>
    withDaemon(async (d) => {
      const tb = new Toolbox(d.sbx);
      await tb.run("run_python", { code: "1" });
      await tb.close();
      assert.ok(!d.fake.seen.some((s) => s.method === "DELETE"));
      assert.equal(tb.sandbox, d.sbx);
      assert.throws(() => new Toolbox(/** @type {any} */ ({ memroyMb: 1 })), TypeError);
      assert.throws(() => new Toolbox(/** @type {any} */ ({ names: ["run_python"] })), TypeError);
    }));

  it("that cannot be made is an error result, tried again", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandboxd-js-"));
    try {
      const tb = new Toolbox({ socket: path.join(dir, "none.sock") });
      for (const id of ["c1", "c2"]) {
        const r = await tb.run("run_python", { code: "1" }, { callId: id });
        assert.deepEqual([r.isError, r.errorCode, r.callId], [true, "unavailable", id]);
        assert.match(r.data.error.message, /is it running\?/);
      }
      await tb.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
