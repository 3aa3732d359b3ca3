// Tools for agent frameworks: a sandbox as function-calling tools.
//
//     import { Toolbox } from "sandboxd";
//
//     const tb = new Toolbox({ labels: { agent: "a1" } });   // the session is made on first use
//     const resp = await openai.chat.completions.create({ model, messages, tools: tb.openaiTools() });
//     for (const call of resp.choices[0].message.tool_calls ?? []) messages.push(await tb.handleOpenAI(call));
//     await tb.close();                                         // deletes the session it made
//
// Five tools: run_python, run_shell, write_file, read_file and
// install_packages. Their names, descriptions and input schemas are in
// tools.json, beside this module, a copy of the Python SDK's (the one
// definition every SDK uses); openaiTools, openaiResponsesTools and
// anthropicTools give them in each API's form. A Toolbox runs a model's
// call against a Sandbox and answers the tool-result message of the API
// the call came from, as the Python SDK's Toolbox does, to the character.
// A call never rejects: an unknown tool, bad arguments, a daemon error or
// code that failed is an error result the model reads, so an agent loop
// goes on.

import { SandboxdError } from "./errors.js";
import { STATUS_INTERRUPTED, STATUS_KILLED, STATUS_LOST, STATUS_OK, STATUS_TIMEOUT } from "./models.js";
import { sessionRequest } from "./requests.js";
import { Sandbox } from "./sandbox.js";
import { DEFAULT_MAX_CHARS, MAX_ENTRIES, MIN_MAX_CHARS, ToolResult, bound } from "./toolresult.js";
import { TOOLS, VERSION, codePoints, pick, problem, pyRepr, slice } from "./toolschema.js";

export { DEFAULT_MAX_CHARS, ToolResult };

/** run_python, run_shell, write_file, read_file, install_packages. */
export const TOOL_NAMES = Object.freeze([...TOOLS.keys()]);

/** The version of tools.json: it grows when a tool or its arguments change. */
export const TOOLS_VERSION = VERSION;

/**
 * @typedef {Iterable<string> | string | null | undefined} Names
 * @typedef {import("./toolschema.js").ToolDefinition} ToolDefinition
 * @typedef {{names?: Names}} NamesOption
 */

/**
 * The tools as tools.json has them: {name, description, input_schema},
 * all or those named, in that order (a TypeError for a name that is none).
 * @param {NamesOption} [opts]
 */
export function definitions(opts = {}) {
  return pick(opts.names);
}

/**
 * The tools for OpenAI's Chat Completions (`tools:`):
 * {type: "function", function: {name, description, parameters}}.
 * @param {NamesOption} [opts]
 */
export function openaiTools(opts = {}) {
  return pick(opts.names).map((t) => ({
    type: /** @type {const} */ ("function"),
    function: { name: t.name, description: t.description, parameters: t.input_schema },
  }));
}

/**
 * The tools for OpenAI's Responses API, whose form is flat:
 * {type: "function", name, description, parameters}.
 * @param {NamesOption} [opts]
 */
export function openaiResponsesTools(opts = {}) {
  return pick(opts.names).map((t) => ({
    type: /** @type {const} */ ("function"),
    name: t.name,
    description: t.description,
    parameters: t.input_schema,
  }));
}

/**
 * The tools for Anthropic's Messages API: {name, description, input_schema}.
 * @param {NamesOption} [opts]
 */
export function anthropicTools(opts = {}) {
  return pick(opts.names).map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema }));
}

/**
 * A field of a call, whether a plain object (the API's JSON) or an SDK's
 * object with properties.
 * @param {any} obj
 * @param {string} key
 */
const get = (obj, key) => (obj !== null && typeof obj === "object" ? obj[key] : undefined);

/** A call that cannot run as the model gave it; its message is for the model. */
class Refused extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// What the model is told of an execution that did not simply end.
/** @type {Record<string, string>} */
const STATUS_NOTES = {
  [STATUS_TIMEOUT]: "stopped: it ran past its time limit",
  [STATUS_KILLED]: "killed: it went over a limit of the sandbox (most often memory)",
  [STATUS_INTERRUPTED]: "interrupted on request",
  [STATUS_LOST]: "its output is lost: the sandbox's daemon restarted while it ran",
};

