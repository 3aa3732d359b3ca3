// Typed answers of the sandboxd API (the wire types of api/types.go), with
// camelCase names.
//
// Each is read from the daemon's JSON with `fromJSON`. Reading is lenient: a
// field a newer daemon adds is ignored and a field an older one lacks takes
// its zero value, so the SDK and the daemon can be upgraded apart.

// Execution statuses (docs/API.md, Execution). A timeout or a kill is not an
// error: it is an Execution with one of these. "running" is the status of
// one started with wait false (Client.startExec) that has not ended.
export const STATUS_RUNNING = "running";
export const STATUS_OK = "ok";
export const STATUS_ERROR = "error";
export const STATUS_TIMEOUT = "timeout";
export const STATUS_KILLED = "killed";
export const STATUS_INTERRUPTED = "interrupted";
export const STATUS_LOST = "lost";

// Go writes times with up to nine digits of fraction; Date keeps three.
const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/;

/**
 * An RFC 3339 time of the wire; null when absent, unreadable or Go's zero time.
 * @param {unknown} v
 * @returns {Date | null}
 */
function time(v) {
  if (typeof v !== "string" || !v || v.startsWith("0001-01-01")) return null;
  const m = RFC3339.exec(v);
  if (!m) return null;
  const frac = m[2] ? "." + m[2].slice(0, 3).padEnd(3, "0") : "";
  const d = new Date(m[1] + frac + m[3]);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** @param {any} d @param {string} k */
const str = (d, k) => (typeof d[k] === "string" ? d[k] : "");
/** @param {any} d @param {string} k */
const num = (d, k) => (typeof d[k] === "number" && Number.isFinite(d[k]) ? d[k] : 0);
/** @param {any} d @param {string} k */
const int = (d, k) => Math.trunc(num(d, k));
/**
 * A whole number the wire may leave out, where absent is not 0 (caller_uid
 * 0 is root): null then.
 * @param {any} d @param {string} k @returns {number | null}
 */
const optInt = (d, k) => (typeof d[k] === "number" && Number.isFinite(d[k]) ? Math.trunc(d[k]) : null);
/** @param {any} d @param {string} k */
const isObj = (d, k) => d[k] !== null && typeof d[k] === "object" && !Array.isArray(d[k]);
/** @param {any} d @param {string} k @returns {Record<string, string>} */
const strMap = (d, k) =>
  isObj(d, k) ? Object.fromEntries(Object.entries(d[k]).map(([a, b]) => [String(a), String(b)])) : {};
/** @param {any} d @param {string} k @returns {string[]} */
const strs = (d, k) => (Array.isArray(d[k]) ? d[k].map(String) : []);
/** @param {unknown} d @returns {any} */
const obj = (d) => (d !== null && typeof d === "object" && !Array.isArray(d) ? d : {});

/** The resources one session may use (docs/API.md, Session). */
export class Limits {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {number} */
    this.memoryMb = f.memoryMb ?? 0;
    /** @type {number} */
    this.cpus = f.cpus ?? 0;
    /** @type {number} */
    this.pids = f.pids ?? 0;
    /** @type {number} */
    this.diskMb = f.diskMb ?? 0;
    /** @type {number} */
    this.timeoutS = f.timeoutS ?? 0;
    /** @type {number} */
    this.idleTimeoutS = f.idleTimeoutS ?? 0;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Limits({
      memoryMb: int(d, "memory_mb"),
      cpus: num(d, "cpus"),
      pids: int(d, "pids"),
      diskMb: int(d, "disk_mb"),
      timeoutS: int(d, "timeout_s"),
      idleTimeoutS: int(d, "idle_timeout_s"),
    });
  }
}

