// Sandbox: one sandboxd session with E2B-like ergonomics.
//
//     await using sbx = await Sandbox.create({ memoryMb: 256 });
//     (await sbx.runCode("x = 6 * 7\nx")).result;   // "42"
//
// Sandbox.create creates a session; `await using` (or kill()) deletes it.
// Sandbox.connect attaches to a session that exists, without owning it any
// less: disposing of it deletes the session too. With an idempotencyKey, a
// create made again with the same key and options (a retry after a lost
// answer) is bound to the session the first made, not a new one.

import { shellArgv } from "./attach.js";
import { Client } from "./client.js";
import { Commands } from "./commands.js";
import { Contexts } from "./contexts.js";
import { NotFound } from "./errors.js";
import { Files } from "./files.js";
import { Processes } from "./processes.js";
import { execRequestTimeout } from "./requests.js";

/**
 * @typedef {import("./client.js").CallOptions} CallOptions
 * @typedef {import("./client.js").OutputCallbacks} OutputCallbacks
 * @typedef {{socket?: string, requestTimeoutMs?: number | null, client?: Client}} Connection
 * @typedef {{language?: string, timeoutS?: number, env?: Record<string, string>, cwd?: string}
 *   & OutputCallbacks & CallOptions} RunCodeOptions
 * @typedef {{language?: string, timeoutS?: number, env?: Record<string, string>, cwd?: string}
 *   & CallOptions} SubmitOptions
 */

// Symbol.asyncDispose is Node's from 18.18 and 20.4 on; before, the symbol
// Node itself uses for it.
const asyncDispose = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");

/**
 * The client of a connection: the one given, else a new one.
 * @param {Connection} o
 */
function clientOf(o) {
  return o.client || new Client({ socket: o.socket, requestTimeoutMs: o.requestTimeoutMs });
}

/** A session of sandboxd: a sandbox with a persistent Python interpreter. */
export class Sandbox {
  /**
   * Use Sandbox.create or Sandbox.connect; this binds a session the daemon
   * answered to the client that asked.
   * @param {Client} client
   * @param {import("./models.js").Session} session
   * @param {boolean} [created] whether making it made the session
   */
  constructor(client, session, created = false) {
    this._client = client;
    this._session = session;
    /**
     * Whether making this Sandbox made its session: false for connect, and
     * for a create whose idempotencyKey an earlier create had used.
     */
    this.created = created;
    /** Shell commands: `sbx.commands.run("ls -la")`. */
    this.commands = new Commands(this);
    /** Files: `sbx.files.write`, `read`, `list`, `remove`, `exists`, folders with `uploadDir` and `downloadDir`. */
    this.files = new Files(this);
    /** Background processes: `sbx.processes.start`, `list`, `kill`, `logs`, `follow`, `wait`. */
    this.processes = new Processes(this);
    /** Code contexts, interpreters of their own: `sbx.contexts.create`, `list`, `delete`, `restart`; `runCode(code, {context})`. */
    this.contexts = new Contexts(this);
  }

  /**
   * Creates a session. The options are the fields of the create request
   * (docs/API.md, POST /v1/sessions); absent ones take the template's or
   * the daemon's defaults. `idempotencyKey` makes the create safe to
   * repeat: within 24 hours, the same key and options give the session the
   * first create made (`created` is then false); the key with other options
   * is Conflict. `socket` is the daemon's socket (default
   * $SANDBOXD_SOCKET, else /run/sandboxd/sandboxd.sock); `requestTimeoutMs`
   * bounds each call but executions (null: no bound); `client` shares a
   * Client. `volumes` mounts the caller's volumes (client.createVolume),
   * each `{name, path, readOnly?}` or a VolumeMount. `snapshot` (an id, a
   * name or a Snapshot) makes the session from a snapshot: its files and
   * settings, so only name, labels, env, idleAction, deadlineS and volumes
   * may be given beside it (fromSnapshot makes several). `checkpoints`
   * (0 to 16) keeps the state before each of the last that many
   * executions, for `undo`.
   * @param {Record<string, any> & Connection & {idempotencyKey?: string, signal?: AbortSignal}} [opts]
   */
  static async create(opts = {}) {
    const { socket, requestTimeoutMs, client, idempotencyKey, ...fields } = opts;
    const c = clientOf({ socket, requestTimeoutMs, client });
    if (idempotencyKey === undefined || idempotencyKey === null) return new this(c, await c.createSession(fields), true);
    const { session, created } = await c.createSessionOnce(idempotencyKey, fields);
    return new this(c, session, created);
  }

  /**
   * The Sandbox of an existing session (by id); NotFound if there is none,
   * or it is another user's.
   * @param {string} id
   * @param {Connection & {signal?: AbortSignal}} [opts]
   */
  static async connect(id, opts = {}) {
    const c = clientOf(opts);
    return new this(c, await c.getSession(id, { signal: opts.signal }));
  }

