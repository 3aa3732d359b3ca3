// Request bodies and queries of the API, built from the SDK's camelCase
// options: what goes on the wire is the contract's snake_case, and only the
// fields the contract names (the daemon refuses unknown fields).

/**
 * The fields of POST /v1/sessions (api.CreateSessionRequest), which POST
 * /v1/run takes too: the SDK's name of each, and the wire's.
 */
export const SESSION_FIELDS = Object.freeze({
  template: "template",
  runtime: "runtime",
  memoryMb: "memory_mb",
  cpus: "cpus",
  pids: "pids",
  diskMb: "disk_mb",
  timeoutS: "timeout_s",
  idleTimeoutS: "idle_timeout_s",
  network: "network",
  allow: "allow",
  egressKbps: "egress_kbps",
  maxConnections: "max_connections",
  env: "env",
  labels: "labels",
  mcpServers: "mcp_servers",
  idleAction: "idle_action",
  name: "name",
  deadlineS: "deadline_s",
  volumes: "volumes",
  snapshot: "snapshot",
  checkpoints: "checkpoints",
});

/** The header that makes a create idempotent (docs/API.md, POST /v1/sessions). */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/**
 * The headers of a create under an Idempotency-Key (none without one). An
 * empty key would be no key (the daemon ignores it): a caller's bug that
 * would make a second session on a retry, so it is a TypeError.
 * @param {string | undefined | null} key
 * @returns {Record<string, string>}
 */
export function idempotencyHeaders(key) {
  if (key === undefined || key === null) return {};
  if (typeof key !== "string" || !key) throw new TypeError(`idempotencyKey must be a non-empty string, not ${JSON.stringify(key)}`);
  return { [IDEMPOTENCY_KEY_HEADER]: key };
}

/** How long past an execution's own timeout a call waits for its answer:
 * the interrupt grace, a kill and a fresh interpreter fit well inside it. */
export const EXEC_GRACE_S = 60;

/**
 * A map of strings from an object or a Map, each key and value a string.
 * @param {Record<string, unknown> | Map<string, unknown>} m
 * @returns {Record<string, string>}
 */
export function stringMap(m) {
  const entries = m instanceof Map ? [...m.entries()] : Object.entries(m);
  return Object.fromEntries(entries.map(([k, v]) => [String(k), String(v)]));
}

/**
 * The JSON body of a create from options: undefined and null mean absent
 * (the daemon's default), as the Go client's nil pointers do. An option
 * that is not a field is a TypeError, so a typo never passes silently.
 * @param {Record<string, any>} fields
 * @returns {Record<string, any>}
 */
export function sessionRequest(fields) {
  const unknown = Object.keys(fields).filter((k) => !Object.hasOwn(SESSION_FIELDS, k) && fields[k] !== undefined);
  if (unknown.length) {
    throw new TypeError(
      `unknown session field(s): ${unknown.sort().join(", ")}; known: ${Object.keys(SESSION_FIELDS).join(", ")}`,
    );
  }
  /** @type {Record<string, any>} */
  const body = {};
  for (const [k, wire] of Object.entries(SESSION_FIELDS)) {
    const v = fields[k];
    if (v === undefined || v === null) continue;
    if (k === "env" || k === "labels") body[wire] = stringMap(v);
    else if (k === "allow" || k === "mcpServers") body[wire] = typeof v === "string" ? [v] : [...v];
    else if (k === "volumes") body[wire] = volumeMounts(v);
    else if (k === "snapshot") body[wire] = snapshotRef(v);
    else body[wire] = v;
  }
  return body;
}

/**
 * The label filters of a list: "k=v" strings and an object, all of which
 * must match.
 * @param {string | string[] | undefined} label
 * @param {Record<string, string> | undefined} labels
 * @returns {Array<[string, string]>}
 */
export function labelQuery(label, labels) {
  /** @type {Array<[string, string]>} */
  const q = [];
  const items = typeof label === "string" ? [label] : label || [];
  for (const item of items) {
    if (!item.includes("=")) throw new TypeError(`label filter ${JSON.stringify(item)} is not key=value`);
    q.push(["label", item]);
  }
  for (const [k, v] of Object.entries(labels || {})) q.push(["label", `${k}=${v}`]);
  return q;
}

/**
 * The body of POST …/exec (api.ExecRequest); absent fields stay absent.
 * @param {string} code
 * @param {string} language
 * @param {number | undefined | null} timeoutS
 * @param {Record<string, string> | undefined | null} env
 * @param {string | undefined | null} cwd
 * @param {string | {id: string} | undefined | null} [context]
 */
