// Client: every call of the sandboxd API, one method each.
//
// It mirrors the Go client (client/) and the Python SDK's Client: Sandbox
// and the one-shot run are built on it, and it is there for callers who
// want the API as it is.

import { Readable } from "node:stream";

import { ATTACH_UPGRADE, Attached, attachRequest, commandRequest } from "./attach.js";
import { ProtocolError, RequestTimeout, errorFromAnswer } from "./errors.js";
import {
  CodeContext,
  Execution,
  ExecutionSummary,
  FileEvent,
  FileInfo,
  FileStat,
  FileWritten,
  Health,
  Output,
  Process,
  ProcessChunk,
  ProcessLogs,
  STATUS_RUNNING,
  Session,
  Snapshot,
  Stats,
  Volume,
} from "./models.js";
import {
  attachedFields,
  checkCount,
  checkSteps,
  contextRequest,
  execRequest,
  execRequestTimeout,
  fromQuery,
  idempotencyHeaders,
  labelQuery,
  metaHeaders,
  sessionRequest,
  sharedWith,
  snapshotRef,
  termSize,
  volumeName,
} from "./requests.js";
import { STREAM_MIME, Transport, apiPath, errorOf } from "./transport.js";

/**
 * The HTTP timeout of a call other than an execution: the longest wait for
 * the daemon's next bytes. A create that has to start a sandbox takes well
 * under a second; executions are bounded by their own timeout instead.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * How often waitExecution asks how an execution goes, in milliseconds: each
 * ask is one GET of a few hundred bytes.
 */
export const DEFAULT_POLL_MS = 200;

/**
 * How often a follower of a background process asks for more output when
 * the last ask had none, in milliseconds: each ask is one GET.
 */
export const DEFAULT_FOLLOW_MS = 200;

/** Whether the process of a logs answer still runs: "true" or "false". */
export const HEADER_PROCESS_RUNNING = "Sandboxd-Process-Running";

/** How the process of a logs answer ended, once the daemon saw it. */
export const HEADER_PROCESS_EXIT_CODE = "Sandboxd-Process-Exit-Code";

/** The type of a folder sent as a tar stream (format=tar). */
export const TAR_MIME = "application/x-tar";

// The status an unhealthy daemon answers GET /v1/health with, the Health in
// its body.
const UNHEALTHY = 503;

/**
 * A pause that an AbortSignal ends early, rejecting with its reason as
 * every call of the SDK does.
 * @param {number} ms
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal && signal.reason);
    };
    const timer = setTimeout(() => {
      if (signal) signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    if (signal) signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * @typedef {{requestTimeoutMs?: number | null, signal?: AbortSignal}} CallOptions
 * @typedef {(chunk: string) => unknown} OnOutput
 * @typedef {(output: Output) => unknown} OnDisplay
 * @typedef {{onStdout?: OnOutput, onStderr?: OnOutput, onDisplay?: OnDisplay}} OutputCallbacks
 * @typedef {{offset?: number, pollMs?: number, timeoutMs?: number | null} & CallOptions} FollowOptions
 * @typedef {{tty?: boolean, rows?: number, cols?: number, env?: Record<string, string>, cwd?: string} & CallOptions} AttachOptions
 * @typedef {{env?: Record<string, string>, cwd?: string, stdin?: boolean, tty?: {rows: number, cols: number} | null, tag?: string, timeoutS?: number | null} & CallOptions} StartProcessOptions
 * @typedef {{from?: "start" | "now" | number, follow?: boolean} & CallOptions} OutputOptions
 */

// The options of a call that are not fields of its request.
const CALL_KEYS = ["requestTimeoutMs", "signal"];

/**
 * Splits a call's options from the fields of its request.
 * @param {Record<string, any>} opts
 * @param {string[]} [more] other keys that are not fields
 */
export function splitOptions(opts, more = []) {
  /** @type {Record<string, any>} */
  const call = {};
  /** @type {Record<string, any>} */
  const fields = {};
  for (const [k, v] of Object.entries(opts || {})) {
    if (CALL_KEYS.includes(k) || more.includes(k)) call[k] = v;
    else fields[k] = v;
  }
  return { call, fields };
}

/**
 * The sessions of a SessionList answer (api.SessionList).
 * @param {any} out
 * @returns {Session[]}
 */
function sessionList(out) {
  const list = out && Array.isArray(out.sessions) ? out.sessions : [];
  return list.map((/** @type {unknown} */ s) => Session.fromJSON(s));
}

/**
 * A client of one daemon. `socket` is its Unix socket (default
 * $SANDBOXD_SOCKET, else /run/sandboxd/sandboxd.sock). `requestTimeoutMs`
 * bounds every call but executions (null: wait as long as it takes); each
 * method also takes `requestTimeoutMs` and an AbortSignal `signal` of its
 * own. A Client holds no connection and may be shared.
 */
export class Client {
  /** @param {{socket?: string, requestTimeoutMs?: number | null}} [opts] */
  constructor(opts = {}) {
    this._t = new Transport(opts.socket);
    /** @type {number | null} */
    this.requestTimeoutMs = opts.requestTimeoutMs === undefined ? DEFAULT_REQUEST_TIMEOUT_MS : opts.requestTimeoutMs;
  }

  /** The socket path this client uses. */
  get socket() {
    return this._t.socket;
  }

  /** @param {CallOptions | undefined} o */
  _timeout(o) {
    return o && o.requestTimeoutMs !== undefined ? o.requestTimeoutMs : this.requestTimeoutMs;
  }

  /**
   * One call whose answer is JSON (or nothing).
   * @param {string} method
   * @param {string} path
   * @param {CallOptions | undefined} o
   * @param {{query?: Array<[string, string]>, json?: unknown}} [req]
   */
  async _json(method, path, o, req = {}) {
    const a = await this._t.send(method, path, { ...req, timeoutMs: this._timeout(o), signal: o && o.signal });
    try {
      return await a.json();
    } finally {
      a.close();
    }
  }

  // Sessions.

  /**
   * POST /v1/sessions: a session ready to execute. The options are the
   * fields of the create request (template, memoryMb, labels, ...).
   *
   * With `idempotencyKey` (1 to 255 printable ASCII characters, a UUID say)
   * a repeat of the create with the same key and fields within 24 hours
   * answers the session the first made instead of making another, so a
   * create whose answer was lost (RequestTimeout, Unavailable) can be sent
   * again safely; the same key with other fields is Conflict.
   * createSessionOnce also tells which it was.
   * @param {Record<string, any> & {idempotencyKey?: string} & CallOptions} [opts]
   */
  async createSession(opts = {}) {
    return (await this._create(opts)).session;
  }

