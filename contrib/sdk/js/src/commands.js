// sbx.commands: shell commands in a sandbox, as E2B's Sandbox.commands.

import { shellArgv } from "./attach.js";
import { RequestTimeout } from "./errors.js";

/**
 * Runs shell commands in its sandbox's session (language "shell").
 */
export class Commands {
  /** @param {import("./sandbox.js").Sandbox} sandbox */
  constructor(sandbox) {
    this._sbx = sandbox;
  }

  /**
   * Runs cmd with /bin/sh in /workspace (or `cwd`). A non-zero exit is
   * `status === "error"` with its `exitCode`, not an error.
   * @param {string} cmd
   * @param {Omit<import("./sandbox.js").RunCodeOptions, "language">} [opts]
   */
  run(cmd, opts = {}) {
    return this._sbx.runCode(cmd, { ...opts, language: "shell" });
  }

  /**
   * Starts cmd with /bin/sh without waiting for it, and resolves to the
   * execution's id: `sbx.waitExecution(eid)` waits for its end,
   * `sbx.execution(eid)` has its output so far (see Sandbox.submit).
   * @param {string} cmd
   * @param {Omit<import("./sandbox.js").SubmitOptions, "language">} [opts]
   * @returns {Promise<string>}
   */
  submit(cmd, opts = {}) {
    return this._sbx.submit(cmd, { ...opts, language: "shell" });
  }

  /**
   * Runs a command with `input` as its standard input (a string as UTF-8)
   * and resolves to {exitCode, stdout, stderr}, over an attach: an array
   * runs as it is, a string with /bin/sh. Unlike run, it is not an
   * execution of the session (not in its history, beside one running, no
   * timeout of its own): `timeoutMs` bounds it, past it RequestTimeout and
   * the command is ended. A command that exits before it read all its
   * input is no error.
   * @param {string | string[]} cmd
   * @param {string | Uint8Array} [input]
   * @param {{env?: Record<string, string>, cwd?: string, timeoutMs?: number | null} & import("./client.js").CallOptions} [opts]
   * @returns {Promise<{exitCode: number, stdout: Buffer, stderr: Buffer}>}
   */
  async runWithInput(cmd, input = "", opts = {}) {
    const { timeoutMs = null, ...rest } = opts;
    const a = await this._sbx.attach(shellArgv(cmd), rest);
    const timer =
      timeoutMs === null
        ? null
        : setTimeout(() => a.close(new RequestTimeout(`the attached command ran on past ${timeoutMs / 1000} s: it was ended`)), timeoutMs);
    try {
      // Fed as the output is read: a command that writes while it reads
      // would otherwise wait for its output to be read while this waited
      // for its input to be taken. It may exit before it read all of it.
      (async () => {
        if (input.length) await a.write(input);
        await a.closeStdin();
      })().catch(() => {});
      /** @type {Buffer[]} */
      const out = [];
      /** @type {Buffer[]} */
      const err = [];
      for await (const c of a) (c.stream === "stdout" ? out : err).push(c.data);
      return { exitCode: await a.wait(), stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
    } finally {
      if (timer) clearTimeout(timer);
      a.close();
    }
  }
}