/** One sandbox with its persistent interpreter, as the daemon last told it. */
export class Session {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.id = f.id ?? "";
    /** @type {string} */
    this.status = f.status ?? "";
    /** @type {string} */
    this.template = f.template ?? "";
    /** @type {string} */
    this.runtime = f.runtime ?? "";
    /** @type {number} */
    this.ownerUid = f.ownerUid ?? 0;
    /** @type {string} */
    this.reason = f.reason ?? "";
    /** @type {Date | null} */
    this.createdAt = f.createdAt ?? null;
    /** @type {Date | null} */
    this.lastUsedAt = f.lastUsedAt ?? null;
    /** @type {number} */
    this.execCount = f.execCount ?? 0;
    /** @type {Limits} */
    this.limits = f.limits ?? new Limits();
    /** @type {string} */
    this.network = f.network ?? "";
    /** @type {string[]} */
    this.allow = f.allow ?? [];
    /** @type {number} */
    this.egressKbps = f.egressKbps ?? 0;
    /** @type {number} */
    this.maxConnections = f.maxConnections ?? 0;
    /** @type {Record<string, string>} */
    this.labels = f.labels ?? {};
    /** @type {string[]} */
    this.mcpServers = f.mcpServers ?? [];
    /** @type {string} */
    this.idleAction = f.idleAction ?? "";
    /** @type {string} */
    this.name = f.name ?? "";
    /** When the session ends whatever it does; null: no deadline. @type {Date | null} */
    this.deadline = f.deadline ?? null;
    /** The volumes it mounts. @type {VolumeMount[]} */
    this.volumes = f.volumes ?? [];
    /** How many executions undo can go back (0: none). @type {number} */
    this.checkpoints = f.checkpoints ?? 0;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Session({
      id: str(d, "id"),
      status: str(d, "status"),
      template: str(d, "template"),
      runtime: str(d, "runtime"),
      ownerUid: int(d, "owner_uid"),
      reason: str(d, "reason"),
      createdAt: time(d.created_at),
      lastUsedAt: time(d.last_used_at),
      execCount: int(d, "exec_count"),
      limits: Limits.fromJSON(d.limits),
      network: str(d, "network"),
      allow: strs(d, "allow"),
      egressKbps: int(d, "egress_kbps"),
      maxConnections: int(d, "max_connections"),
      labels: strMap(d, "labels"),
      mcpServers: strs(d, "mcp_servers"),
      idleAction: str(d, "idle_action"),
      name: str(d, "name"),
      deadline: time(d.deadline),
      volumes: Array.isArray(d.volumes) ? d.volumes.map((/** @type {unknown} */ v) => VolumeMount.fromJSON(v)) : [],
      checkpoints: int(d, "checkpoints"),
    });
  }
}

/** A Python exception raised by the executed code. */
export class ExecutionError {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.name = f.name ?? "";
    /** @type {string} */
    this.value = f.value ?? "";
    /** @type {string} */
    this.traceback = f.traceback ?? "";
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new ExecutionError({ name: str(d, "name"), value: str(d, "value"), traceback: str(d, "traceback") });
  }

  toString() {
    return this.value ? `${this.name}: ${this.value}` : this.name;
  }
}

// The types whose bundle data is base64; the others' is text.
const BINARY_MIMES = ["image/png", "image/jpeg"];

/**
 * One rich output of an execution: a matplotlib figure, what the code's
 * display() showed, or the last expression's rich representations (a
 * DataFrame's HTML).
 *
 * `mime` and `data` are the richest representation, `data` base64 as on the
 * wire (`content` is it decoded); `bundle` has every representation,
 * Jupyter's way (mime -> data: text as text, images base64; empty for a
 * figure). `png`, `jpeg`, `svg`, `html`, `markdown`, `json` and `text` give
 * each representation in the form its type fits, null when the output has
 * none of that type.
 */