export function execRequest(code, language, timeoutS, env, cwd, context) {
  /** @type {Record<string, any>} */
  const body = { language, code };
  if (timeoutS !== undefined && timeoutS !== null) body.timeout_s = timeoutS;
  if (env && Object.keys(env).length) body.env = stringMap(env);
  if (cwd) body.cwd = cwd;
  const cid = contextId(context);
  if (cid) body.context = cid;
  return body;
}

/**
 * The id the wire takes for a code context: an id, or a CodeContext (any
 * object with a string id).
 * @param {string | {id: string} | null | undefined} c
 * @returns {string | undefined}
 */
export function contextId(c) {
  if (c === undefined || c === null || c === "") return undefined;
  if (typeof c === "string") return c;
  if (typeof c === "object" && typeof c.id === "string" && c.id) return c.id;
  throw new TypeError(`context must be an id (a string) or a CodeContext, not ${typeof c === "object" ? JSON.stringify(c) : typeof c}`);
}

/**
 * The body of POST …/contexts (api.CreateContextRequest): absent fields
 * stay absent so the daemon's defaults hold.
 * @param {{language?: string, cwd?: string, from?: string | {id: string}}} opts
 */
export function contextRequest(opts) {
  /** @type {Record<string, string>} */
  const body = {};
  if (opts.language) body.language = opts.language;
  if (opts.cwd) body.cwd = opts.cwd;
  const from = contextId(opts.from);
  if (from) body.from = from;
  return body;
}

// The fields of a volume mount (api.VolumeMount), the SDK's name and the
// wire's: the daemon refuses unknown fields, so a typo fails here, before a
// session is asked for.
const MOUNT_FIELDS = Object.freeze({ name: "name", path: "path", readOnly: "read_only" });

/**
 * The `volumes` of a create request from mounts ({name, path, readOnly?}
 * objects or VolumeMounts); one mount alone is taken as a list of it.
 * read_only goes only when set, as the daemon writes it.
 * @param {Iterable<{name: string, path: string, readOnly?: boolean}> | {name: string, path: string, readOnly?: boolean}} v
 * @returns {Array<Record<string, any>>}
 */
export function volumeMounts(v) {
  const list = v !== null && typeof v === "object" && !(Symbol.iterator in v) ? [v] : [...v];
  return list.map((m) => {
    if (m === null || typeof m !== "object" || Array.isArray(m)) {
      throw new TypeError(`a volume mount is an object {name, path, readOnly?}, not ${JSON.stringify(m)}`);
    }
    const unknown = Object.keys(m).filter((k) => !Object.hasOwn(MOUNT_FIELDS, k) && /** @type {any} */ (m)[k] !== undefined);
    if (unknown.length) {
      throw new TypeError(`unknown volume mount field(s): ${unknown.sort().join(", ")}; known: ${Object.keys(MOUNT_FIELDS).join(", ")}`);
    }
    /** @type {Record<string, any>} */
    const out = { name: String(m.name ?? ""), path: String(m.path ?? "") };
    if (m.readOnly) out.read_only = true;
    return out;
  });
}

/**
 * The name the wire takes for a volume: a name, or a Volume (any object
 * with a string name). An empty one would name the list, not a volume.
 * @param {string | {name: string}} v
 * @returns {string}
 */
export function volumeName(v) {
  const name = typeof v === "string" ? v : v !== null && typeof v === "object" ? v.name : undefined;
  if (typeof name !== "string" || !name) throw new TypeError(`a volume name is required, not ${JSON.stringify(v)}`);
  return name;
}

/** The most sessions one create from a snapshot, or one fork, makes (api.MaxCount). */
export const MAX_COUNT = 100;

/**
 * The id or name the wire takes for a snapshot: either, or a Snapshot (any
 * object with a string id). An empty one would name the list, not a
 * snapshot.
 * @param {string | {id: string}} v
 * @returns {string}
 */
export function snapshotRef(v) {
  const ref = typeof v === "string" ? v : v !== null && typeof v === "object" ? v.id : undefined;
  if (typeof ref !== "string" || !ref) throw new TypeError(`a snapshot id or name is required, not ${JSON.stringify(v)}`);
  return ref;
}

/**
 * A count of sessions to make, checked here: a whole number from 1 to
 * MAX_COUNT (absent: 1).
 * @param {number | undefined | null} count
 * @returns {number}
 */
export function checkCount(count) {
  const n = count ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_COUNT) {
    throw new RangeError(`count is a whole number from 1 to ${MAX_COUNT}, not ${JSON.stringify(count)}`);
  }
  return n;
}

