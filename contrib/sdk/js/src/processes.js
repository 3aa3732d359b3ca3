// sbx.processes: commands that run in the background of a sandbox (exec --detach).
//
//     const p = await sbx.processes.start(["python3", "-m", "http.server", "8000"]);
//     await sbx.processes.list();                        // [Process {pid: 1, ...}, Process {pid: p.pid, detached: true}, ...]
//     for await (const chunk of sbx.processes.follow(p.pid)) process.stdout.write(chunk);
//     await sbx.processes.kill(p.pid);
//
// With `stdin: true` or a `tty` a process is attached: the daemon holds its
// streams, it takes input, and its output comes apart by stream:
//
//     const p = await sbx.processes.start(["python3", "-i"], { stdin: true, tag: "repl" });
//     await sbx.processes.writeStdin(p.pid, "print(6 * 7)\n");
//     await sbx.processes.closeStdin(p.pid);
//     for await (const c of sbx.processes.output(p.pid)) console.log(c.stream, c.text, c.exitCode);

import { shellArgv } from "./attach.js";
import { NotFound } from "./errors.js";

/**
 * @typedef {import("./client.js").CallOptions} CallOptions
 * @typedef {import("./client.js").FollowOptions} FollowOptions
 * @typedef {import("./client.js").StartProcessOptions} StartProcessOptions
 * @typedef {import("./client.js").OutputOptions} OutputOptions
 */

/** The background processes of its sandbox's session. */
export class Processes {
  /** @param {import("./sandbox.js").Sandbox} sandbox */
  constructor(sandbox) {
    this._sbx = sandbox;
  }

  /**
   * Starts a command in the background: an array runs as it is, a string
   * with /bin/sh. It runs as the sandbox's user until it exits, is killed,
   * `timeoutS` passes (absent: no timeout) or the session stops, and
   * counts against the session's pids limit; its output goes to a log that
   * logs() and follow() read. Resolves to it (`pid`).
   *
   * With `stdin: true` (its input open for writeStdin) or `tty: {rows,
   * cols}` (a terminal of that size) it is attached: output() reads its
   * output, stdout and stderr apart (a terminal's is one stream, "pty"),
   * and it does not outlive a daemon restart. `tag` names it (`Process.tag`
   * in list()).
   * @param {string | string[]} cmd
   * @param {StartProcessOptions} [opts]
   */
  start(cmd, opts) {
    return this._sbx.client.startProcess(this._sbx.id, shellArgv(cmd), opts);
  }

  /**
   * Sends `data` (a string as UTF-8) to an attached process's input;
   * `eof` closes the input after it. Conflict once it ended or its input
   * is closed.
   * @param {number} pid
   * @param {string | Uint8Array} data
   * @param {{eof?: boolean} & CallOptions} [opts]
   */
  writeStdin(pid, data, opts) {
    return this._sbx.client.writeStdin(this._sbx.id, pid, data, opts);
  }

  /**
   * Closes an attached process's input: it reads end of file.
   * @param {number} pid
   * @param {CallOptions} [opts]
   */
  closeStdin(pid, opts) {
    return this._sbx.client.closeStdin(this._sbx.id, pid, opts);
  }

  /**
   * Sets the size of an attached process's terminal (Conflict for one
   * started without `tty`).
   * @param {number} pid
   * @param {number} rows
   * @param {number} cols
   * @param {CallOptions} [opts]
   */
  resize(pid, rows, cols, opts) {
    return this._sbx.client.resizeProcess(this._sbx.id, pid, rows, cols, opts);
  }

  /**
   * Sends `sig` (TERM, KILL, INT, HUP, or a number) to process pid;
   * NotFound when there is no such process (kill() resolves to false
   * instead).
   * @param {number} pid
   * @param {string | number} [sig]
   * @param {CallOptions} [opts]
   */
  signal(pid, sig = "TERM", opts) {
    return this._sbx.client.sendSignal(this._sbx.id, pid, sig, opts);
  }

  /**
   * An attached process's output as ProcessChunks (`stream`, `data`,
   * `offset`) from `from` ("start": what the daemon still keeps, its last
   * MiB; "now"; or a byte offset, a chunk's `nextOffset` say). With
   * `follow` (the default) it goes on until the process ends, the last
   * chunk its end (`exitCode` set, no data); without, it stops at what
   * there is. The generator's return value is the exit code.
   * @param {number} pid
   * @param {OutputOptions} [opts]
   */
  output(pid, opts) {
    return this._sbx.client.processOutput(this._sbx.id, pid, opts);
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