export class Output {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.mime = f.mime ?? "";
    /** @type {string} */
    this.data = f.data ?? "";
    /** @type {Record<string, string>} */
    this.bundle = f.bundle ?? {};
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Output({ mime: str(d, "mime"), data: str(d, "data"), bundle: strMap(d, "bundle") });
  }

  /** @returns {Buffer} */
  get content() {
    return Buffer.from(this.data, "base64");
  }

  /** @param {string} mime @returns {Buffer | null} */
  _bytes(mime) {
    if (Object.hasOwn(this.bundle, mime)) {
      const v = this.bundle[mime];
      return BINARY_MIMES.includes(mime) ? Buffer.from(v, "base64") : Buffer.from(v, "utf8");
    }
    return this.mime === mime ? this.content : null;
  }

  /** @param {string} mime @returns {string | null} */
  _text(mime) {
    if (Object.hasOwn(this.bundle, mime) && !BINARY_MIMES.includes(mime)) return this.bundle[mime];
    const b = this._bytes(mime);
    return b === null ? null : b.toString("utf8");
  }

  get png() {
    return this._bytes("image/png");
  }

  get jpeg() {
    return this._bytes("image/jpeg");
  }

  get svg() {
    return this._text("image/svg+xml");
  }

  get html() {
    return this._text("text/html");
  }

  get markdown() {
    return this._text("text/markdown");
  }

  /**
   * The application/json representation, parsed (null without one).
   * @returns {any}
   */
  get json() {
    const t = this._text("application/json");
    return t === null ? null : JSON.parse(t);
  }

  get text() {
    return this._text("text/plain");
  }
}

/**
 * What one execution used: `wallMs` is its duration; `cpuMs` and
 * `memoryPeakBytes` are the session's cgroup's CPU time and memory peak
 * while it ran (the interpreter, what it started, and anything else the
 * session ran meanwhile).
 */
export class ExecMetrics {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {number} */
    this.wallMs = f.wallMs ?? 0;
    /** @type {number} */
    this.cpuMs = f.cpuMs ?? 0;
    /** @type {number} */
    this.memoryPeakBytes = f.memoryPeakBytes ?? 0;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new ExecMetrics({ wallMs: num(d, "wall_ms"), cpuMs: num(d, "cpu_ms"), memoryPeakBytes: int(d, "memory_peak_bytes") });
  }
}

/**
 * The metrics of an execution's JSON; null from a daemon (or a history)
 * older than them.
 * @param {any} d
 */
const metrics = (d) => (isObj(d, "metrics") ? ExecMetrics.fromJSON(d.metrics) : null);

/**
 * The outcome of one piece of code (docs/API.md, Execution). `status` is
 * ok, error, timeout, killed, interrupted or lost, or running for one
 * started with wait false that has not ended (its output so far); `result`
 * is the repr of Python's last expression (null when there is none);
 * `error` the exception, if any. `metrics`, `codeSha256` and `callerUid`
 * are null or empty from a daemon (or a history) older than them.
 */
export class Execution {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.id = f.id ?? "";
    /** @type {string} */
    this.sessionId = f.sessionId ?? "";
    /** @type {string} */
    this.language = f.language ?? "";
    /** @type {string} */
    this.status = f.status ?? "";
    /** @type {string} */
    this.stdout = f.stdout ?? "";
    /** @type {string} */
    this.stderr = f.stderr ?? "";
    /** @type {number} */
    this.exitCode = f.exitCode ?? 0;
    /** @type {string | null} */
    this.result = f.result ?? null;
    /** @type {ExecutionError | null} */
    this.error = f.error ?? null;
    /** @type {Output[]} */
    this.outputs = f.outputs ?? [];
    /** @type {Date | null} */
    this.startedAt = f.startedAt ?? null;
    /** @type {number} */
    this.durationMs = f.durationMs ?? 0;
    /** @type {boolean} */
    this.truncated = f.truncated ?? false;
    /** @type {boolean} */
    this.stateReset = f.stateReset ?? false;
    /** @type {boolean} */
    this.summarized = f.summarized ?? false;
    /** @type {ExecMetrics | null} */
    this.metrics = f.metrics ?? null;
    /** @type {string} */
    this.codeSha256 = f.codeSha256 ?? "";
    /** @type {number | null} */
    this.callerUid = f.callerUid ?? null;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Execution({
      id: str(d, "id"),
      sessionId: str(d, "session_id"),
      language: str(d, "language"),
      status: str(d, "status"),
      stdout: str(d, "stdout"),
      stderr: str(d, "stderr"),
      exitCode: int(d, "exit_code"),
      result: typeof d.result === "string" ? d.result : null,
      error: isObj(d, "error") ? ExecutionError.fromJSON(d.error) : null,
      outputs: Array.isArray(d.outputs)
        ? d.outputs.filter((/** @type {unknown} */ o) => o !== null && typeof o === "object").map(Output.fromJSON)
        : [],
      startedAt: time(d.started_at),
      durationMs: num(d, "duration_ms"),
      truncated: d.truncated === true,
      stateReset: d.state_reset === true,
      summarized: d.summarized === true,
      metrics: metrics(d),
      codeSha256: str(d, "code_sha256"),
      callerUid: optInt(d, "caller_uid"),
    });
  }

  /** The code ran to its end without an exception or a non-zero exit. */
  get ok() {
    return this.status === STATUS_OK;
  }

  /** The result, as E2B's Execution.text names it. */
  get text() {
    return this.result;
  }
}