  /**
   * createSession under an Idempotency-Key, and whether this call made the
   * session (201) or an earlier one with the key had (200).
   * @param {string} idempotencyKey
   * @param {Record<string, any> & CallOptions} [opts]
   * @returns {Promise<{session: Session, created: boolean}>}
   */
  async createSessionOnce(idempotencyKey, opts = {}) {
    return this._create({ ...opts, idempotencyKey });
  }

  /**
   * @param {Record<string, any> & {idempotencyKey?: string} & CallOptions} opts
   * @returns {Promise<{session: Session, created: boolean}>}
   */
  async _create(opts) {
    const { call, fields } = splitOptions(opts, ["idempotencyKey"]);
    const json = sessionRequest(fields);
    const headers = idempotencyHeaders(call.idempotencyKey);
    const a = await this._t.send("POST", "/v1/sessions", { json, headers, timeoutMs: this._timeout(call), signal: call.signal });
    try {
      return { session: Session.fromJSON(await a.json()), created: a.status === 201 };
    } finally {
      a.close();
    }
  }

  /**
   * GET /v1/sessions: the caller's sessions (root: all) carrying every
   * label given, oldest first.
   * @param {{label?: string | string[], labels?: Record<string, string>} & CallOptions} [opts]
   */
  async listSessions(opts = {}) {
    const out = await this._json("GET", "/v1/sessions", opts, { query: labelQuery(opts.label, opts.labels) });
    return ((out && out.sessions) || []).map(Session.fromJSON);
  }

  /** @param {string} id @param {CallOptions} [opts] */
  async getSession(id, opts) {
    return Session.fromJSON(await this._json("GET", apiPath("v1", "sessions", id), opts));
  }

  /**
   * DELETE /v1/sessions/{id}: its processes, workspace and history are gone.
   * @param {string} id @param {CallOptions} [opts]
   */
  async deleteSession(id, opts) {
    await this._json("DELETE", apiPath("v1", "sessions", id), opts);
  }

