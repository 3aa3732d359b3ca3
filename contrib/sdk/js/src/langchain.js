// sandboxd/langchain: the sandbox's tools as LangChain.js tools.
//
//     import { langchainTools } from "sandboxd/langchain";
//
//     const tools = langchainTools(sbx);                   // or a Toolbox, or {names: [...]}
//     const model = new ChatAnthropic({ model }).bindTools(tools);
//
// The tools are built from the same definitions as every other form
// (tools.json, JSON Schema that LangChain takes as it is) and run through a
// Toolbox, so a LangChain agent's model reads what any other does. This is
// the one module of the SDK that needs a package: @langchain/core, an
// optional peer dependency the main entry never imports.

import { ToolMessage } from "@langchain/core/messages";
import { DynamicStructuredTool, ToolInputParsingException } from "@langchain/core/tools";

import { Toolbox, definitions } from "./tools.js";

/**
 * A tool that answers a model's bad arguments as every sandboxd tool does,
 * with an invalid_argument result it can read and fix, where LangChain
 * would throw ToolInputParsingException out of the agent loop; and whose
 * ToolMessage says "error" when the call failed.
 */
export class SandboxdTool extends DynamicStructuredTool {
  /**
   * @param {import("@langchain/core/tools").DynamicStructuredToolInput<any, any> & {toolbox: Toolbox}} fields
   */
  constructor(fields) {
    const { toolbox, ...rest } = fields;
    super(rest);
    /** The Toolbox the calls run in. */
    this.toolbox = toolbox;
  }

  static lc_name() {
    return "SandboxdTool";
  }

  /**
   * @param {any} arg
   * @param {any} [configArg]
   * @param {string[]} [tags]
   * @returns {Promise<any>}
   */
  async call(arg, configArg, tags) {
    /** @type {any} */
    let out;
    try {
      out = await super.call(arg, configArg, tags);
    } catch (e) {
      if (!(e instanceof ToolInputParsingException)) throw e;
      const args = arg && arg.type === "tool_call" ? arg.args : arg;
      const id = (arg && arg.type === "tool_call" && arg.id) || (configArg && configArg.toolCall && configArg.toolCall.id);
      const r = await this.toolbox.run(this.name, args, { callId: id || null });
      if (!id) return r.text;
      return new ToolMessage({ status: "error", content: r.text, artifact: r, tool_call_id: id, name: this.name });
    }
    if (out instanceof ToolMessage && out.artifact && out.artifact.isError) out.status = "error";
    return out;
  }
}

/**
 * LangChain tools of a sandbox: run_python, run_shell, write_file,
 * read_file and install_packages (or those `names` picks), each a
 * StructuredTool whose schema is the tool's JSON Schema and whose answer is
 * the result's text, with the ToolResult (images, data) as its artifact.
 * Given a Sandbox, they share a new Toolbox on it (it stays the caller's);
 * given a Toolbox, they run in it, and closing it is the caller's.
 * @param {import("./sandbox.js").Sandbox | Toolbox} sandboxOrToolbox
 * @param {{names?: Iterable<string> | string | null, maxChars?: number, timeoutS?: number | null, indexUrl?: string | null}} [opts]
 * @returns {SandboxdTool[]}
 */
export function langchainTools(sandboxOrToolbox, opts = {}) {
  const { names, ...rest } = opts;
  /** @type {Toolbox} */
  let tb;
  if (sandboxOrToolbox instanceof Toolbox) {
    if (Object.keys(rest).some((k) => /** @type {any} */ (rest)[k] !== undefined)) {
      throw new TypeError("langchainTools: maxChars, timeoutS and indexUrl are the Toolbox's own: set them where it is made");
    }
    tb = sandboxOrToolbox;
  } else {
    if (!sandboxOrToolbox) throw new TypeError("langchainTools: give a Sandbox or a Toolbox");
    tb = new Toolbox(sandboxOrToolbox, { ...rest, names });
  }
  const chosen = definitions({ names: names ?? tb.names });
  for (const t of chosen) {
    if (!tb.names.includes(t.name)) throw new TypeError(`langchainTools: the Toolbox does not run ${t.name}: it runs ${tb.names.join(", ")}`);
  }
  return chosen.map(
    (t) =>
      new SandboxdTool({
        toolbox: tb,
        name: t.name,
        description: t.description,
        schema: t.input_schema,
        responseFormat: "content_and_artifact",
        func: async (/** @type {any} */ input, /** @type {any} */ _runManager, /** @type {any} */ config) => {
          const id = config && config.toolCall && config.toolCall.id;
          const r = await tb.run(t.name, input, { callId: id || null });
          return [r.text, r];
        },
      }),
  );
}