/**
 * One execution as the list of a session's executions gives it (GET
 * /v1/sessions/{id}/executions): how it went, without its output.
 * Client.execution (Sandbox.execution) has the whole of it while the
 * history keeps it. `exitCode` is null while it runs.
 */
export class ExecutionSummary {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.id = f.id ?? "";
    /** @type {string} */
    this.language = f.language ?? "";
    /** @type {string} */
    this.codeSha256 = f.codeSha256 ?? "";
    /** @type {number | null} */
    this.callerUid = f.callerUid ?? null;
    /** @type {Date | null} */
    this.startedAt = f.startedAt ?? null;
    /** @type {number} */
    this.durationMs = f.durationMs ?? 0;
    /** @type {string} */
    this.status = f.status ?? "";
    /** @type {number | null} */
    this.exitCode = f.exitCode ?? null;
    /** @type {ExecMetrics | null} */
    this.metrics = f.metrics ?? null;
    /** @type {boolean} */
    this.stateReset = f.stateReset ?? false;
    /** @type {boolean} */
    this.truncated = f.truncated ?? false;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new ExecutionSummary({
      id: str(d, "id"),
      language: str(d, "language"),
      codeSha256: str(d, "code_sha256"),
      callerUid: optInt(d, "caller_uid"),
      startedAt: time(d.started_at),
      durationMs: num(d, "duration_ms"),
      status: str(d, "status"),
      exitCode: optInt(d, "exit_code"),
      metrics: metrics(d),
      stateReset: d.state_reset === true,
      truncated: d.truncated === true,
    });
  }

  /** It ran to its end without an exception or a non-zero exit. */
  get ok() {
    return this.status === STATUS_OK;
  }
}

/** One entry of a folder listing; `type` is file, dir, symlink or other. */
export class FileInfo {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.name = f.name ?? "";
    /** @type {string} */
    this.type = f.type ?? "";
    /** @type {number} */
    this.size = f.size ?? 0;
    /** @type {string} */
    this.mode = f.mode ?? "";
    /** @type {Date | null} */
    this.modifiedAt = f.modifiedAt ?? null;
    /** The entry's whole path, in a listing deeper than one level ("" otherwise). @type {string} */
    this.path = f.path ?? "";
    /** The permission bits as ls writes them ("-rw-r--r--"). @type {string} */
    this.permissions = f.permissions ?? "";
    /** The entry's user metadata (its user. extended attributes); {} when none. @type {Record<string, string>} */
    this.metadata = f.metadata ?? {};
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new FileInfo({
      name: str(d, "name"),
      type: str(d, "type"),
      size: int(d, "size"),
      mode: str(d, "mode"),
      modifiedAt: time(d.modified_at),
      path: str(d, "path"),
      permissions: str(d, "permissions"),
      metadata: strMap(d, "metadata"),
    });
  }

  get isDir() {
    return this.type === "dir";
  }
}

/**
 * A file, folder or symlink (never followed), as GET …/files/stat answers:
 * `mode` the octal permission bits ("0644"), `permissions` as ls writes
 * them ("-rw-r--r--"), `owner` and `group` the sandbox's names (or the
 * number); `created` only from mkdir: whether it made the folder.
 */