// An exception's message is one line for the model; its full text is in the traceback.
const MAX_ERROR_VALUE = 2000;

// The options of Sandbox.create that are not fields of the session.
const CONNECTION_KEYS = ["socket", "requestTimeoutMs", "client", "signal", "idempotencyKey"];

const asyncDispose = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");

/**
 * @param {unknown} x
 * @returns {x is Sandbox}
 */
function isSandbox(x) {
  return x instanceof Sandbox || (!!x && typeof x === "object" && typeof (/** @type {any} */ (x).runCode) === "function");
}

/**
 * @typedef {{names?: Names, maxChars?: number, timeoutS?: number | null, indexUrl?: string | null}} ToolboxOptions
 * @typedef {Record<string, any> & {socket?: string, requestTimeoutMs?: number | null, client?: import("./client.js").Client}} CreateOptions
 */

/**
 * Runs a model's tool calls against one sandbox.
 *
 * The first argument is the Sandbox to use, or the options of
 * Sandbox.create to make one with on the first call (close() or `await
 * using` deletes it; a Sandbox given is the caller's, and close() leaves
 * it). `names` limits the tools offered and run; `maxChars` bounds the
 * text of each result; `timeoutS` is run_python's and run_shell's (else
 * the session's timeout_s); `indexUrl` is where install_packages installs
 * from (else the daemon's package index).
 *
 * Calls may run at once, as parallel tool calls do; the first ones share
 * the one sandbox they make.
 */
export class Toolbox {
  /**
   * @param {Sandbox | CreateOptions | null} [sandbox]
   * @param {ToolboxOptions} [opts]
   */
  constructor(sandbox, opts = {}) {
    /** @type {Sandbox | null} */
    this._sandbox = null;
    /** @type {CreateOptions | null} */
    this._create = null;
    if (isSandbox(sandbox)) this._sandbox = sandbox;
    else {
      this._create = { ...(sandbox || {}) };
      // A misspelt option fails here, not at the model's first call.
      sessionRequest(Object.fromEntries(Object.entries(this._create).filter(([k]) => !CONNECTION_KEYS.includes(k))));
    }
    const maxChars = opts.maxChars ?? DEFAULT_MAX_CHARS;
    if (!(maxChars >= MIN_MAX_CHARS)) {
      throw new RangeError(`Toolbox: maxChars ${maxChars} is below ${MIN_MAX_CHARS}, too little to hold a result`);
    }
    this._names = Object.freeze(pick(opts.names).map((t) => t.name));
    this.maxChars = maxChars;
    this.timeoutS = opts.timeoutS ?? null;
    this.indexUrl = opts.indexUrl ?? null;
    /** The sandbox being made, once the first call asked for one. @type {Promise<Sandbox> | null} */
    this._owned = null;
    /** @type {Record<string, (sbx: Sandbox, args: Record<string, any>) => Promise<ToolResult>>} */
    this._tools = {
      run_python: (sbx, a) => this._runPython(sbx, a),
      run_shell: (sbx, a) => this._runShell(sbx, a),
      write_file: (sbx, a) => this._writeFile(sbx, a),
      read_file: (sbx, a) => this._readFile(sbx, a),
      install_packages: (sbx, a) => this._installPackages(sbx, a),
    };
  }

  /** The tools this Toolbox offers and runs. */
  get names() {
    return this._names;
  }

  /** The sandbox in use: null while a Toolbox that makes its own has made none. */
  get sandbox() {
    return this._sandbox;
  }

  /** The sandbox, made now if the Toolbox was given none and made none yet. */
  async getSandbox() {
    if (this._sandbox) return this._sandbox;
    if (!this._owned) {
      const p = Sandbox.create(/** @type {CreateOptions} */ (this._create));
      this._owned = p;
      // A create that failed is tried again by the next call.
      p.then(
        (s) => {
          if (this._owned === p) this._sandbox = s;
        },
        () => {
          if (this._owned === p) this._owned = null;
        },
      );
    }
    return this._owned;
  }

  definitions() {
    return definitions({ names: this._names });
  }

  openaiTools() {
    return openaiTools({ names: this._names });
  }

  openaiResponsesTools() {
    return openaiResponsesTools({ names: this._names });
  }