/** The most executions a session keeps for undo, and the most one undo goes back. */
export const MAX_CHECKPOINTS = 16;

/**
 * The steps of an undo, checked here: a whole number from 1 to
 * MAX_CHECKPOINTS (absent: 1).
 * @param {number | undefined | null} steps
 * @returns {number}
 */
export function checkSteps(steps) {
  const n = steps ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_CHECKPOINTS) {
    throw new RangeError(`steps is a whole number from 1 to ${MAX_CHECKPOINTS}, not ${JSON.stringify(steps)}`);
  }
  return n;
}

/**
 * The users a volume is shared with, as the wire takes them: uids, whole
 * numbers from 0 ([]: no one). Absent is a TypeError, not "no one": a
 * forgotten option must not unshare a volume.
 * @param {unknown} v
 * @returns {number[]}
 */
export function sharedWith(v) {
  if (!Array.isArray(v)) throw new TypeError(`sharedWith is an array of uids ([]: no one), not ${JSON.stringify(v)}`);
  for (const u of v) {
    if (typeof u !== "number" || !Number.isInteger(u) || u < 0) throw new TypeError(`a uid is a whole number, not ${JSON.stringify(u)}`);
  }
  return [...v];
}

/** The header an upload gives each metadata key (api.MetaHeaderPrefix). */
export const META_HEADER_PREFIX = "X-Sandboxd-Meta-";

/**
 * An upload's metadata as headers, one a key.
 * @param {Record<string, string> | undefined} metadata
 * @returns {Record<string, string>}
 */
export function metaHeaders(metadata) {
  /** @type {Record<string, string>} */
  const h = {};
  for (const [k, v] of Object.entries(metadata || {})) h[META_HEADER_PREFIX + k] = String(v);
  return h;
}

/**
 * The HTTP timeout of an execution: the caller's, else its execution
 * timeout and a grace, else none (the daemon bounds every execution).
 * @param {number | null | undefined} requestTimeoutMs
 * @param {number | null | undefined} timeoutS
 * @returns {number | null}
 */
export function execRequestTimeout(requestTimeoutMs, timeoutS) {
  if (requestTimeoutMs !== undefined) return requestTimeoutMs;
  if (timeoutS) return (timeoutS + EXEC_GRACE_S) * 1000;
  return null;
}

/**
 * A terminal's size on the wire (api.TermSize), checked here: the daemon
 * takes 16-bit sizes and a 0 means no terminal at all.
 * @param {number} rows
 * @param {number} cols
 * @returns {{rows: number, cols: number}}
 */
export function termSize(rows, cols) {
  for (const [name, v] of /** @type {Array<[string, unknown]>} */ ([["rows", rows], ["cols", cols]])) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 65535) {
      throw new RangeError(`${name} must be a whole number from 1 to 65535, not ${String(v)}`);
    }
  }
  return { rows, cols };
}

/**
 * The attached process fields of POST …/processes (api.ProcessRequest) added
 * to body: absent options stay absent, so a plain background process goes
 * as it always did.
 * @param {Record<string, any>} body
 * @param {{stdin?: boolean, tty?: {rows: number, cols: number} | null, tag?: string, timeoutS?: number | null}} opts
 */
export function attachedFields(body, opts) {
  if (opts.stdin) body.stdin = true;
  if (opts.tty !== undefined && opts.tty !== null) {
    if (typeof opts.tty !== "object") throw new TypeError(`tty is {rows, cols}, e.g. {rows: 24, cols: 80}, not ${String(opts.tty)}`);
    body.tty = termSize(opts.tty.rows, opts.tty.cols);
  }
  if (opts.tag) body.tag = String(opts.tag);
  if (opts.timeoutS !== undefined && opts.timeoutS !== null) {
    if (typeof opts.timeoutS !== "number" || !(opts.timeoutS > 0) || !Number.isFinite(opts.timeoutS)) {
      throw new RangeError(`timeoutS must be a number of seconds above 0, not ${String(opts.timeoutS)}`);
    }
    body.timeout_s = opts.timeoutS;
  }
  return body;
}

/**
 * The ?from= of an attached process's output: "start", "now" or a byte
 * offset.
 * @param {"start" | "now" | number | undefined} from
 */
export function fromQuery(from) {
  if (from === undefined || from === "start" || from === "now") return from ?? "start";
  if (typeof from === "number" && Number.isInteger(from) && from >= 0) return String(from);
  throw new RangeError(`from is "start", "now" or a byte offset, not ${JSON.stringify(from)}`);
}