  /**
   * `count` Sandboxes (1 to 100, default 1) made from a snapshot (an id, a
   * name or a Snapshot), all of them or none: each starts with its files
   * and settings; `labels` are added to the snapshot's, `env` goes over
   * its; `name` only with count 1. Files only today: each one's first
   * execution says `stateReset`.
   * @param {string | import("./models.js").Snapshot} snapshot
   * @param {Record<string, any> & {count?: number} & Connection & {signal?: AbortSignal}} [opts]
   * @returns {Promise<Sandbox[]>}
   */
  static async fromSnapshot(snapshot, opts = {}) {
    const { socket, requestTimeoutMs, client, ...rest } = opts;
    const c = clientOf({ socket, requestTimeoutMs, client });
    return (await c.createSessions(snapshot, rest)).map((s) => new this(c, s, true));
  }

  /**
   * The caller's sessions (root: all), oldest first, that carry every label
   * given: `{label: "agent=a1"}` (or several), `{labels: {...}}`.
   * @param {{label?: string | string[], labels?: Record<string, string>} & Connection & {signal?: AbortSignal}} [opts]
   */
  static async list(opts = {}) {
    const c = clientOf(opts);
    return c.listSessions({ label: opts.label, labels: opts.labels, signal: opts.signal });
  }

  /** The session id. */
  get id() {
    return this._session.id;
  }

  /** The session as the daemon last answered it (info() asks again). */
  get session() {
    return this._session;
  }

  get client() {
    return this._client;
  }

  /** The session now: status, limits, labels, execCount, ... @param {CallOptions} [opts] */
  async info(opts) {
    this._session = await this._client.getSession(this.id, opts);
    return this._session;
  }

  /** @param {CallOptions} [opts] */
  async isRunning(opts) {
    return (await this.info(opts)).status === "running";
  }

  /** What the session uses now: memory, CPU, pids, disk. @param {CallOptions} [opts] */
  stats(opts) {
    return this._client.stats(this.id, opts);
  }

  /** Stops its processes (variables are gone); /workspace is kept. @param {CallOptions} [opts] */
  async stop(opts) {
    this._session = await this._client.stopSession(this.id, opts);
    return this._session;
  }

  /** Starts it again with a fresh interpreter (no-op if running). @param {CallOptions} [opts] */
  async start(opts) {
    this._session = await this._client.startSession(this.id, opts);
    return this._session;
  }

  /** A fresh interpreter, same /workspace. @param {CallOptions} [opts] */
  async restart(opts) {
    this._session = await this._client.restartSession(this.id, opts);
    return this._session;
  }

  /**
   * Interrupts the execution running in the session, as Ctrl-C would
   * (Python raises KeyboardInterrupt; a shell command gets SIGINT, then
   * SIGKILL after a grace): that call resolves to status "interrupted" and
   * the interpreter keeps its variables. false when nothing was running.
   * @param {CallOptions} [opts]
   * @returns {Promise<boolean>}
   */
  interrupt(opts) {
    return this._client.interrupt(this.id, opts);
  }

  /**
   * Freezes every process: memory and variables stay, CPU use stops (no-op
   * if paused; Conflict while it executes). An execution, a file call or
   * stats resumes it first.
   * @param {CallOptions} [opts]
   */
  async pause(opts) {
    this._session = await this._client.pauseSession(this.id, opts);
    return this._session;
  }

  /** Lets a paused session run on where it stopped (no-op if running). @param {CallOptions} [opts] */
  async resume(opts) {
    this._session = await this._client.resumeSession(this.id, opts);
    return this._session;
  }

  /** Saves the memory to disk and ends the sandbox (runsc): the next execution, file call or resume wakes it. @param {CallOptions} [opts] */
  async hibernate(opts) {
    this._session = await this._client.hibernateSession(this.id, opts);
    return this._session;
  }

  /**
   * Ends the session `seconds` from now, whatever it is doing (stopped,
   * /workspace kept), earlier or later than its deadline before; 0 removes
   * the deadline. `session.deadline` shows it.
   * @param {number} seconds
   * @param {CallOptions} [opts]
   */
  async setDeadline(seconds, opts = {}) {
    this._session = await this._client.updateSession(this.id, { ...opts, deadlineS: seconds });
    return this._session;
  }

  /**
   * Changes the network policy at once ("none", "allowlist" with `allow`,
   * "open"); connections it no longer allows are cut.
   * @param {string} network
   * @param {{allow?: string | string[], egressKbps?: number, maxConnections?: number} & CallOptions} [opts]
   */
  async setNetwork(network, opts) {
    this._session = await this._client.setNetwork(this.id, network, opts);
    return this._session;
  }

  /**
   * Keeps the session's /workspace files and settings as a snapshot
   * (`name`: the caller's name for it, unique among theirs), which outlives
   * the session: Sandbox.create({snapshot}) and fromSnapshot make sessions
   * from it, client.deleteSnapshot removes it. The session is frozen only
   * while its files are read, and runs on.
   * @param {{name?: string} & CallOptions} [opts]
   */
  createSnapshot(opts) {
    return this._client.createSnapshot(this.id, opts);
  }