  anthropicTools() {
    return anthropicTools({ names: this._names });
  }

  /**
   * Runs one tool call: `args` as an object or as the JSON text the model
   * wrote. It never rejects: every failure is an error result whose text
   * tells the model what went wrong.
   * @param {string} name
   * @param {Record<string, any> | string | Uint8Array | null} [args]
   * @param {{callId?: string | null}} [opts]
   * @returns {Promise<ToolResult>}
   */
  async run(name, args, opts = {}) {
    /** @type {ToolResult} */
    let r;
    try {
      if (!this._names.includes(name)) {
        throw new Refused("unknown_tool", `there is no tool ${pyRepr(String(name))}: the tools are ${this._names.join(", ")}`);
      }
      const a = argumentsOf(args);
      const p = problem(/** @type {any} */ (TOOLS.get(name)).input_schema, a, "arguments");
      if (p) throw new Refused("invalid_argument", `${name}: ${p}`);
      r = await this._tools[name](await this.getSandbox(), a);
    } catch (e) {
      if (e instanceof Refused) {
        // The model's mistake, not the SDK's: nothing for a caller to rethrow.
        r = this._error(name, e.code, e.message, null);
      } else if (e instanceof SandboxdError) {
        r = this._error(name, e.code || "internal", e.message, e);
      } else {
        // The agent loop must go on; the model reads what broke.
        const err = /** @type {any} */ (e);
        r = this._error(name, "internal", `${(err && err.name) || "Error"}: ${err && err.message !== undefined ? err.message : err}`, e);
      }
    }
    r.callId = opts.callId ?? null;
    return r;
  }

  /**
   * Runs a tool call of any of the three APIs, told apart by its shape
   * (see handleOpenAI, handleOpenAIResponses, handleAnthropic).
   * @param {any} call
   */
  handle(call) {
    const fn = get(call, "function");
    if (fn != null) return this.run(get(fn, "name") || "", get(fn, "arguments"), { callId: get(call, "id") });
    if (get(call, "type") === "function_call" || get(call, "call_id") != null) {
      return this.run(get(call, "name") || "", get(call, "arguments"), { callId: get(call, "call_id") });
    }
    if (get(call, "type") === "tool_use" || get(call, "input") != null) {
      return this.run(get(call, "name") || "", get(call, "input"), { callId: get(call, "id") });
    }
    return Promise.resolve(this._error(String(get(call, "name") || ""), "invalid_argument", "not a tool call of OpenAI or Anthropic", null));
  }

  /**
   * Runs a Chat Completions tool call ({id, type: "function", function:
   * {name, arguments}}) and answers its {role: "tool", ...} message.
   * @param {any} call
   */
  async handleOpenAI(call) {
    const fn = get(call, "function");
    const r = await this.run(get(fn, "name") || "", get(fn, "arguments"), { callId: get(call, "id") });
    return r.toOpenAI();
  }

  /**
   * Runs a Responses API function_call item ({type: "function_call",
   * call_id, name, arguments}) and answers its function_call_output.
   * @param {any} item
   */
  async handleOpenAIResponses(item) {
    const r = await this.run(get(item, "name") || "", get(item, "arguments"), { callId: get(item, "call_id") });
    return r.toOpenAIResponses();
  }

  /**
   * Runs a Messages API tool_use block ({type: "tool_use", id, name,
   * input}) and answers its tool_result block; a turn's results all go in
   * one user message.
   * @param {any} block
   */
  async handleAnthropic(block) {
    const r = await this.run(get(block, "name") || "", get(block, "input"), { callId: get(block, "id") });
    return r.toAnthropic();
  }

  /** Deletes the sandbox the Toolbox made, if it made one; a later call makes another. */
  async close() {
    const owned = this._owned;
    if (!owned) return;
    this._owned = null;
    this._sandbox = null;
    /** @type {Sandbox} */
    let sbx;
    try {
      sbx = await owned;
    } catch {
      return; // never made: nothing to delete
    }
    await sbx.kill();
  }

  /** `await using tb = new Toolbox({...})` deletes the sandbox it made at the block's end. */
  async [asyncDispose]() {
    await this.close();
  }

  toString() {
    return `Toolbox(sandbox=${this._sandbox ? this._sandbox.toString() : "null"}, names=${this._names.join(",")})`;
  }

