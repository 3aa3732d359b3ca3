// Tests of the tools for agent frameworks against a real sandboxd, the one
// at $SANDBOXD_SOCKET, as sdk.test.js runs (integration/sdk_javascript_test.go):
// a model's turns, scripted, in the shapes of OpenAI's and Anthropic's
// APIs, run by a Toolbox. $SANDBOXD_TEST_INDEX_URL is the package index of
// the install test.
//
// Every test deletes the sessions it makes: the Go test checks none is left.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";

import { Sandbox, Toolbox } from "sandboxd";

const RUN = randomBytes(6).toString("hex");

const skip = process.env.SANDBOXD_SOCKET
  ? false
  : "SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_javascript_test.go starts one)";

/**
 * A Chat Completions tool call as a model sends it: arguments as JSON text.
 * @param {number} i @param {string} name @param {Record<string, any>} args
 */
const openaiCall = (i, name, args) => ({ id: `call_${i}`, type: "function", function: { name, arguments: JSON.stringify(args) } });

/**
 * A Messages API tool_use block: input as an object.
 * @param {number} i @param {string} name @param {Record<string, any>} args
 */
const toolUse = (i, name, args) => ({ type: "tool_use", id: `toolu_${i}`, name, input: args });

const PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nNone";
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe("tools in an OpenAI loop", { skip }, () => {
  it("runs Chat Completions turns", async () => {
    // The turns a model would take, each a list of parallel tool calls.
    const turns = [
      [["run_python", { code: "x = 6 * 7\nx" }]],
      [
        ["run_python", { code: "x + 1" }],
        ["run_shell", { command: "echo hi; pwd" }],
      ],
      [["write_file", { path: "notes/a.txt", content: "h\u00e9llo\n" }]],
      [
        ["read_file", { path: "notes/a.txt" }],
        ["run_shell", { command: "cat notes/a.txt | wc -c" }],
      ],
      [["run_python", { code: "1 / 0" }]],
      [["run_python", { code: PLOT }]],
    ];
    const labels = { run: RUN, loop: "openai" };
    /** @type {Array<Record<string, any>>} */
    const messages = [{ role: "user", content: "compute things" }];
    const tb = new Toolbox({ labels });
    try {
      assert.deepEqual(
        tb.openaiTools().map((t) => t.function.name),
        tb.names,
      );
      let n = 0;
      for (const turn of turns) {
        const calls = turn.map(([name, args]) => openaiCall(n++, String(name), /** @type {any} */ (args)));
        messages.push({ role: "assistant", content: null, tool_calls: calls });
        // Parallel calls, as an agent runs them: one interpreter takes them in turn.
        for (const m of await Promise.all(calls.map((c) => tb.handleOpenAI(c)))) messages.push(m);
      }
      const sid = tb.sandbox?.id;
      assert.deepEqual(
        (await Sandbox.list({ labels })).map((s) => s.id),
        [sid],
      );

      /** @type {Record<string, any>} */
      const answers = Object.fromEntries(messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, JSON.parse(m.content)]));
      assert.equal(Object.keys(answers).length, 8);
      assert.deepEqual(answers.call_0, { status: "ok", result: "42", stdout: "", stderr: "" });
      // The interpreter kept x between calls.
      assert.equal(answers.call_1.result, "43");
      assert.deepEqual([answers.call_2.exit_code, answers.call_2.stdout], [0, "hi\n/workspace\n"]);
      assert.deepEqual(answers.call_3, { path: "/workspace/notes/a.txt", size: 7 });
      assert.deepEqual(answers.call_4, { path: "/workspace/notes/a.txt", size: 7, encoding: "utf-8", content: "h\u00e9llo\n" });
      assert.equal(answers.call_5.stdout.trim(), "7");
      const err = answers.call_6;
      assert.deepEqual([err.status, err.error], ["error", { name: "ZeroDivisionError", value: "division by zero" }]);
      // The traceback is on stderr, and not given twice.
      assert.ok(err.stderr.includes("ZeroDivisionError: division by zero"));
      assert.ok(!("traceback" in err));
      assert.deepEqual([answers.call_7.status, answers.call_7.images], ["ok", ["image/png"]], JSON.stringify(answers.call_7));

      // Chat tool messages are text: the figure comes in a user message.
      const r = await tb.handle(openaiCall(99, "run_python", { code: PLOT }));
      const img = r.openaiImagesMessage();
      const url = img?.content[1].image_url.url;
      assert.ok(url.startsWith("data:image/png;base64,"));
      assert.deepEqual(Buffer.from(url.split(",")[1], "base64").subarray(0, 8), PNG_MAGIC);
    } finally {
      await tb.close();
    }
    // close() deleted the session the Toolbox made.
    assert.deepEqual(await Sandbox.list({ labels }), []);
  });

  it("runs Responses API items, and installs packages", async (t) => {
    const index = process.env.SANDBOXD_TEST_INDEX_URL;
    if (!index) {
      t.skip("SANDBOXD_TEST_INDEX_URL is not set: no package index to install from");
      return;
    }
    const tb = new Toolbox({ labels: { run: RUN } }, { indexUrl: index });
    try {
      assert.deepEqual(new Set(tb.openaiResponsesTools().map((t) => t.name)), new Set(tb.names));
      /** @param {number} i @param {string} name @param {Record<string, any>} args */
      const call = async (i, name, args) => {
        const out = await tb.handleOpenAIResponses({ type: "function_call", id: `fc_${i}`, call_id: `call_${i}`, name, arguments: JSON.stringify(args) });
        assert.deepEqual([out.type, out.call_id], ["function_call_output", `call_${i}`]);
        return out;
      };
      let got = JSON.parse(/** @type {string} */ ((await call(0, "install_packages", { packages: ["sbxdemo==1.0"] })).output));
      assert.deepEqual([got.status, got.exit_code], ["ok", 0], JSON.stringify(got));
      assert.ok(got.stdout.includes("Successfully installed sbxdemo-1.0"));
      got = JSON.parse(/** @type {string} */ ((await call(1, "run_python", { code: "import sbxdemo\nsbxdemo.VALUE" })).output));
      assert.equal(got.result, "'installed by the js sdk test'");
      // What pip would take as an option is refused before pip runs.
      got = JSON.parse(/** @type {string} */ ((await call(2, "install_packages", { packages: ["--index-url=http://evil/simple"] })).output));
      assert.equal(got.error.code, "invalid_argument");
      // A figure comes as an input_image beside the text.
      const parts = /** @type {any[]} */ ((await call(3, "run_python", { code: PLOT })).output);
      assert.deepEqual(
        parts.map((p) => p.type),
        ["input_text", "input_image"],
      );
      assert.ok(parts[1].image_url.startsWith("data:image/png;base64,iVBORw0KGgo"));
    } finally {
      await tb.close();
    }
  });
});