  /**
   * `count` new Sandboxes (1 to 100, default 1) that start where this one
   * is now: its files, settings and volumes (files only today: each one's
   * first execution says `stateReset`). This one runs on. Each is the
   * caller's to delete, as any Sandbox.
   * @param {{count?: number} & CallOptions} [opts]
   * @returns {Promise<Sandbox[]>}
   */
  async fork(opts) {
    const ctor = /** @type {typeof Sandbox} */ (this.constructor);
    return (await this._client.forkSession(this.id, opts)).map((s) => new ctor(this._client, s, true));
  }

  /**
   * Takes the session back over its last `steps` executions (1 to 16,
   * default 1): the interpreters they ran in get back their variables and
   * imports from before them, and /workspace its files. Resolves to how
   * many were undone. Conflict for a session made without `checkpoints`,
   * or for more steps than it keeps. Network effects, /tmp and other
   * processes are not rolled back.
   * @param {number | ({steps?: number} & CallOptions)} [steps]
   * @param {CallOptions} [opts]
   * @returns {Promise<number>}
   */
  async undo(steps, opts) {
    return this._client.undo(this.id, steps, opts);
  }

  /**
   * Deletes the session and everything of it; false if it was gone already.
   * @param {CallOptions} [opts]
   */
  async kill(opts) {
    try {
      await this._client.deleteSession(this.id, opts);
    } catch (err) {
      if (err instanceof NotFound) return false;
      throw err;
    }
    return true;
  }

  /** The same as kill(). @param {CallOptions} [opts] */
  delete(opts) {
    return this.kill(opts);
  }

  /**
   * Runs code in the session's interpreter, whose variables live on between
   * calls. `timeoutS` is the execution's own, else the session's
   * timeout_s. With `onStdout` / `onStderr` the output is streamed to them
   * as it comes, and with `onDisplay` each output the code displays. The answer is an Execution whatever the code did: check
   * `status`, `error`, `result`. `context` (an id or a CodeContext of
   * sbx.contexts) runs it in that context's interpreter instead.
   * @param {string} code
   * @param {RunCodeOptions} [opts]
   */
  runCode(code, opts = {}) {
    const limit = opts.timeoutS ?? (this._session.limits.timeoutS || undefined);
    return this._client.exec(this.id, code, {
      ...opts,
      requestTimeoutMs: execRequestTimeout(opts.requestTimeoutMs, limit),
    });
  }

  /**
   * pip-installs packages ("numpy==1.26.4", "rich[jupyter]") into the
   * session's /workspace, from `indexUrl` or the daemon's package index,
   * which is opened to the session for the install alone. The interpreter
   * imports them at once. A failed install is an Execution with pip's exit
   * code, not an error.
   * @param {string | string[]} packages
   * @param {{indexUrl?: string} & OutputCallbacks & CallOptions} [opts]
   */
  install(packages, opts) {
    return this._client.installPackages(this.id, packages, opts);
  }

  /**
   * Starts code in the session without waiting for it, and resolves to the
   * execution's id (the code runs on, within its `timeoutS`, else the
   * session's timeout_s). execution(eid) tells how it goes, with the output
   * so far; waitExecution(eid) waits for its end. An execution sent while
   * it runs waits its turn.
   * @param {string} code
   * @param {SubmitOptions} [opts]
   * @returns {Promise<string>}
   */
  submit(code, opts) {
    return this._client.startExec(this.id, code, opts);
  }

  /**
   * Execution eid of the session: status "running" with its output so far
   * while it runs, then the whole Execution while the history keeps it
   * (NotFound after).
   * @param {string} eid
   * @param {CallOptions} [opts]
   */
  execution(eid, opts) {
    return this._client.execution(this.id, eid, opts);
  }

  /**
   * Waits for execution eid to end (asking every `pollMs`, default 200)
   * and resolves to it. `timeoutMs` bounds the wait: past it,
   * RequestTimeout, and the execution runs on (interrupt() stops it);
   * `signal` aborts the wait.
   * @param {string} eid
   * @param {{timeoutMs?: number | null, pollMs?: number} & CallOptions} [opts]
   */
  waitExecution(eid, opts) {
    return this._client.waitExecution(this.id, eid, opts);
  }

  /**
   * The session's executions, newest first (those running first), as
   * summaries without output: execution(eid) has one whole.
   * @param {{limit?: number} & CallOptions} [opts]
   */
  executions(opts) {
    return this._client.executions(this.id, opts);
  }

  /**
   * Runs a command (an array as it is, a string with /bin/sh) with its
   * standard streams on a connection of its own (exec -i, -it with `tty`):
   * write(), closeStdin(), resize(), `for await` its output, wait() (see
   * Client.attach). close() it when done: a command still running ends.
   * @param {string | string[]} cmd
   * @param {import("./client.js").AttachOptions} [opts]
   */
  attach(cmd, opts) {
    return this._client.attach(this.id, shellArgv(cmd), opts);
  }

  /** `await using sbx = await Sandbox.create()` deletes the session at the block's end. */
  async [asyncDispose]() {
    await this.kill();
  }

  toString() {
    return `Sandbox(id=${this.id}, status=${this._session.status}, socket=${this._client.socket})`;
  }
}