  // The tools. Each answers what the model reads; the schema has checked
  // the arguments' shape already.

  /**
   * @param {string} name
   * @param {Record<string, any>} data
   * @param {{isError?: boolean, execution?: import("./models.js").Execution | null}} [opts]
   */
  _result(name, data, opts = {}) {
    const execution = opts.execution ?? null;
    const images = execution ? execution.outputs.filter((o) => o.mime.startsWith("image/")) : [];
    if (images.length) data.images = images.map((o) => o.mime);
    const [text, cut] = bound(data, this.maxChars);
    return new ToolResult({ name, data, text, isError: opts.isError ?? false, images, cut, execution });
  }

  /**
   * @param {string} name
   * @param {string} code
   * @param {string} message
   * @param {unknown} exception
   */
  _error(name, code, message, exception) {
    const r = this._result(name, { error: { code, message } }, { isError: true });
    r.errorCode = code;
    r.exception = exception;
    return r;
  }

  /**
   * @param {string} name
   * @param {import("./models.js").Execution} e
   * @param {boolean} python
   */
  _execution(name, e, python) {
    /** @type {Record<string, any>} */
    const d = { status: e.status };
    if (python) d.result = e.result;
    else d.exit_code = e.exitCode;
    d.stdout = e.stdout;
    d.stderr = e.stderr;
    if (e.error && e.status !== STATUS_LOST) {
      d.error = { name: e.error.name, value: slice(e.error.value, 0, MAX_ERROR_VALUE) };
      // The traceback is on stderr too, as Python prints it: not twice.
      if (e.error.traceback && !e.stderr.includes(e.error.traceback.trim())) d.traceback = e.error.traceback;
    }
    const notes = [];
    if (Object.hasOwn(STATUS_NOTES, e.status)) notes.push(STATUS_NOTES[e.status]);
    if (e.status === STATUS_LOST && e.error && e.error.value) notes.push(slice(e.error.value, 0, MAX_ERROR_VALUE));
    if (e.stateReset) notes.push("the interpreter was restarted: variables and imports are gone, files stay");
    if (e.truncated) notes.push("the sandbox cut the output at its own limit");
    if (notes.length) d.message = notes.join("; ");
    return this._result(name, d, { isError: e.status !== STATUS_OK, execution: e });
  }

  /** @param {Sandbox} sbx @param {Record<string, any>} a */
  async _runPython(sbx, a) {
    return this._execution("run_python", await sbx.runCode(a.code, { timeoutS: this.timeoutS ?? undefined }), true);
  }

  /** @param {Sandbox} sbx @param {Record<string, any>} a */
  async _runShell(sbx, a) {
    return this._execution("run_shell", await sbx.commands.run(a.command, { timeoutS: this.timeoutS ?? undefined }), false);
  }

  /** @param {Sandbox} sbx @param {Record<string, any>} a */
  async _installPackages(sbx, a) {
    const e = await sbx.install(a.packages, { indexUrl: this.indexUrl ?? undefined });
    return this._execution("install_packages", e, false);
  }

  /** @param {Sandbox} sbx @param {Record<string, any>} a */
  async _writeFile(sbx, a) {
    /** @type {string} */
    const content = a.content;
    const data = a.encoding === "base64" ? base64Bytes(content) : utf8Bytes(content);
    const w = await sbx.files.write(a.path, data);
    return this._result("write_file", { path: w.path, size: w.size });
  }

  /** @param {Sandbox} sbx @param {Record<string, any>} a */
  async _readFile(sbx, a) {
    /** @type {string} */
    const path = a.path;
    const shown = normpath(path.startsWith("/") ? path : `/workspace/${path}`);
    const got = await sbx.client.getFile(sbx.id, path);
    if (Array.isArray(got)) return this._result("read_file", listing(shown, got));
    /** @type {Record<string, any>} */
    const d = { path: shown, size: got.length };
    const text = got.includes(0) ? null : utf8Text(got);
    if (text === null) {
      d.encoding = "base64";
      d.content = got.toString("base64");
    } else {
      d.encoding = "utf-8";
      d.content = text;
    }
    return this._result("read_file", d);
  }
}

