// Tests of sandboxd/langchain: the tools as LangChain.js sees them (against
// the fake daemon), and invoked as an agent does, against the real
// sandboxd at $SANDBOXD_SOCKET (integration/sdk_javascript_test.go starts
// one; without it those skip). @langchain/core is a devDependency here and
// an optional peer dependency of the package.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";

import { ToolMessage } from "@langchain/core/messages";
import { StructuredTool } from "@langchain/core/tools";
import { Client, Sandbox, Session, TOOL_NAMES, Toolbox, definitions } from "sandboxd";
import { SandboxdTool, langchainTools } from "sandboxd/langchain";

import { EXECUTION, SESSION, fakeDaemon } from "./fake.js";

const RUN = randomBytes(6).toString("hex");

const skip = process.env.SANDBOXD_SOCKET
  ? false
  : "SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_javascript_test.go starts one)";

/**
 * A ToolCall as a chat model's message carries it.
 * @param {string} id @param {string} name @param {Record<string, any>} args
 */
const toolCall = (id, name, args) => ({ id, name, args, type: /** @type {const} */ ("tool_call") });

describe("langchain tools", () => {
  it("are the definitions, as LangChain sees them", async () => {
    const fake = await fakeDaemon(() => ({ body: { ...EXECUTION, outputs: [], stdout: "", result: "2" } }));
    try {
      const sbx = new Sandbox(new Client({ socket: fake.socket }), Session.fromJSON(SESSION));
      const tools = langchainTools(sbx);
      assert.deepEqual(
        tools.map((t) => t.name),
        TOOL_NAMES,
      );
      const canon = new Map(definitions().map((t) => [t.name, t]));
      for (const t of tools) {
        assert.ok(t instanceof StructuredTool && t instanceof SandboxdTool);
        assert.deepEqual([t.description, t.schema], [canon.get(t.name)?.description, canon.get(t.name)?.input_schema]);
      }
      assert.deepEqual(
        langchainTools(sbx, { names: ["read_file", "run_shell"] }).map((t) => t.name),
        ["read_file", "run_shell"],
      );
      const tb = new Toolbox(sbx, { names: ["run_python"] });
      const [only] = langchainTools(tb);
      assert.deepEqual([only.name, only.toolbox], ["run_python", tb]);
      assert.throws(() => langchainTools(tb, { names: ["run_shell"] }), TypeError);
      assert.throws(() => langchainTools(tb, { maxChars: 5000 }), TypeError);

      // The answer is the Toolbox's text; a ToolCall gets a ToolMessage.
      assert.equal(await only.invoke({ code: "1 + 1" }), '{"status": "ok", "result": "2", "stdout": "", "stderr": ""}');
      const msg = await only.invoke(toolCall("call_1", "run_python", { code: "1 + 1" }));
      assert.ok(msg instanceof ToolMessage);
      assert.deepEqual([msg.tool_call_id, msg.name, msg.status, msg.artifact.data.result], ["call_1", "run_python", "success", "2"]);
      // Bad arguments are a result the model reads, as from every other form.
      assert.equal(
        await only.invoke({ code: 7 }),
        '{"error": {"code": "invalid_argument", "message": "run_python: `code` must be a string, not an integer"}}',
      );
      const bad = await only.invoke(toolCall("call_2", "run_python", { source: "1" }));
      assert.deepEqual([bad.status, bad.tool_call_id, JSON.parse(bad.content).error.code], ["error", "call_2", "invalid_argument"]);
    } finally {
      await fake.close();
    }
  });
});

describe("langchain tools on a sandbox", { skip }, () => {
  it("run in it", async () => {
    const sbx = await Sandbox.create({ labels: { run: RUN, loop: "langchain" } });
    try {
      const tools = Object.fromEntries(langchainTools(sbx).map((t) => [t.name, t]));
      assert.equal(await tools.run_python.invoke({ code: "x = 6 * 7\nx" }), '{"status": "ok", "result": "42", "stdout": "", "stderr": ""}');
      // The same interpreter, call after call.
      assert.equal(JSON.parse(await tools.run_python.invoke({ code: "x + 1" })).result, "43");
      await tools.write_file.invoke({ path: "a.txt", content: "from langchain\n" });
      assert.equal(JSON.parse(await tools.read_file.invoke({ path: "a.txt" })).content, "from langchain\n");
      assert.equal(JSON.parse(await tools.run_shell.invoke({ command: "cat a.txt" })).stdout, "from langchain\n");

      // As an agent's tool node calls it: a ToolCall in, a ToolMessage out,
      // with the figure in the artifact.
      const msg = await tools.run_python.invoke(toolCall("call_9", "run_python", { code: "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nNone" }));
      assert.ok(msg instanceof ToolMessage);
      assert.deepEqual([msg.tool_call_id, msg.status, JSON.parse(msg.content).images], ["call_9", "success", ["image/png"]]);
      assert.equal(msg.artifact.images[0].mime, "image/png");
      assert.ok(msg.artifact.images[0].png.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
      const failed = await tools.run_shell.invoke(toolCall("call_10", "run_shell", { command: "exit 3" }));
      assert.deepEqual([failed.status, JSON.parse(failed.content).exit_code], ["error", 3]);
      const missing = await tools.read_file.invoke(toolCall("call_11", "read_file", { path: "missing.txt" }));
      assert.deepEqual([missing.status, JSON.parse(missing.content).error.code], ["error", "not_found"]);
    } finally {
      await sbx.kill();
    }
  });
});