export class FileStat {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.name = f.name ?? "";
    /** @type {string} */
    this.path = f.path ?? "";
    /** @type {string} */
    this.type = f.type ?? "";
    /** @type {number} */
    this.size = f.size ?? 0;
    /** @type {string} */
    this.mode = f.mode ?? "";
    /** @type {string} */
    this.permissions = f.permissions ?? "";
    /** @type {string} */
    this.owner = f.owner ?? "";
    /** @type {string} */
    this.group = f.group ?? "";
    /** @type {Date | null} */
    this.mtime = f.mtime ?? null;
    /** @type {string | null} */
    this.symlinkTarget = f.symlinkTarget ?? null;
    /** @type {boolean | null} */
    this.created = f.created ?? null;
    /** The user metadata of a file or folder (files.write's `metadata`); {} when none. @type {Record<string, string>} */
    this.metadata = f.metadata ?? {};
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new FileStat({
      name: str(d, "name"),
      path: str(d, "path"),
      type: str(d, "type"),
      size: int(d, "size"),
      mode: str(d, "mode"),
      permissions: str(d, "permissions"),
      owner: str(d, "owner"),
      group: str(d, "group"),
      mtime: time(d.mtime),
      symlinkTarget: typeof d.symlink_target === "string" && d.symlink_target ? d.symlink_target : null,
      created: typeof d.created === "boolean" ? d.created : null,
      metadata: strMap(d, "metadata"),
    });
  }

  get isDir() {
    return this.type === "dir";
  }
}

/**
 * A code context of a session (sbx.contexts): an interpreter of its own,
 * whose globals and imports no other context sees, or for `language`
 * "shell" a working folder; `cwd` is where its executions run unless they
 * say another. "default" is the session's first one.
 */
export class CodeContext {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.id = f.id ?? "";
    /** @type {string} */
    this.language = f.language ?? "";
    /** @type {string} */
    this.cwd = f.cwd ?? "";
    /** @type {Date | null} */
    this.createdAt = f.createdAt ?? null;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new CodeContext({ id: str(d, "id"), language: str(d, "language"), cwd: str(d, "cwd"), createdAt: time(d.created_at) });
  }
}

/**
 * A volume a session mounts: the caller's volume `name` at `path` in the
 * sandbox (absolute), read-only or not. Sandbox.create({volumes}) takes
 * these or plain objects of the same fields; Session.volumes reads them back.
 */
export class VolumeMount {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.name = f.name ?? "";
    /** @type {string} */
    this.path = f.path ?? "";
    /** @type {boolean} */
    this.readOnly = f.readOnly ?? false;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new VolumeMount({ name: str(d, "name"), path: str(d, "path"), readOnly: d.read_only === true });
  }
}

/**
 * A filesystem of its own size that outlives sessions (docs/API.md,
 * Volumes): writes past `sizeMb` fail with ENOSPC inside; `mountedBy` are
 * the sessions whose records name it, running or not, and while there are
 * any it cannot be deleted (Conflict).
 */
export class Volume {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.name = f.name ?? "";
    /** @type {number} */
    this.sizeMb = f.sizeMb ?? 0;
    /** @type {number} */
    this.usedMb = f.usedMb ?? 0;
    /** @type {number} */
    this.ownerUid = f.ownerUid ?? 0;
    /** @type {Date | null} */
    this.createdAt = f.createdAt ?? null;
    /** @type {string[]} */
    this.mountedBy = f.mountedBy ?? [];
    /** @type {number[]} Other users whose sessions may mount it (as "{ownerUid}/{name}"). */
    this.sharedWith = f.sharedWith ?? [];
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Volume({
      name: str(d, "name"),
      sizeMb: int(d, "size_mb"),
      usedMb: int(d, "used_mb"),
      ownerUid: int(d, "owner_uid"),
      createdAt: time(d.created_at),
      mountedBy: strs(d, "mounted_by"),
      sharedWith: Array.isArray(d.shared_with) ? d.shared_with.filter((/** @type {unknown} */ u) => typeof u === "number") : [],
    });
  }
}

