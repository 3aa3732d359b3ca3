// sbx.contexts: code contexts, interpreters of their own in one sandbox.
//
//     const a = await sbx.contexts.create();                    // an empty interpreter
//     await sbx.runCode("x = 1", { context: a });
//     const b = await sbx.contexts.create({ from: "default" }); // a copy of default's, globals and all
//     await sbx.runCode("x", { context: b.id });
//     await sbx.contexts.restart(a);                            // its variables gone
//     await sbx.contexts.delete(b);
//
// Files, processes, network and limits stay the session's; executions still
// run one at a time, in whichever context (docs/API.md, Code contexts).

import { contextId } from "./requests.js";

/**
 * @typedef {import("./models.js").CodeContext} CodeContext
 * @typedef {import("./client.js").CallOptions} CallOptions
 */

/**
 * The id of a context a call names, which must be there.
 * @param {string | CodeContext} c
 */
function required(c) {
  const cid = contextId(c);
  if (!cid) throw new TypeError("a context id is required");
  return cid;
}

/** The code contexts of its sandbox's session. */
export class Contexts {
  /** @param {import("./sandbox.js").Sandbox} sandbox */
  constructor(sandbox) {
    this._sbx = sandbox;
  }

  /**
   * A new context: a Python interpreter (the default `language`) or, for
   * "shell", a working folder; started in `cwd` (default /workspace).
   * `from` makes it a copy of that Python context's interpreter at this
   * moment (its globals, imports and folder); from then on the two diverge.
   * @param {{language?: "python" | "shell" | string, cwd?: string, from?: string | CodeContext} & CallOptions} [opts]
   */
  create(opts = {}) {
    return this._sbx.client.createContext(this._sbx.id, opts);
  }

  /**
   * The session's contexts, "default" first.
   * @param {CallOptions} [opts]
   */
  list(opts) {
    return this._sbx.client.contexts(this._sbx.id, opts);
  }

  /**
   * Stops a context's interpreter and forgets it ("default" is never deleted).
   * @param {string | CodeContext} context
   * @param {CallOptions} [opts]
   */
  async delete(context, opts) {
    await this._sbx.client.deleteContext(this._sbx.id, required(context), opts);
  }

  /**
   * Starts a context's interpreter afresh: its variables are gone.
   * @param {string | CodeContext} context
   * @param {CallOptions} [opts]
   */
  async restart(context, opts) {
    return this._sbx.client.restartContext(this._sbx.id, required(context), opts);
  }
}