  /** Stops the session's processes; its /workspace is kept. @param {string} id @param {CallOptions} [opts] */
  async stopSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "stop"), opts));
  }

  /** Starts a stopped session with a fresh interpreter (no-op if running). @param {string} id @param {CallOptions} [opts] */
  async startSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "start"), opts));
  }

  /** Replaces the session's interpreter with a fresh one, same /workspace. @param {string} id @param {CallOptions} [opts] */
  async restartSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "restart"), opts));
  }

  /**
   * Freezes every process of the session: memory and interpreter state stay,
   * CPU use stops (no-op if paused; Conflict while it executes). An exec, a
   * file call or stats resumes it first.
   * @param {string} id @param {CallOptions} [opts]
   */
  async pauseSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "pause"), opts));
  }

  /** Lets a paused session run on where it stopped, and wakes a hibernated one (no-op if running; Conflict if stopped). @param {string} id @param {CallOptions} [opts] */
  async resumeSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "resume"), opts));
  }

  /**
   * Saves the session's memory to disk and ends its sandbox (runsc; Conflict
   * under runc): RAM and CPU freed, status "hibernated". An exec, a file
   * call, start or resume wakes it where it was.
   * @param {string} id @param {CallOptions} [opts]
   */
  async hibernateSession(id, opts) {
    return Session.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "hibernate"), opts));
  }

  /**
   * PATCH /v1/sessions/{id}: the settings that change while the session
   * lives. `deadlineS` sets its deadline that many seconds from now,
   * earlier or later than before (the session is stopped then, whatever it
   * does); 0 removes it.
   * @param {string} id
   * @param {{deadlineS?: number} & CallOptions} [opts]
   */
  async updateSession(id, opts = {}) {
    /** @type {Record<string, any>} */
    const body = {};
    if (opts.deadlineS !== undefined && opts.deadlineS !== null) body.deadline_s = opts.deadlineS;
    return Session.fromJSON(await this._json("PATCH", apiPath("v1", "sessions", id), opts, { json: body }));
  }

  /**
   * PATCH /v1/sessions/{id}/network: the policy changes at once;
   * connections to what it no longer allows are cut.
   * @param {string} id
   * @param {string} network
   * @param {{allow?: string | string[], egressKbps?: number, maxConnections?: number} & CallOptions} [opts]
   */
  async setNetwork(id, network, opts = {}) {
    /** @type {Record<string, any>} */
    const body = { network };
    if (opts.allow !== undefined && opts.allow !== null) body.allow = typeof opts.allow === "string" ? [opts.allow] : [...opts.allow];
    if (opts.egressKbps !== undefined && opts.egressKbps !== null) body.egress_kbps = opts.egressKbps;
    if (opts.maxConnections !== undefined && opts.maxConnections !== null) body.max_connections = opts.maxConnections;
    return Session.fromJSON(await this._json("PATCH", apiPath("v1", "sessions", id, "network"), opts, { json: body }));
  }

  /** GET /v1/sessions/{id}/stats: what the session uses now. @param {string} id @param {CallOptions} [opts] */
  async stats(id, opts) {
    return Stats.fromJSON(await this._json("GET", apiPath("v1", "sessions", id, "stats"), opts));
  }

  // Code contexts.

  /**
   * POST /v1/sessions/{id}/contexts: a new interpreter ("python", the
   * default) or working folder ("shell") in the session, started in `cwd`
   * (default /workspace); `from` names a Python context whose interpreter
   * the new one copies, globals and all. ResourceExhausted past 16.
   * @param {string} id
   * @param {{language?: string, cwd?: string, from?: string | CodeContext} & CallOptions} [opts]
   */
  async createContext(id, opts = {}) {
    return CodeContext.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "contexts"), opts, { json: contextRequest(opts) }));
  }

  /**
   * GET /v1/sessions/{id}/contexts: the session's contexts, "default" first.
   * @param {string} id
   * @param {CallOptions} [opts]
   * @returns {Promise<CodeContext[]>}
   */
  async contexts(id, opts) {
    const out = await this._json("GET", apiPath("v1", "sessions", id, "contexts"), opts);
    const list = out && Array.isArray(out.contexts) ? out.contexts : [];
    return list.map((/** @type {unknown} */ c) => CodeContext.fromJSON(c));
  }

  /**
   * DELETE /v1/sessions/{id}/contexts/{cid}: stops its interpreter and
   * forgets it; InvalidArgument for "default".
   * @param {string} id
   * @param {string} cid
   * @param {CallOptions} [opts]
   */
  async deleteContext(id, cid, opts) {
    await this._json("DELETE", apiPath("v1", "sessions", id, "contexts", cid), opts);
  }

  /**
   * POST /v1/sessions/{id}/contexts/{cid}/restart: starts its interpreter
   * afresh (its variables are gone).
   * @param {string} id
   * @param {string} cid
   * @param {CallOptions} [opts]
   */
  async restartContext(id, cid, opts) {
    return CodeContext.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "contexts", cid, "restart"), opts));
  }

  // Volumes.

  /**
   * POST /v1/volumes: a volume of `sizeMb` (at least 16; writes past it
   * fail with ENOSPC inside), given as a number or as `{sizeMb}` with the
   * call's options. Conflict for a name the caller has; ResourceExhausted
   * when the data dir or the caller's disk share cannot hold it.
   * @param {string} name
   * @param {number | ({sizeMb: number, sharedWith?: number[]} & CallOptions)} sizeMb
   * @param {CallOptions} [opts]
   */
  async createVolume(name, sizeMb, opts) {
    const o = typeof sizeMb === "object" && sizeMb !== null ? sizeMb : { ...opts, sizeMb };
    if (typeof o.sizeMb !== "number" || !Number.isFinite(o.sizeMb)) {
      // Absent, the daemon would take 0 and refuse it less clearly.
      throw new TypeError(`a volume's sizeMb is a number of MB, not ${JSON.stringify(o.sizeMb)}`);
    }
    /** @type {Record<string, unknown>} */
    const json = { name: volumeName(name), size_mb: o.sizeMb };
    if (o.sharedWith?.length) json.shared_with = o.sharedWith;
    return Volume.fromJSON(await this._json("POST", "/v1/volumes", o, { json }));
  }

  /**
   * GET /v1/volumes: the caller's volumes (root: everyone's).
   * @param {CallOptions} [opts]
   * @returns {Promise<Volume[]>}
   */
  async volumes(opts) {
    const out = await this._json("GET", "/v1/volumes", opts);
    const list = out && Array.isArray(out.volumes) ? out.volumes : [];
    return list.map((/** @type {unknown} */ v) => Volume.fromJSON(v));
  }

  /**
   * GET /v1/volumes/{name}: one volume, its use and the sessions that mount
   * it; NotFound for another user's. Root names another user's as
   * "{uid}/{name}".
   * @param {string | Volume} name
   * @param {CallOptions} [opts]
   */
  async volume(name, opts) {
    return Volume.fromJSON(await this._json("GET", apiPath("v1", "volumes", volumeName(name)), opts));
  }

  /**
   * PATCH /v1/volumes/{name}: `sharedWith` replaces the users the volume is
   * shared with ([]: no one); the owner or root only. Conflict while a user
   * left out has a session that mounts it: that user deletes those sessions
   * first.
   * @param {string | Volume} name
   * @param {{sharedWith: number[]} & CallOptions} opts
   */
  async updateVolume(name, opts) {
    const json = { shared_with: sharedWith(opts?.sharedWith) };
    return Volume.fromJSON(await this._json("PATCH", apiPath("v1", "volumes", volumeName(name)), opts, { json }));
  }

  /**
   * DELETE /v1/volumes/{name}: the volume and its files are gone. Conflict
   * while any session's record names it, running or stopped: delete those
   * sessions first.
   * @param {string | Volume} name
   * @param {CallOptions} [opts]
   */
  async deleteVolume(name, opts) {
    await this._json("DELETE", apiPath("v1", "volumes", volumeName(name)), opts);
  }

  // Snapshots and fork.

  /**
   * POST /v1/sessions/{id}/snapshots: the session's /workspace files and
   * settings kept as a snapshot, `name` the caller's name for it (unique
   * among theirs: Conflict otherwise). The session is frozen only while its
   * files are read, and runs on.
   * @param {string} id
   * @param {{name?: string} & CallOptions} [opts]
   */
  async createSnapshot(id, opts = {}) {
    const json = opts.name ? { name: opts.name } : {};
    return Snapshot.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "snapshots"), opts, { json }));
  }

  /**
   * GET /v1/snapshots: the caller's snapshots (root: everyone's).
   * @param {CallOptions} [opts]
   * @returns {Promise<Snapshot[]>}
   */
  async snapshots(opts) {
    const out = await this._json("GET", "/v1/snapshots", opts);
    const list = out && Array.isArray(out.snapshots) ? out.snapshots : [];
    return list.map((/** @type {unknown} */ s) => Snapshot.fromJSON(s));
  }

  /**
   * GET /v1/snapshots/{ref}: one snapshot, by its id or the caller's name
   * for it; NotFound for another user's.
   * @param {string | Snapshot} ref
   * @param {CallOptions} [opts]
   */
  async snapshot(ref, opts) {
    return Snapshot.fromJSON(await this._json("GET", apiPath("v1", "snapshots", snapshotRef(ref)), opts));
  }

  /**
   * DELETE /v1/snapshots/{ref}: the snapshot and its files are gone;
   * sessions made from it live on.
   * @param {string | Snapshot} ref
   * @param {CallOptions} [opts]
   */
  async deleteSnapshot(ref, opts) {
    await this._json("DELETE", apiPath("v1", "snapshots", snapshotRef(ref)), opts);
  }

  /**
   * POST /v1/sessions with a snapshot and a count: `count` sessions (1 to
   * MAX_COUNT, default 1) made from the snapshot, all of them or none. The
   * other options may be name (only with count 1), labels (added to the
   * snapshot's), env (over the snapshot's), idleAction, deadlineS and
   * volumes: the rest is the snapshot's (InvalidArgument otherwise).
   * createSession({snapshot}) makes one and resolves to it alone.
   * @param {string | Snapshot} snapshot
   * @param {Record<string, any> & {count?: number} & CallOptions} [opts]
   * @returns {Promise<Session[]>}
   */
  async createSessions(snapshot, opts = {}) {
    const { call, fields } = splitOptions(opts, ["count"]);
    const json = { ...sessionRequest({ ...fields, snapshot: snapshotRef(snapshot) }), count: checkCount(call.count) };
    return sessionList(await this._json("POST", "/v1/sessions", call, { json }));
  }

  /**
   * POST /v1/sessions/{id}/fork: `count` new sessions (1 to MAX_COUNT,
   * default 1) that start where session id is now: its files, settings and
   * volumes. The source is frozen only while its files are read, and runs
   * on; the snapshot in between is nobody's.
   * @param {string} id
   * @param {{count?: number} & CallOptions} [opts]
   * @returns {Promise<Session[]>}
   */
  async forkSession(id, opts = {}) {
    const json = { count: checkCount(opts.count) };
    return sessionList(await this._json("POST", apiPath("v1", "sessions", id, "fork"), opts, { json }));
  }

  // Undo.

  /**
   * POST /v1/sessions/{id}/undo: the session back over its last `steps`
   * executions (1 to MAX_CHECKPOINTS, default 1), whatever their language
   * or context: the interpreters and /workspace as they were before them.
   * Resolves to how many were undone. Conflict (the daemon's failed
   * precondition) for a session made without checkpoints, or for more
   * steps than it keeps. `steps` is a number or `{steps}` with the call's
   * options.
   * @param {string} id
   * @param {number | ({steps?: number} & CallOptions)} [steps]
   * @param {CallOptions} [opts]
   * @returns {Promise<number>}
   */
  async undo(id, steps, opts) {
    const o = typeof steps === "object" && steps !== null ? steps : { ...opts, steps };
    const json = { steps: checkSteps(o.steps) };
    const out = await this._json("POST", apiPath("v1", "sessions", id, "undo"), o, { json });
    return out && Number.isInteger(out.undone) ? out.undone : 0;
  }

  // Executions.

  /**
   * POST /v1/sessions/{id}/exec: runs code ("python" or "shell") in the
   * session. `timeoutS` is the execution's own (absent: the session's
   * timeout_s); an execution that times out or fails is an Execution whose
   * status says so, not an error. With onStdout / onStderr the output is
   * streamed to them as it comes, and with onDisplay each output the code
   * displays (display()) as it does. A streaming call that is abandoned
   * (aborted, timed out, a callback that throws) interrupts its execution
   * on the daemon; a plain one leaves it to finish.
   * @param {string} id
   * @param {string} code
   * `context` runs it in that code context (createContext; NotFound for
   * one the session has not), else in "default".
   * @param {{language?: string, timeoutS?: number, env?: Record<string, string>, cwd?: string, context?: string | CodeContext} & OutputCallbacks & CallOptions} [opts]
   */
  async exec(id, code, opts = {}) {
    return this._execution(
      apiPath("v1", "sessions", id, "exec"),
      execRequest(code, opts.language || "python", opts.timeoutS, opts.env, opts.cwd, opts.context),
      opts,
      execRequestTimeout(opts.requestTimeoutMs, opts.timeoutS),
    );
  }

  /**
   * POST /v1/sessions/{id}/exec with wait false: starts code in the session
   * and resolves to the execution's id at once (202), while the code runs
   * on (its `timeoutS` still holds; an execution already running in the
   * session goes first). execution(id, eid) tells how it goes,
   * waitExecution waits for its end; the session's history keeps it as any
   * other.
   * @param {string} id
   * @param {string} code
   * @param {{language?: string, timeoutS?: number, env?: Record<string, string>, cwd?: string, context?: string | CodeContext} & CallOptions} [opts]
   * @returns {Promise<string>}
   */
  async startExec(id, code, opts = {}) {
    const body = execRequest(code, opts.language || "python", opts.timeoutS, opts.env, opts.cwd, opts.context);
    body.wait = false;
    const out = await this._json("POST", apiPath("v1", "sessions", id, "exec"), opts, { json: body });
    const eid = out && typeof out === "object" ? out.id : undefined;
    if (typeof eid !== "string" || !eid) {
      throw new ProtocolError("sandboxd answered an exec with wait false without the execution's id");
    }
    return eid;
  }

  /**
   * GET /v1/sessions/{id}/executions/{eid}: status "running" with the
   * output so far while it runs, then the whole Execution while the
   * session's history keeps it (NotFound after, as for an id it never had).
   * @param {string} id
   * @param {string} eid
   * @param {CallOptions} [opts]
   */
  async execution(id, eid, opts) {
    return Execution.fromJSON(await this._json("GET", apiPath("v1", "sessions", id, "executions", eid), opts));
  }

  /**
   * Asks for execution eid every `pollMs` milliseconds until it no longer
   * runs, and resolves to it then. `timeoutMs` bounds the wait (absent or
   * null: as long as the execution runs, which its own timeout bounds):
   * past it, RequestTimeout, and the execution runs on. `signal` aborts the
   * wait (not the execution).
   * @param {string} id
   * @param {string} eid
   * @param {{timeoutMs?: number | null, pollMs?: number} & CallOptions} [opts]
   * @returns {Promise<Execution>}
   */
  async waitExecution(id, eid, opts = {}) {
    const { timeoutMs = null, pollMs = DEFAULT_POLL_MS, ...call } = opts;
    if (!(pollMs > 0)) throw new RangeError(`pollMs must be above 0, not ${pollMs}`);
    const deadline = timeoutMs === null ? null : Date.now() + timeoutMs;
    for (;;) {
      const e = await this.execution(id, eid, call);
      if (e.status !== STATUS_RUNNING) return e;
      let pause = pollMs;
      if (deadline !== null) {
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new RequestTimeout(
            `execution ${eid} of session ${id} was still running after ${Number(timeoutMs) / 1000} s: wait again, or interrupt it`,
          );
        }
        pause = Math.min(pause, left);
      }
      await sleep(pause, call.signal);
    }
  }

  /**
   * POST /v1/sessions/{id}/interrupt: interrupts the execution running in
   * the session, as Ctrl-C would (Python raises KeyboardInterrupt; a shell
   * command gets SIGINT, then SIGKILL after a grace). That execution answers
   * status "interrupted"; the session stays. false when nothing was running.
   * @param {string} id
   * @param {CallOptions} [opts]
   * @returns {Promise<boolean>}
   */
  async interrupt(id, opts) {
    const out = await this._json("POST", apiPath("v1", "sessions", id, "interrupt"), opts);
    return Boolean(out && out.interrupted === true);
  }

  /**
   * POST /v1/sessions/{id}/packages: pip install --user into the session's
   * /workspace. A failed install is an Execution with pip's exit code; a
   * bad requirement (an option, a URL) is InvalidArgument.
   * @param {string} id
   * @param {string | string[]} packages
   * @param {{indexUrl?: string} & OutputCallbacks & CallOptions} [opts]
   */
  async installPackages(id, packages, opts = {}) {
    /** @type {Record<string, any>} */
    const body = { packages: typeof packages === "string" ? [packages] : [...packages] };
    if (opts.indexUrl) body.index_url = opts.indexUrl;
    const timeout = opts.requestTimeoutMs === undefined ? null : opts.requestTimeoutMs;
    return this._execution(apiPath("v1", "sessions", id, "packages"), body, opts, timeout);
  }

  /**
   * POST /v1/run: code run once in a fresh sandbox, gone afterwards.
   * `files` are written first (path: content); the other options are the
   * fields of a create (template, memoryMb, env, ...). `timeoutS` is whole
   * seconds on this endpoint: a fraction is rounded up.
   * @param {string} code
   * @param {{language?: string, files?: Record<string, string | Uint8Array> | Map<string, string | Uint8Array>}
   *   & Record<string, any> & OutputCallbacks & CallOptions} [opts]
   */
  async run(code, opts = {}) {
    const { call, fields } = splitOptions(opts, ["language", "files", "onStdout", "onStderr", "onDisplay"]);
    if (fields.timeoutS !== undefined && fields.timeoutS !== null) fields.timeoutS = Math.ceil(fields.timeoutS);
    const body = sessionRequest(fields);
    body.language = call.language || "python";
    body.code = code;
    if (call.files) {
      const entries = call.files instanceof Map ? [...call.files.entries()] : Object.entries(call.files);
      if (entries.length) {
        body.files = entries.map(([path, content]) => ({
          path,
          content_base64: (typeof content === "string" ? Buffer.from(content, "utf8") : Buffer.from(content)).toString("base64"),
        }));
      }
    }
    return this._execution("/v1/run", body, call, execRequestTimeout(call.requestTimeoutMs, body.timeout_s));
  }

  /**
   * GET /v1/sessions/{id}/executions: the session's executions, newest
   * first, those running first, as summaries (no output: get one whole
   * with execution(id, eid)); limit 0 for all that are kept.
   * @param {string} id
   * @param {{limit?: number} & CallOptions} [opts]
   * @returns {Promise<ExecutionSummary[]>}
   */
  async executions(id, opts = {}) {
    /** @type {Array<[string, string]>} */
    const query = opts.limit && opts.limit > 0 ? [["limit", String(opts.limit)]] : [];
    const out = await this._json("GET", apiPath("v1", "sessions", id, "executions"), opts, { query });
    const list = out && Array.isArray(out.executions) ? out.executions : [];
    return list.filter((/** @type {unknown} */ e) => e !== null && typeof e === "object").map(ExecutionSummary.fromJSON);
  }

  /**
   * @param {string} path
   * @param {Record<string, any>} body
   * @param {OutputCallbacks & CallOptions} o
   * @param {number | null} timeoutMs
   * @returns {Promise<Execution>}
   */
  async _execution(path, body, o, timeoutMs) {
    const { onStdout, onStderr, onDisplay, signal } = o;
    const stream = Boolean(onStdout || onStderr || onDisplay);
    const a = await this._t.send("POST", path, { json: body, accept: stream ? STREAM_MIME : undefined, timeoutMs, signal });
    try {
      if (!stream || a.contentType !== STREAM_MIME) {
        // Not asked to stream, or a daemon that does not stream: the
        // Execution comes whole.
        return Execution.fromJSON(await a.json());
      }
      for await (const ev of a.lines()) {
        switch (ev.type) {
          case "stdout":
            // A callback that returns a promise is awaited, so callbacks
            // run in order and the call ends after the last one.
            if (onStdout) await onStdout(String(ev.data ?? ""));
            break;
          case "stderr":
            if (onStderr) await onStderr(String(ev.data ?? ""));
            break;
          case "display":
            if (onDisplay && ev.output !== null && typeof ev.output === "object" && !Array.isArray(ev.output)) {
              await onDisplay(Output.fromJSON(ev.output));
            }
            break;
          case "done":
            if (!ev.execution || typeof ev.execution !== "object") {
              throw new ProtocolError("sandboxd ended the stream without an execution", { requestId: a.requestId });
            }
            return Execution.fromJSON(ev.execution);
          case "error": {
            // The stream's status said 200; the line's code says the class.
            const d = ev.error && typeof ev.error === "object" ? ev.error : {};
            throw errorFromAnswer(
              null,
              String(d.code || "internal"),
              String(d.message || "sandboxd ended the stream with an error"),
              { requestId: a.requestId },
            );
          }
          default:
          // Other types are a newer daemon's: skipped, as the contract lets.
        }
      }
      throw new ProtocolError("sandboxd closed the stream before the execution ended", { requestId: a.requestId });
    } finally {
      a.close();
    }
  }

  // Background processes and attach.

  /**
   * POST /v1/sessions/{id}/processes: starts argv in the background (no
   * shell) and resolves to it, `pid` first: its output is
   * processLogs(id, pid).
   *
   * With `stdin` (its input kept open for writeStdin) or `tty` ({rows,
   * cols}: it runs on a terminal of that size) it is attached: the daemon
   * holds its streams, and its output is processOutput(id, pid) instead.
   * `tag` names it (Process.tag in processes()); `timeoutS` kills it that
   * many seconds after its start (absent: never).
   * @param {string} id
   * @param {string[]} argv
   * @param {StartProcessOptions} [opts]
   */
  async startProcess(id, argv, opts = {}) {
    const json = attachedFields(commandRequest(argv, opts.env, opts.cwd), opts);
    return Process.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "processes"), opts, { json }));
  }

  /**
   * GET /v1/sessions/{id}/processes: every process of the session's
   * sandbox (pid 1 is its agent), with its CPU time and memory.
   * @param {string} id
   * @param {CallOptions} [opts]
   * @returns {Promise<Process[]>}
   */
  async processes(id, opts) {
    const out = await this._json("GET", apiPath("v1", "sessions", id, "processes"), opts);
    const list = out && Array.isArray(out.processes) ? out.processes : [];
    return list.filter((/** @type {unknown} */ p) => p !== null && typeof p === "object").map(Process.fromJSON);
  }

  /**
   * DELETE /v1/sessions/{id}/processes/{pid}: sends `sig` ("TERM", "KILL",
   * "INT", "HUP", a number; absent: the daemon's default, TERM). NotFound
   * when there is no such process; pid 1 is InvalidArgument. (`opts.signal`
   * is the call's AbortSignal, as everywhere.)
   * @param {string} id
   * @param {number} pid
   * @param {string | number | null} [sig]
   * @param {CallOptions} [opts]
   */
  async signalProcess(id, pid, sig, opts) {
    /** @type {Array<[string, string]>} */
    const query = sig === undefined || sig === null || sig === "" ? [] : [["signal", String(sig)]];
    await this._json("DELETE", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid))), opts, { query });
  }

  /**
   * GET /v1/sessions/{id}/processes/{pid}/logs: a background process's
   * output from byte `offset`, whether it still runs and how it ended.
   * NotFound for a process not started in the background.
   * @param {string} id
   * @param {number} pid
   * @param {{offset?: number} & CallOptions} [opts]
   * @returns {Promise<ProcessLogs>}
   */
  async processLogs(id, pid, opts = {}) {
    const offset = Math.max(0, Math.trunc(opts.offset ?? 0));
    /** @type {Array<[string, string]>} */
    const query = offset > 0 ? [["offset", String(offset)]] : [];
    const a = await this._t.send("GET", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid)), "logs"), {
      query,
      timeoutMs: this._timeout(opts),
      signal: opts.signal,
    });
    try {
      const data = await a.read();
      const running = a.header(HEADER_PROCESS_RUNNING).trim().toLowerCase();
      if (running !== "true" && running !== "false") {
        // A follower that took a missing header for "ended" would stop
        // early, for "running" never: neither is safe.
        throw new ProtocolError(`sandboxd answered the logs of process ${pid} without ${HEADER_PROCESS_RUNNING}`, { requestId: a.requestId });
      }
      const raw = a.header(HEADER_PROCESS_EXIT_CODE).trim();
      const exitCode = /^-?\d+$/.test(raw) ? Number(raw) : null;
      return new ProcessLogs({ data, running: running === "true", exitCode, offset });
    } finally {
      a.close();
    }
  }

  /**
   * A background process's output from `offset` as it comes, Buffers (not
   * whole lines), until the process no longer runs; the generator's return
   * value is its exit code, when known. It asks again at once after an
   * answer with output, else after `pollMs`. `timeoutMs` bounds the whole:
   * past it, RequestTimeout, and the process runs on; `signal` aborts it.
   * @param {string} id
   * @param {number} pid
   * @param {FollowOptions} [opts]
   * @returns {AsyncGenerator<Buffer, number | null>}
   */
  async *followProcess(id, pid, opts = {}) {
    const { offset = 0, pollMs = DEFAULT_FOLLOW_MS, timeoutMs = null, ...call } = opts;
    if (!(pollMs > 0)) throw new RangeError(`pollMs must be above 0, not ${pollMs}`);
    const deadline = timeoutMs === null ? null : Date.now() + timeoutMs;
    let at = Math.max(0, Math.trunc(offset));
    for (;;) {
      const got = await this.processLogs(id, pid, { ...call, offset: at });
      if (got.data.length) {
        yield got.data;
        at = got.nextOffset;
      }
      // The daemon tells "running" before it sends the output, so an answer
      // that says ended holds everything the process wrote.
      if (!got.running) return got.exitCode;
      let pause = got.data.length ? 0 : pollMs;
      if (deadline !== null) {
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new RequestTimeout(
            `process ${pid} of session ${id} was still running after ${Number(timeoutMs) / 1000} s: follow it again from offset ${at}, or kill it`,
          );
        }
        pause = Math.min(pause, left);
      }
      if (pause > 0) await sleep(pause, call.signal);
    }
  }

  // Attached processes: started with stdin or a tty, their streams held by
  // the daemon.

  /**
   * POST /v1/sessions/{id}/processes/{pid}/stdin: sends `data` (a string as
   * UTF-8) to an attached process's input, its terminal's with a tty;
   * `eof` closes the input after it. Conflict once the process ended or
   * its input is closed; NotFound for a process not attached.
   * @param {string} id
   * @param {number} pid
   * @param {string | Uint8Array} data
   * @param {{eof?: boolean} & CallOptions} [opts]
   */
  async writeStdin(id, pid, data, opts = {}) {
    if (typeof data !== "string" && !(data instanceof Uint8Array)) throw new TypeError("data is a string or a Uint8Array (a Buffer)");
    /** @type {Array<[string, string]>} */
    const query = opts.eof ? [["eof", "1"]] : [];
    const a = await this._t.send("POST", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid)), "stdin"), {
      query,
      body: typeof data === "string" ? Buffer.from(data, "utf8") : data,
      timeoutMs: this._timeout(opts),
      signal: opts.signal,
    });
    try {
      await a.read();
    } finally {
      a.close();
    }
  }

  /**
   * Closes an attached process's input (end of file), as writeStdin(id,
   * pid, "", {eof: true}).
   * @param {string} id
   * @param {number} pid
   * @param {CallOptions} [opts]
   */
  closeStdin(id, pid, opts = {}) {
    return this.writeStdin(id, pid, Buffer.alloc(0), { ...opts, eof: true });
  }

  /**
   * POST /v1/sessions/{id}/processes/{pid}/resize: sets the size of an
   * attached process's terminal. Conflict for one without a terminal.
   * @param {string} id
   * @param {number} pid
   * @param {number} rows
   * @param {number} cols
   * @param {CallOptions} [opts]
   */
  async resizeProcess(id, pid, rows, cols, opts) {
    const json = termSize(rows, cols);
    await this._json("POST", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid)), "resize"), opts, { json });
  }

  /**
   * POST /v1/sessions/{id}/processes/{pid}/signal: sends `sig` ("TERM",
   * "KILL", "INT", "HUP", a number) to process pid, as signalProcess does
   * with DELETE. NotFound when there is no such process; pid 1 and unknown
   * signals are InvalidArgument.
   * @param {string} id
   * @param {number} pid
   * @param {string | number} [sig]
   * @param {CallOptions} [opts]
   */
  async sendSignal(id, pid, sig = "TERM", opts) {
    const json = { signal: String(sig) };
    await this._json("POST", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid)), "signal"), opts, { json });
  }

  /**
   * GET /v1/sessions/{id}/processes/{pid}/output: an attached process's
   * output from `from` ("start": what the daemon still keeps, its last
   * MiB; "now"; or a byte offset), chunk by chunk as it comes. With
   * `follow` (the default) it goes on until the process ends, the last
   * chunk its end (`exitCode` set, no data); without, it answers what
   * there is and stops. The generator's return value is the exit code,
   * null when it did not end.
   *
   * A followed process may be silent for as long as it runs, so without
   * `requestTimeoutMs` a follow waits however long it takes; `signal`, or
   * leaving the loop, hangs up (the process runs on).
   * @param {string} id
   * @param {number} pid
   * @param {OutputOptions} [opts]
   * @returns {AsyncGenerator<ProcessChunk, number | null>}
   */
  async *processOutput(id, pid, opts = {}) {
    const follow = opts.follow ?? true;
    /** @type {Array<[string, string]>} */
    const query = [["from", fromQuery(opts.from)]];
    if (follow) query.push(["follow", "1"]);
    const a = await this._t.send("GET", apiPath("v1", "sessions", id, "processes", String(Math.trunc(pid)), "output"), {
      query,
      accept: STREAM_MIME,
      timeoutMs: opts.requestTimeoutMs !== undefined ? opts.requestTimeoutMs : follow ? null : this.requestTimeoutMs,
      signal: opts.signal,
    });
    try {
      for await (const line of a.lines()) {
        if (line.type === "error") {
          // The stream's status said 200; the line's code says the class.
          const d = line.error && typeof line.error === "object" ? line.error : {};
          throw errorFromAnswer(null, String(d.code || "internal"), String(d.message || "sandboxd ended the output stream with an error"), {
            requestId: a.requestId,
          });
        }
        /** @type {ProcessChunk} */
        let chunk;
        try {
          chunk = ProcessChunk.fromJSON(line);
        } catch (err) {
          throw new ProtocolError(`bad output line from sandboxd: ${/** @type {Error} */ (err).message}`, { requestId: a.requestId });
        }
        yield chunk;
        if (chunk.ended) return chunk.exitCode;
      }
      return null;
    } finally {
      a.close();
    }
  }

  /**
   * POST /v1/sessions/{id}/attach: runs argv (no shell) in the session's
   * sandbox beside its interpreter, as the sandbox's user, with its
   * standard streams on a connection of its own (exec -i; `tty` gives it a
   * terminal of `rows` x `cols`, default 24 x 80, whose output is all
   * stdout). It has no timeout; the session counts as in use while it runs.
   * A refusal (a session not running, a command that cannot start, tty
   * under runsc) rejects as any call; `requestTimeoutMs` and `signal` bound
   * the handshake alone.
   * @param {string} id
   * @param {string[]} argv
   * @param {AttachOptions} [opts]
   * @returns {Promise<Attached>}
   */
  async attach(id, argv, opts = {}) {
    const { socket, head, requestId } = await this._t.upgrade(apiPath("v1", "sessions", id, "attach"), {
      json: attachRequest(argv, opts),
      protocol: ATTACH_UPGRADE,
      timeoutMs: this._timeout(opts),
      signal: opts.signal,
    });
    return new Attached(socket, head, requestId);
  }

  // Files.

  /**
   * PUT …/files: writes a file (a string as UTF-8; a Readable or an async
   * iterable of bytes is streamed), making its parent folders. It replaces
   * an old file only once complete, and with it its metadata: the file has
   * exactly the `metadata` given (keys lower case; stat and listings
   * answer it).
   * @param {string} id
   * @param {string} path
   * @param {import("./transport.js").Body} data
   * @param {{metadata?: Record<string, string>} & CallOptions} [opts]
   */
  async putFile(id, path, data, opts) {
    const a = await this._t.send("PUT", apiPath("v1", "sessions", id, "files"), {
      query: [["path", path]],
      headers: metaHeaders(opts && opts.metadata),
      body: data ?? Buffer.alloc(0),
      timeoutMs: this._timeout(opts),
      signal: opts && opts.signal,
    });
    try {
      return FileWritten.fromJSON(await a.json());
    } finally {
      a.close();
    }
  }

  /**
   * GET …/files: a file's bytes, or for a folder its entries.
   * @param {string} id
   * @param {string} path
   * @param {CallOptions} [opts]
   * @returns {Promise<Buffer | FileInfo[]>}
   */
  async getFile(id, path, opts) {
    const a = await this._t.send("GET", apiPath("v1", "sessions", id, "files"), {
      query: [["path", path]],
      timeoutMs: this._timeout(opts),
      signal: opts && opts.signal,
    });
    try {
      // The daemon tells a folder by answering JSON, a file by bytes.
      if (a.contentType === "application/json") {
        const out = await a.json();
        return ((out && out.entries) || []).map(FileInfo.fromJSON);
      }
      return await a.read();
    } finally {
      a.close();
    }
  }

  /**
   * DELETE …/files: removes a file, or a folder with its contents.
   * @param {string} id @param {string} path @param {CallOptions} [opts]
   */
  async deleteFile(id, path, opts) {
    await this._json("DELETE", apiPath("v1", "sessions", id, "files"), opts, { query: [["path", path]] });
  }

  /**
   * PUT …/files?format=tar: unpacks a tar stream (a Buffer, a Readable or an
   * async iterable of bytes, streamed) into the folder `path`, made as
   * needed: folders, files and symlinks (as links, never followed). An
   * entry that would leave the folder (an absolute name, "..") refuses the
   * whole upload (InvalidArgument), though what came before it may be
   * written. Resolves to the folder, the files' total size and how many
   * files it wrote.
   * @param {string} id
   * @param {string} path
   * @param {import("./transport.js").Body} data
   * @param {CallOptions} [opts]
   */
  async putTar(id, path, data, opts) {
    const a = await this._t.send("PUT", apiPath("v1", "sessions", id, "files"), {
      query: [
        ["path", path],
        ["format", "tar"],
      ],
      body: data ?? Buffer.alloc(0),
      headers: { "Content-Type": TAR_MIME },
      timeoutMs: this._timeout(opts),
      signal: opts && opts.signal,
    });
    try {
      return FileWritten.fromJSON(await a.json());
    } finally {
      a.close();
    }
  }

  /**
   * GET …/files?format=tar: the folder `path` (or a file) as a tar stream,
   * its contents under its own name, read as it comes; destroy the stream
   * to stop early. A copy that fails once the stream has begun is a stream
   * cut short, which tar readers tell by its missing end
   * (files.downloadDir rejects with ProtocolError).
   * @param {string} id
   * @param {string} path
   * @param {CallOptions} [opts]
   * @returns {Promise<Readable>}
   */
  async getTar(id, path, opts) {
    const a = await this._t.send("GET", apiPath("v1", "sessions", id, "files"), {
      query: [
        ["path", path],
        ["format", "tar"],
      ],
      timeoutMs: this._timeout(opts),
      signal: opts && opts.signal,
    });
    return Readable.from(
      (async function* () {
        try {
          yield* a.chunks();
        } finally {
          a.close();
        }
      })(),
      { objectMode: false },
    );
  }

  /**
   * GET …/files/stat: a file, folder or symlink (never followed).
   * @param {string} id @param {string} path @param {CallOptions} [opts]
   */
  async statFile(id, path, opts) {
    return FileStat.fromJSON(await this._json("GET", apiPath("v1", "sessions", id, "files", "stat"), opts, { query: [["path", path]] }));
  }

  /**
   * POST …/files/mkdir: makes a folder and those above it (mkdir -p);
   * `created` says whether this call made it (false: it was there).
   * @param {string} id @param {string} path @param {CallOptions} [opts]
   */
  async makeFolder(id, path, opts) {
    return FileStat.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "files", "mkdir"), opts, { json: { path } }));
  }

  /**
   * POST …/files/move: renames within /workspace or within /tmp; never
   * replaces (Conflict if `to` exists). Resolves to `to`'s stat.
   * @param {string} id @param {string} from @param {string} to @param {CallOptions} [opts]
   */
  async moveFile(id, from, to, opts) {
    return FileStat.fromJSON(await this._json("POST", apiPath("v1", "sessions", id, "files", "move"), opts, { json: { from, to } }));
  }

  /**
   * GET …/files?depth=N: a folder's entries to `depth` levels (deeper
   * entries carry their whole `path`); PayloadTooLarge past 10000.
   * @param {string} id @param {string} path @param {number} [depth] @param {CallOptions} [opts]
   * @returns {Promise<FileInfo[]>}
   */
  async listFolder(id, path, depth = 1, opts) {
    const out = await this._json("GET", apiPath("v1", "sessions", id, "files"), opts, {
      query: [
        ["path", path],
        ["depth", String(depth)],
      ],
    });
    return ((out && out.entries) || []).map(FileInfo.fromJSON);
  }

  /**
   * GET …/files/watch: the changes in a folder (and below it, `recursive`)
   * as they happen. The generator ends when the daemon ends the stream
   * (the session's sandbox or the folder is gone); leaving the `for await`
   * or `signal` ends the watch. A quiet watch is not an error: no timeout
   * applies unless `requestTimeoutMs` is given.
   * @param {string} id @param {string} path
   * @param {{recursive?: boolean} & CallOptions} [opts]
   * @returns {AsyncGenerator<FileEvent>}
   */
  async *watchFiles(id, path, opts = {}) {
    /** @type {Array<[string, string]>} */
    const query = [["path", path]];
    if (opts.recursive) query.push(["recursive", "1"]);
    const a = await this._t.send("GET", apiPath("v1", "sessions", id, "files", "watch"), {
      query,
      accept: STREAM_MIME,
      timeoutMs: opts.requestTimeoutMs ?? null,
      signal: opts.signal,
    });
    try {
      for await (const ev of a.lines()) {
        if (ev.type === "error") {
          const d = ev.error && typeof ev.error === "object" ? ev.error : {};
          throw errorFromAnswer(null, String(d.code || "internal"), String(d.message || "sandboxd ended the watch with an error"), {
            requestId: a.requestId,
          });
        }
        yield FileEvent.fromJSON(ev);
      }
    } finally {
      a.close();
    }
  }

  // The daemon. info and node answer objects as the daemon sends them: they
  // describe the host and grow with every release.

  /**
   * GET /v1/health: "ok" ("degraded" from daemons before the checks, when
   * the host was short of disk). An unhealthy daemon rejects with
   * Unavailable saying why, as one that cannot be reached does:
   * healthStatus() resolves to its reasons instead.
   * @param {CallOptions} [opts]
   * @returns {Promise<string>}
   */
  async health(opts) {
    const out = await this._json("GET", "/v1/health", opts);
    return String((out && out.status) || "");
  }

  /**
   * GET /v1/health as a Health: `ok`, or status "unhealthy" with its
   * `reasons` and `checks` (the daemon's 503), without rejecting for it. A
   * daemon that cannot be reached, or a 503 that is not a Health (a
   * proxy's), still rejects with Unavailable.
   * @param {CallOptions} [opts]
   * @returns {Promise<Health>}
   */
  async healthStatus(opts) {
    const a = await this._t.send("GET", "/v1/health", { timeoutMs: this._timeout(opts), signal: opts && opts.signal, answers: [UNHEALTHY] });
    try {
      if (a.status !== UNHEALTHY) return Health.fromJSON(await a.json());
      const raw = await a.read();
      /** @type {any} */
      let out = null;
      try {
        out = JSON.parse(raw.toString("utf8"));
      } catch {
        out = null;
      }
      if (!out || typeof out !== "object" || typeof out.status !== "string") {
        throw errorOf(a.status, "Service Unavailable", raw, a.requestId, a.header("retry-after"));
      }
      return Health.fromJSON(out);
    } finally {
      a.close();
    }
  }

  /**
   * GET /v1/info: version, runtimes, limits' defaults and maxima, pools.
   * @param {CallOptions} [opts]
   * @returns {Promise<Record<string, any>>}
   */
  async info(opts) {
    const out = await this._json("GET", "/v1/info", opts);
    return out && typeof out === "object" ? out : {};
  }

  /**
   * GET /v1/node: the daemon as a scheduler sees it.
   * @param {CallOptions} [opts]
   * @returns {Promise<Record<string, any>>}
   */
  async node(opts) {
    const out = await this._json("GET", "/v1/node", opts);
    return out && typeof out === "object" ? out : {};
  }

  /**
   * POST /v1/node/drain (root only; PermissionDenied otherwise): while the
   * node drains (`state` "draining"), creates and one-shot runs reject with
   * Unavailable and a retryAfter, so that a scheduler places new work
   * elsewhere, and the sessions here run on. `drain(false)` takes sessions
   * again. Resolves to the node, as node() does; the state outlives a
   * restart of the daemon.
   * @param {boolean} [on]
   * @param {CallOptions} [opts]
   * @returns {Promise<Record<string, any>>}
   */
  async drain(on = true, opts) {
    const out = await this._json("POST", "/v1/node/drain", opts, { json: { drain: Boolean(on) } });
    return out && typeof out === "object" ? out : {};
  }
}