/**
 * A session's state kept beyond it (docs/API.md, Snapshots): its /workspace
 * files and settings, and with `memory` its interpreter's variables too.
 * Sessions are made from it as often as wanted (Sandbox.create({snapshot}),
 * Sandbox.fromSnapshot). With `memory` false (files only) the first
 * execution of such a session says `stateReset`.
 */
export class Snapshot {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.id = f.id ?? "";
    /** @type {string} The session it was taken of. */
    this.sessionId = f.sessionId ?? "";
    /** @type {string} The owner's name for it ("" for none); usable wherever its id is. */
    this.name = f.name ?? "";
    /** @type {number} */
    this.ownerUid = f.ownerUid ?? 0;
    /** @type {string} */
    this.template = f.template ?? "";
    /** @type {string} */
    this.runtime = f.runtime ?? "";
    /** @type {boolean} Whether sessions made from it keep the interpreter's variables. */
    this.memory = f.memory ?? false;
    /** @type {number} */
    this.sizeMb = f.sizeMb ?? 0;
    /** @type {Date | null} */
    this.createdAt = f.createdAt ?? null;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Snapshot({
      id: str(d, "id"),
      sessionId: str(d, "session_id"),
      name: str(d, "name"),
      ownerUid: int(d, "owner_uid"),
      template: str(d, "template"),
      runtime: str(d, "runtime"),
      memory: d.memory === true,
      sizeMb: int(d, "size_mb"),
      createdAt: time(d.created_at),
    });
  }
}

/**
 * One change a watch saw: `type` is create, write, remove, rename (the old
 * path; the new one comes as a create), chmod, or overflow (no path: the
 * kernel dropped events).
 */
export class FileEvent {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.type = f.type ?? "";
    /** @type {string} */
    this.path = f.path ?? "";
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new FileEvent({ type: str(d, "type"), path: str(d, "path") });
  }
}

/**
 * The answer of an upload: the path as the daemon took it, and its size;
 * for a folder sent as a tar stream, the size of its files and `files`, how
 * many it wrote (0 for a single file's upload).
 */
export class FileWritten {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.path = f.path ?? "";
    /** @type {number} */
    this.size = f.size ?? 0;
    /** @type {number} */
    this.files = f.files ?? 0;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new FileWritten({ path: str(d, "path"), size: int(d, "size"), files: int(d, "files") });
  }
}

/** What a session uses now (GET /v1/sessions/{id}/stats). */
export class Stats {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.status = f.status ?? "";
    /** @type {number} */
    this.execCount = f.execCount ?? 0;
    /** @type {number} */
    this.uptimeS = f.uptimeS ?? 0;
    /** @type {number} */
    this.cpuSeconds = f.cpuSeconds ?? 0;
    /** @type {number} */
    this.memoryBytes = f.memoryBytes ?? 0;
    /** @type {number} */
    this.memoryLimitBytes = f.memoryLimitBytes ?? 0;
    /** @type {number} */
    this.pids = f.pids ?? 0;
    /** @type {number} */
    this.diskBytes = f.diskBytes ?? 0;
    /** @type {number} */
    this.diskLimitBytes = f.diskLimitBytes ?? 0;
    /** @type {number} */
    this.dnsRefused = f.dnsRefused ?? 0;
    /** @type {number} */
    this.dnsRateLimited = f.dnsRateLimited ?? 0;
    /** @type {number} */
    this.networkDeniedPackets = f.networkDeniedPackets ?? 0;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new Stats({
      status: str(d, "status"),
      execCount: int(d, "exec_count"),
      uptimeS: num(d, "uptime_s"),
      cpuSeconds: num(d, "cpu_seconds"),
      memoryBytes: int(d, "memory_bytes"),
      memoryLimitBytes: int(d, "memory_limit_bytes"),
      pids: int(d, "pids"),
      diskBytes: int(d, "disk_bytes"),
      diskLimitBytes: int(d, "disk_limit_bytes"),
      dnsRefused: int(d, "dns_refused"),
      dnsRateLimited: int(d, "dns_rate_limited"),
      networkDeniedPackets: int(d, "network_denied_packets"),
    });
  }
}

