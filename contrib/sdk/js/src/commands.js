// sbx.commands: shell commands in a sandbox, as E2B's Sandbox.commands.

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
}
