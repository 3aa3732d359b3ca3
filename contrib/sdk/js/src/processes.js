// sbx.processes: commands that run in the background of a sandbox (exec --detach).
//
//     const p = await sbx.processes.start(["python3", "-m", "http.server", "8000"]);
//     await sbx.processes.list();                        // [Process {pid: 1, ...}, Process {pid: p.pid, detached: true}, ...]
//     for await (const chunk of sbx.processes.follow(p.pid)) process.stdout.write(chunk);
//     await sbx.processes.kill(p.pid);

import { shellArgv } from "./attach.js";
import { NotFound } from "./errors.js";

/**
 * @typedef {import("./client.js").CallOptions} CallOptions
 * @typedef {import("./client.js").FollowOptions} FollowOptions
 */

/** The background processes of its sandbox's session. */
export class Processes {
  /** @param {import("./sandbox.js").Sandbox} sandbox */
  constructor(sandbox) {
    this._sbx = sandbox;
  }

  /**
   * Starts a command in the background: an array runs as it is, a string
   * with /bin/sh. It has no timeout, runs as the sandbox's user until it
   * exits, is killed or the session stops, and counts against the
   * session's pids limit; its output goes to a log that logs() and follow()
   * read. Resolves to it (`pid`).
   * @param {string | string[]} cmd
   * @param {{env?: Record<string, string>, cwd?: string} & CallOptions} [opts]
   */
  start(cmd, opts) {
    return this._sbx.client.startProcess(this._sbx.id, shellArgv(cmd), opts);
  }

  /**
   * Every process of the sandbox (pid 1 is its agent), with its CPU time and
   * memory; `detached` marks those started here.
   * @param {CallOptions} [opts]
   */
  list(opts) {
    return this._sbx.client.processes(this._sbx.id, opts);
  }

  /**
   * Sends `sig` (TERM, KILL, INT, HUP, or a number) to process pid: true once
   * sent, false when there is no such process. pid 1 is InvalidArgument:
   * stop or restart the session instead. (`opts.signal` is the call's
   * AbortSignal, as everywhere.)
   * @param {number} pid
   * @param {string | number} [sig]
   * @param {CallOptions} [opts]
   * @returns {Promise<boolean>}
   */
  async kill(pid, sig = "TERM", opts) {
    try {
      await this._sbx.client.signalProcess(this._sbx.id, pid, sig, opts);
    } catch (err) {
      if (err instanceof NotFound) return false;
      throw err;
    }
    return true;
  }

  /**
   * A background process's output from byte `offset` (`data`), whether it
   * still runs and how it ended (`exitCode`).
   * @param {number} pid
   * @param {{offset?: number} & CallOptions} [opts]
   */
  logs(pid, opts) {
    return this._sbx.client.processLogs(this._sbx.id, pid, opts);
  }

  /**
   * A background process's output as it comes, Buffers, until it no longer
   * runs (`logs -f`); the generator's return value is its exit code.
   * `timeoutMs` bounds the whole: past it, RequestTimeout, and it runs on.
   * @param {number} pid
   * @param {FollowOptions} [opts]
   * @returns {AsyncGenerator<Buffer, number | null>}
   */
  follow(pid, opts) {
    return this._sbx.client.followProcess(this._sbx.id, pid, opts);
  }

  /**
   * Waits for a background process to end and resolves to its exit code
   * (null when the daemon did not see it end: one a restarted daemon had
   * started). Its output is read on the way and dropped.
   * @param {number} pid
   * @param {FollowOptions} [opts]
   * @returns {Promise<number | null>}
   */
  async wait(pid, opts) {
    const it = this.follow(pid, opts);
    for (;;) {
      const next = await it.next();
      if (next.done) return next.value;
    }
  }
}