/**
 * One process of a session's sandbox, as the sandbox names it (pid 1 is its
 * agent). `detached` says it was started in the background
 * (sbx.processes.start), so its output has a log; `exitCode` is how such a
 * process ended, when the daemon saw it (null while it runs). `rssBytes` is
 * 0 under runsc, which does not say, and `startedAt` null there.
 */
export class Process {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {number} */
    this.pid = f.pid ?? 0;
    /** @type {number} */
    this.ppid = f.ppid ?? 0;
    /** @type {string} */
    this.command = f.command ?? "";
    /** @type {Date | null} */
    this.startedAt = f.startedAt ?? null;
    /** @type {number} */
    this.cpuSeconds = f.cpuSeconds ?? 0;
    /** @type {number} */
    this.rssBytes = f.rssBytes ?? 0;
    /** @type {boolean} */
    this.detached = f.detached ?? false;
    /** @type {number | null} */
    this.exitCode = f.exitCode ?? null;
    // An attached process (started with stdin or a tty: the daemon holds
    // its streams) says what it was started with.
    /** @type {boolean} */
    this.attached = f.attached ?? false;
    /** @type {string[]} */
    this.argv = f.argv ?? [];
    /** @type {Record<string, string>} */
    this.env = f.env ?? {};
    /** @type {string} */
    this.cwd = f.cwd ?? "";
    /** @type {string} */
    this.tag = f.tag ?? "";
    /** @type {{rows: number, cols: number} | null} */
    this.tty = f.tty ?? null;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    const tty = d.tty !== null && typeof d.tty === "object" ? obj(d.tty) : null;
    return new Process({
      pid: int(d, "pid"),
      ppid: int(d, "ppid"),
      command: str(d, "command"),
      startedAt: time(d.started_at),
      cpuSeconds: num(d, "cpu_seconds"),
      rssBytes: int(d, "rss_bytes"),
      detached: d.detached === true,
      exitCode: optInt(d, "exit_code"),
      attached: d.attached === true,
      argv: strs(d, "argv"),
      env: strMap(d, "env"),
      cwd: str(d, "cwd"),
      tag: str(d, "tag"),
      tty: tty ? { rows: int(tty, "rows"), cols: int(tty, "cols") } : null,
    });
  }
}

/**
 * A background process's output from `offset` (GET
 * …/processes/{pid}/logs): `data` is what it wrote since, `running` whether
 * it still runs, `exitCode` how it ended once the daemon saw it (null while
 * it runs, or for one this daemon did not start). Ask again from
 * `nextOffset` for what comes after.
 */
export class ProcessLogs {
  /** @param {{data?: Buffer, running?: boolean, exitCode?: number | null, offset?: number}} [f] */
  constructor(f = {}) {
    /** @type {Buffer} */
    this.data = f.data ?? Buffer.alloc(0);
    /** @type {boolean} */
    this.running = f.running ?? false;
    /** @type {number | null} */
    this.exitCode = f.exitCode ?? null;
    /** @type {number} */
    this.offset = f.offset ?? 0;
  }

  get nextOffset() {
    return this.offset + this.data.length;
  }

  /** `data` as UTF-8 (a character cut between two reads is replaced). */
  get text() {
    return this.data.toString("utf8");
  }
}