describe("tools in an Anthropic loop", { skip }, () => {
  it("runs Messages API turns", async () => {
    const blob = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const turns = [
      [toolUse(0, "run_python", { code: "import os\ndata = [1, 2, 3]\nos.getcwd()" })],
      [toolUse(1, "run_python", { code: "sum(data)" }), toolUse(2, "run_shell", { command: "ls /workspace; exit 2" })],
      [toolUse(3, "write_file", { path: "/tmp/b.bin", content: blob.toString("base64"), encoding: "base64" })],
      [toolUse(4, "read_file", { path: "/tmp/b.bin" }), toolUse(5, "read_file", { path: "/tmp" })],
      [toolUse(6, "run_python", { code: PLOT })],
      [toolUse(7, "browse", { url: "https://example.com" }), toolUse(8, "read_file", { file: "a.txt" })],
      [toolUse(9, "read_file", { path: "/etc/passwd" }), toolUse(10, "read_file", { path: "missing.txt" })],
    ];
    const sbx = await Sandbox.create({ labels: { run: RUN, loop: "anthropic" } });
    try {
      const tb = new Toolbox(sbx);
      /** @type {Array<Record<string, any>>} */
      const messages = [{ role: "user", content: "compute things" }];
      for (const turn of turns) {
        messages.push({ role: "assistant", content: turn });
        // All of one turn's results go in one user message.
        const results = [];
        for (const b of turn) results.push(await tb.handleAnthropic(b));
        messages.push({ role: "user", content: results });
      }
      /** @type {Record<string, any>} */
      const results = Object.fromEntries(
        messages
          .filter((m) => m.role === "user" && Array.isArray(m.content))
          .flatMap((m) => m.content)
          .map((b) => [b.tool_use_id, b]),
      );
      assert.equal(Object.keys(results).length, 11);
      for (const b of Object.values(results)) assert.equal(b.type, "tool_result");
      /** @param {number} i */
      const data = (i) => JSON.parse(results[`toolu_${i}`].content[0].text);
      /** @param {number} i */
      const isError = (i) => results[`toolu_${i}`].is_error;

      assert.deepEqual([data(0).result, isError(0)], ["'/workspace'", false]);
      assert.equal(data(1).result, "6");
      assert.deepEqual([data(2).exit_code, isError(2)], [2, true]);
      assert.deepEqual(data(3), { path: "/tmp/b.bin", size: 256 });
      assert.deepEqual([data(4).encoding, Buffer.from(data(4).content, "base64")], ["base64", blob]);
      assert.ok(data(5).entries.some((/** @type {any} */ e) => e.name === "b.bin" && e.type === "file" && e.size === 256));
      const img = results.toolu_6.content;
      assert.deepEqual(
        img.map((/** @type {any} */ c) => c.type),
        ["text", "image"],
      );
      assert.deepEqual([img[1].source.type, img[1].source.media_type], ["base64", "image/png"]);
      assert.deepEqual(Buffer.from(img[1].source.data, "base64").subarray(0, 8), PNG_MAGIC);
      // Mistakes of the model and the daemon's refusals are results, not exceptions.
      const cases = [
        // [call, error code]
        [7, "unknown_tool"],
        [8, "invalid_argument"],
        [9, "invalid_argument"],
        [10, "not_found"],
      ];
      for (const [i, code] of cases) {
        assert.equal(isError(Number(i)), true, `call ${i}`);
        assert.equal(data(Number(i)).error.code, code, `call ${i}`);
      }
      await tb.close();
      // close() leaves a sandbox it was given.
      assert.equal((await sbx.info()).status, "running");
    } finally {
      await sbx.kill();
    }
  });
});

describe("tools' session", { skip }, () => {
  it("bounds output, times out, and tells a stopped session", async () => {
    const tb = new Toolbox({ labels: { run: RUN } }, { timeoutS: 1, maxChars: 4000 });
    try {
      let r = await tb.run("run_shell", { command: "seq 1 100000" });
      assert.ok(r.text.length <= 4000);
      const shown = JSON.parse(r.text);
      assert.ok(shown.stdout.startsWith("1\n2\n3\n") && shown.stdout.endsWith("99999\n100000\n"));
      assert.ok(shown.note.includes("cut to fit the 4000 characters"));

      r = await tb.run("run_python", { code: "import time\ntime.sleep(30)" });
      assert.deepEqual([r.data.status, r.isError], ["timeout", true]);
      assert.ok(r.data.message.includes("ran past its time limit"));

      await (await tb.getSandbox()).stop();
      r = await tb.run("run_python", { code: "1" });
      assert.deepEqual([r.isError, r.errorCode], [true, "conflict"]);
      assert.ok(r.data.error.message);
    } finally {
      await tb.close();
    }
  });
});