/**
 * The arguments as an object: models write JSON text (OpenAI), SDKs give
 * objects (Anthropic); an empty text is no arguments.
 * @param {unknown} args
 * @returns {Record<string, any>}
 */
function argumentsOf(args) {
  if (args === undefined || args === null) return {};
  let v = args;
  if (args instanceof Uint8Array) v = Buffer.from(args).toString("utf8");
  if (typeof v === "string") {
    if (!v.trim()) return {};
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw new Refused("invalid_argument", `the arguments are not valid JSON: ${/** @type {Error} */ (e).message}`);
    }
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Refused("invalid_argument", "the arguments must be a JSON object");
  return { ...v };
}

/**
 * The bytes of base64 the model wrote, checked as strictly as Python's
 * b64decode(validate=True), which Node's decoder is not: it skips what it
 * does not know.
 * @param {string} content
 */
function base64Bytes(content) {
  // Models wrap long base64 in lines.
  const s = content.replace(/\s+/g, "");
  /** @param {string} why */
  const bad = (why) => new Refused("invalid_argument", `write_file: \`content\` is not valid base64 (${why})`);
  if (/[^A-Za-z0-9+/=]/.test(s)) throw bad("Only base64 data is allowed");
  const m = /^([A-Za-z0-9+/]*)(=*)$/.exec(s);
  if (!m) throw bad("Discontinuous padding not allowed");
  const [, body, pad] = m;
  if (!body && pad) throw bad("Leading padding not allowed");
  const rest = body.length % 4;
  if (rest === 1) throw bad(`Invalid base64-encoded string: number of data characters (${body.length}) cannot be 1 more than a multiple of 4`);
  if ((rest === 2 && pad.length < 2) || (rest === 3 && pad.length < 1)) throw bad("Incorrect padding");
  return Buffer.from(body, "base64");
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The UTF-8 of text; JSON can carry a lone surrogate ("\ud800"), no file can.
 * @param {string} content
 */
function utf8Bytes(content) {
  const m = LONE_SURROGATE.exec(content);
  if (m) {
    const at = codePoints(content.slice(0, m.index));
    throw new Refused("invalid_argument", `write_file: \`content\` is not valid UTF-8 text (surrogates not allowed at ${at})`);
  }
  return Buffer.from(content, "utf8");
}

// Keeps a byte order mark as a character, as Python's utf-8 codec does.
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The text of bytes that are UTF-8, else null.
 * @param {Uint8Array} b
 */
function utf8Text(b) {
  try {
    return UTF8.decode(b);
  } catch {
    return null;
  }
}

/**
 * A path with "." and ".." resolved and slashes collapsed, as Python's
 * posixpath.normpath writes it (the path the Python SDK shows).
 * @param {string} p
 */
function normpath(p) {
  if (!p) return ".";
  let initial = p.startsWith("/") ? 1 : 0;
  if (p.startsWith("//") && !p.startsWith("///")) initial = 2;
  /** @type {string[]} */
  const out = [];
  for (const c of p.split("/")) {
    if (c === "" || c === ".") continue;
    if (c !== ".." || (!initial && !out.length) || (out.length && out[out.length - 1] === "..")) out.push(c);
    else if (out.length) out.pop();
  }
  return "/".repeat(initial) + out.join("/") || ".";
}

/**
 * @param {string} path
 * @param {import("./models.js").FileInfo[]} entries
 */
function listing(path, entries) {
  /** @type {Record<string, any>} */
  const d = {
    path,
    type: "folder",
    entries: entries.slice(0, MAX_ENTRIES).map((e) => ({ name: e.name, type: e.type, size: e.size })),
  };
  if (entries.length > MAX_ENTRIES) {
    d.message = `the first ${MAX_ENTRIES} of ${entries.length} entries; list the rest with run_shell (ls, find)`;
  }
  return d;
}

/**
 * Runs one tool call against a sandbox: new Toolbox(sandbox, opts).run(name,
 * args), for a caller that keeps no Toolbox.
 * @param {Sandbox} sandbox
 * @param {string} name
 * @param {Record<string, any> | string | null} [args]
 * @param {ToolboxOptions} [opts]
 */
export function dispatch(sandbox, name, args, opts) {
  return new Toolbox(sandbox, opts).run(name, args);
}