// A base64 string as the daemon writes it (standard alphabet, padded):
// Buffer.from would skip bad characters and hand back other bytes.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * One line of an attached process's output (GET …/processes/{pid}/output):
 * a piece of what it wrote on `stream` ("stdout", "stderr", or "pty" for a
 * terminal's one stream) starting at byte `offset` of all its output, or
 * its end, the last one, whose `exitCode` is set and `data` empty. `lost`,
 * on the first, says how many bytes before `offset` the daemon no longer
 * keeps (it keeps the last MiB).
 */
export class ProcessChunk {
  /** @param {{stream?: string, data?: Buffer, offset?: number, exitCode?: number | null, lost?: number}} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.stream = f.stream ?? "";
    /** @type {Buffer} */
    this.data = f.data ?? Buffer.alloc(0);
    /** @type {number} */
    this.offset = f.offset ?? 0;
    /** @type {number | null} */
    this.exitCode = f.exitCode ?? null;
    /** @type {number} */
    this.lost = f.lost ?? 0;
  }

  /** Whether this is the process's end (its exit code). */
  get ended() {
    return this.exitCode !== null;
  }

  /** Where the output after this chunk starts: `from` of a read that goes on from here. */
  get nextOffset() {
    return this.offset + this.data.length;
  }

  /** `data` as UTF-8 (a character cut between two chunks is replaced). */
  get text() {
    return this.data.toString("utf8");
  }

  /**
   * Bad base64 throws a TypeError: output silently changed would be worse
   * than a failed read (the client maps it to ProtocolError).
   * @param {unknown} raw
   */
  static fromJSON(raw) {
    const d = obj(raw);
    const b64 = str(d, "data_b64");
    if (!BASE64.test(b64)) throw new TypeError(`data_b64 is not base64: ${JSON.stringify(b64.slice(0, 40))}`);
    return new ProcessChunk({
      stream: str(d, "stream"),
      data: Buffer.from(b64, "base64"),
      offset: int(d, "offset"),
      exitCode: optInt(d, "exit_code"),
      lost: int(d, "lost"),
    });
  }
}

/** One check of GET /v1/health: whether it passed, and what it found. */
export class HealthCheck {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {boolean} */
    this.ok = f.ok ?? false;
    /** @type {string} */
    this.detail = f.detail ?? "";
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new HealthCheck({ ok: d.ok === true, detail: str(d, "detail") });
  }
}

/** The space left where session disks live: below `minFreeMb` no new disk is made. */
export class DataDirHealth {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {number} */
    this.freeMb = f.freeMb ?? 0;
    /** @type {number} */
    this.minFreeMb = f.minFreeMb ?? 0;
    /** @type {boolean} */
    this.ok = f.ok ?? false;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new DataDirHealth({ freeMb: int(d, "free_mb"), minFreeMb: int(d, "min_free_mb"), ok: d.ok === true });
  }
}

/**
 * The contract's error body, {code, message}, where an answer carries one
 * beside its own fields (an unhealthy Health).
 */
export class ErrorDetail {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.code = f.code ?? "";
    /** @type {string} */
    this.message = f.message ?? "";
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    return new ErrorDetail({ code: str(d, "code"), message: str(d, "message") });
  }
}

/**
 * The daemon's health (GET /v1/health): `status` is "ok", or "unhealthy"
 * (HTTP 503) with `reasons`, a sentence per failed check; "degraded" came
 * from daemons before the checks (a data dir short of space, still
 * serving). `checks` has every check by name (database, cgroups, pools,
 * data_dir; none from an older daemon).
 */
export class Health {
  /** @param {Record<string, any>} [f] */
  constructor(f = {}) {
    /** @type {string} */
    this.status = f.status ?? "";
    /** @type {string[]} */
    this.reasons = f.reasons ?? [];
    /** @type {Record<string, HealthCheck>} */
    this.checks = f.checks ?? {};
    /** @type {DataDirHealth | null} */
    this.dataDir = f.dataDir ?? null;
    /** @type {ErrorDetail | null} */
    this.error = f.error ?? null;
  }

  /** @param {unknown} raw */
  static fromJSON(raw) {
    const d = obj(raw);
    /** @type {Record<string, HealthCheck>} */
    const checks = {};
    if (isObj(d, "checks")) {
      for (const [k, v] of Object.entries(d.checks)) {
        if (v !== null && typeof v === "object" && !Array.isArray(v)) checks[k] = HealthCheck.fromJSON(v);
      }
    }
    return new Health({
      status: str(d, "status"),
      reasons: strs(d, "reasons"),
      checks,
      dataDir: isObj(d, "data_dir") ? DataDirHealth.fromJSON(d.data_dir) : null,
      error: isObj(d, "error") ? ErrorDetail.fromJSON(d.error) : null,
    });
  }

  /** Every check passed: the daemon does all of its work. */
  get ok() {
    return this.status === "ok";
  }
}
