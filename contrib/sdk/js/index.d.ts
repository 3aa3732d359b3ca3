// Type declarations of the sandboxd JavaScript SDK (src/*.js), written by
// hand; test/types.test.js type-checks test/usage.ts against them and checks
// that they declare every value src/index.js exports (each value as
// `export declare const|class|function`, which that test reads).

/// <reference types="node" />

import type { Socket } from "node:net";
import type { Readable } from "node:stream";

/** Where the daemon listens unless told otherwise. */
export declare const DEFAULT_SOCKET: "/run/sandboxd/sandboxd.sock";
/** The environment variable that overrides DEFAULT_SOCKET. */
export declare const SOCKET_ENV: "SANDBOXD_SOCKET";
export declare const VERSION: string;
/** The HTTP timeout of a call other than an execution, unless told otherwise. */
export declare const DEFAULT_REQUEST_TIMEOUT_MS: number;
/** How often waitExecution asks how an execution goes, unless told otherwise (ms). */
export declare const DEFAULT_POLL_MS: number;
/** How often a follower of a background process asks for more when the last ask had none, unless told otherwise (ms). */
export declare const DEFAULT_FOLLOW_MS: number;

/** An execution started with wait false (submit) that has not ended. */
export declare const STATUS_RUNNING: "running";
export declare const STATUS_OK: "ok";
export declare const STATUS_ERROR: "error";
export declare const STATUS_TIMEOUT: "timeout";
export declare const STATUS_KILLED: "killed";
export declare const STATUS_INTERRUPTED: "interrupted";
export declare const STATUS_LOST: "lost";

// Errors.

export interface SandboxdErrorOptions {
  code?: string;
  status?: number | null;
  requestId?: string | null;
  retryAfter?: number | null;
  cause?: unknown;
}

/** A call to sandboxd failed; the subclass is the contract's error code's. */
export declare class SandboxdError extends Error {
  static readonly code: string;
  constructor(message: string, opts?: SandboxdErrorOptions);
  /** The contract's error code, as on the wire ("not_found", ...). */
  code: string;
  /** The daemon's sentence: what was wrong, what to do. */
  message: string;
  /** The HTTP status; null when no answer came. */
  status: number | null;
  /** The id the daemon logged the request under. */
  requestId: string | null;
  /** The seconds a 429 asked to wait. */
  retryAfter: number | null;
}
/** 400 invalid_argument. */
export declare class InvalidArgument extends SandboxdError {}
/** 404 not_found (another user's session too). */
export declare class NotFound extends SandboxdError {}
/** 409 conflict (e.g. exec on a stopped session). */
export declare class Conflict extends SandboxdError {}
/** 403 permission_denied. */
export declare class PermissionDenied extends SandboxdError {}
/** 413 payload_too_large. */
export declare class PayloadTooLarge extends SandboxdError {}
/** 429 resource_exhausted: see retryAfter. */
export declare class ResourceExhausted extends SandboxdError {}
/** 500 internal. */
export declare class Internal extends SandboxdError {}
/** 503 unavailable, or the daemon could not be reached (status null). */
export declare class Unavailable extends SandboxdError {}
/** 502 bad_gateway. */
export declare class BadGateway extends SandboxdError {}
/** deadline_exceeded: no answer within requestTimeoutMs (client-side). */
export declare class RequestTimeout extends SandboxdError {}
/** protocol: an answer that breaks the contract (client-side). */
export declare class ProtocolError extends SandboxdError {}

/** The error of a failed answer: by its code, else by its status. */
export declare function errorFromAnswer(
  status: number | null,
  code: string,
  message: string,
  opts?: { requestId?: string | null; retryAfter?: number | null },
): SandboxdError;

// Models.

export declare class Limits {
  constructor(f?: Partial<Limits>);
  memoryMb: number;
  cpus: number;
  pids: number;
  diskMb: number;
  timeoutS: number;
  idleTimeoutS: number;
  static fromJSON(raw: unknown): Limits;
}

export type SessionStatus = "running" | "paused" | "hibernated" | "stopped" | "failed" | (string & {});

export declare class Session {
  constructor(f?: Partial<Session>);
  id: string;
  status: SessionStatus;
  template: string;
  runtime: string;
  ownerUid: number;
  reason: string;
  createdAt: Date | null;
  lastUsedAt: Date | null;
  execCount: number;
  limits: Limits;
  network: string;
  allow: string[];
  egressKbps: number;
  maxConnections: number;
  labels: Record<string, string>;
  mcpServers: string[];
  /** What the idle timeout does: "stop" or "pause"; "" from a daemon that does not say. */
  idleAction: string;
  /** The owner's name for it ("" for none); usable wherever its id is. */
  name: string;
  /** When the session ends whatever it does (deadlineS, setDeadline); null: no deadline. */
  deadline: Date | null;
  /** The volumes it mounts. */
  volumes: VolumeMount[];
  /** How many executions undo can go back (0: none). */
  checkpoints: number;
  static fromJSON(raw: unknown): Session;
}

export declare class ExecutionError {
  constructor(f?: Partial<ExecutionError>);
  name: string;
  value: string;
  traceback: string;
  static fromJSON(raw: unknown): ExecutionError;
  toString(): string;
}

export declare class Output {
  constructor(f?: Partial<Pick<Output, "mime" | "data" | "bundle">>);
  /** The richest representation's type. */
  mime: string;
  /** The richest representation, base64 whatever the type, as on the wire. */
  data: string;
  /** Every representation, Jupyter's way: mime → data, text as text, image/png and image/jpeg base64; empty for a figure. */
  bundle: Record<string, string>;
  readonly content: Buffer;
  readonly png: Buffer | null;
  readonly jpeg: Buffer | null;
  readonly svg: string | null;
  readonly html: string | null;
  readonly markdown: string | null;
  /** The application/json representation, parsed (null without one). */
  readonly json: any;
  readonly text: string | null;
  static fromJSON(raw: unknown): Output;
}

export type ExecutionStatus = "running" | "ok" | "error" | "timeout" | "killed" | "interrupted" | "lost" | (string & {});

/** What one execution used: its duration, and the session's CPU time and memory peak while it ran. */
export declare class ExecMetrics {
  constructor(f?: Partial<ExecMetrics>);
  /** The execution's duration (durationMs). */
  wallMs: number;
  /** The session's cgroup's CPU time while it ran. */
  cpuMs: number;
  /** The session's cgroup's memory peak while it ran. */
  memoryPeakBytes: number;
  static fromJSON(raw: unknown): ExecMetrics;
}

export declare class Execution {
  constructor(f?: Partial<Omit<Execution, "ok" | "text">>);
  id: string;
  sessionId: string;
  language: string;
  status: ExecutionStatus;
  stdout: string;
  stderr: string;
  exitCode: number;
  /** Python: the repr of the last expression; null when there is none. */
  result: string | null;
  error: ExecutionError | null;
  outputs: Output[];
  startedAt: Date | null;
  durationMs: number;
  truncated: boolean;
  stateReset: boolean;
  summarized: boolean;
  /** null from a daemon (or a history) older than metrics. */
  metrics: ExecMetrics | null;
  /** Hex SHA-256 of the code ("" from an older daemon). */
  codeSha256: string;
  /** The uid that ran it (null from an older daemon). */
  callerUid: number | null;
  /** status === "ok". */
  readonly ok: boolean;
  /** The result, as E2B names it. */
  readonly text: string | null;
  static fromJSON(raw: unknown): Execution;
}

/** One execution as the list of a session's executions gives it: how it went, without its output. */
export declare class ExecutionSummary {
  constructor(f?: Partial<Omit<ExecutionSummary, "ok">>);
  id: string;
  language: string;
  codeSha256: string;
  callerUid: number | null;
  startedAt: Date | null;
  durationMs: number;
  status: ExecutionStatus;
  /** null while it runs. */
  exitCode: number | null;
  metrics: ExecMetrics | null;
  stateReset: boolean;
  truncated: boolean;
  /** status === "ok". */
  readonly ok: boolean;
  static fromJSON(raw: unknown): ExecutionSummary;
}

export declare class FileInfo {
  constructor(f?: Partial<Omit<FileInfo, "isDir">>);
  name: string;
  type: "file" | "dir" | "symlink" | "other" | (string & {});
  size: number;
  mode: string;
  modifiedAt: Date | null;
  /** The entry's whole path, in a listing deeper than one level ("" otherwise). */
  path: string;
  /** As ls writes them, "-rw-r--r--". */
  permissions: string;
  /** The entry's user metadata (its user. extended attributes); {} when none. */
  metadata: Record<string, string>;
  readonly isDir: boolean;
  static fromJSON(raw: unknown): FileInfo;
}

/** A file, folder or symlink (never followed), as GET …/files/stat answers. */
export declare class FileStat {
  constructor(f?: Partial<Omit<FileStat, "isDir">>);
  name: string;
  path: string;
  type: "file" | "dir" | "symlink" | "other" | (string & {});
  size: number;
  /** The permission bits in octal, "0644". */
  mode: string;
  /** As ls writes them, "-rw-r--r--". */
  permissions: string;
  /** The owner's name in the sandbox, else the number. */
  owner: string;
  group: string;
  mtime: Date | null;
  symlinkTarget: string | null;
  /** From mkdir only: whether this call made the folder. */
  created: boolean | null;
  /** The user metadata of a file or folder (files.write's metadata); {} when none. */
  metadata: Record<string, string>;
  readonly isDir: boolean;
  static fromJSON(raw: unknown): FileStat;
}

/**
 * A code context of a session: an interpreter of its own (language
 * "python") or a working folder ("shell"); "default" is the first one.
 */
export declare class CodeContext {
  constructor(f?: Partial<CodeContext>);
  id: string;
  language: "python" | "shell" | (string & {});
  /** Where its executions run unless they say another. */
  cwd: string;
  createdAt: Date | null;
  static fromJSON(raw: unknown): CodeContext;
}

/** A volume a session mounts: the caller's volume name at path (absolute), read-only or not. */
export declare class VolumeMount {
  constructor(f?: Partial<VolumeMount>);
  name: string;
  path: string;
  readOnly: boolean;
  static fromJSON(raw: unknown): VolumeMount;
}

/**
 * A filesystem of its own size that outlives sessions: writes past sizeMb fail with ENOSPC
 * inside; while mountedBy (sessions, running or not) is not empty, deleting it is Conflict.
 */
export declare class Volume {
  constructor(f?: Partial<Volume>);
  name: string;
  sizeMb: number;
  usedMb: number;
  ownerUid: number;
  createdAt: Date | null;
  mountedBy: string[];
  /** Other users whose sessions may mount it too, as "{ownerUid}/{name}". */
  sharedWith: number[];
  static fromJSON(raw: unknown): Volume;
}

/**
 * A session's files and settings kept beyond it; sessions are made from it (Sandbox.create({snapshot}),
 * Sandbox.fromSnapshot). With memory false (files only) their first execution says stateReset.
 */
export declare class Snapshot {
  constructor(f?: Partial<Snapshot>);
  id: string;
  /** The session it was taken of. */
  sessionId: string;
  /** The owner's name for it ("" for none); usable wherever its id is. */
  name: string;
  ownerUid: number;
  template: string;
  runtime: string;
  /** Whether sessions made from it keep the interpreter's variables. */
  memory: boolean;
  sizeMb: number;
  createdAt: Date | null;
  static fromJSON(raw: unknown): Snapshot;
}

/** One change a watch saw; rename is the old path (the new one comes as a create), overflow has no path. */
export declare class FileEvent {
  constructor(f?: Partial<FileEvent>);
  type: "create" | "write" | "remove" | "rename" | "chmod" | "overflow" | (string & {});
  path: string;
  static fromJSON(raw: unknown): FileEvent;
}

export declare class FileWritten {
  constructor(f?: Partial<FileWritten>);
  path: string;
  size: number;
  /** For a folder sent as a tar stream: how many files it wrote (0 for a single file's upload). */
  files: number;
  static fromJSON(raw: unknown): FileWritten;
}

export declare class Stats {
  constructor(f?: Partial<Stats>);
  status: string;
  execCount: number;
  uptimeS: number;
  cpuSeconds: number;
  memoryBytes: number;
  memoryLimitBytes: number;
  pids: number;
  diskBytes: number;
  diskLimitBytes: number;
  dnsRefused: number;
  dnsRateLimited: number;
  networkDeniedPackets: number;
  static fromJSON(raw: unknown): Stats;
}

/** One process of a session's sandbox, as the sandbox names it (pid 1 is its agent). */
export declare class Process {
  constructor(f?: Partial<Process>);
  pid: number;
  ppid: number;
  command: string;
  /** null under runsc. */
  startedAt: Date | null;
  cpuSeconds: number;
  /** 0 under runsc, which does not say. */
  rssBytes: number;
  /** Started in the background (sbx.processes.start): its output has a log. */
  detached: boolean;
  /** How a background process ended, once the daemon saw it; null while it runs. */
  exitCode: number | null;
  /** Started with stdin or a tty: the daemon holds its streams. */
  attached: boolean;
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  tag: string;
  tty: { rows: number; cols: number } | null;
  static fromJSON(raw: unknown): Process;
}

/** A background process's output from `offset`, whether it still runs, how it ended. */
export declare class ProcessLogs {
  constructor(f?: { data?: Buffer; running?: boolean; exitCode?: number | null; offset?: number });
  data: Buffer;
  running: boolean;
  /** null while it runs, or for one this daemon did not start. */
  exitCode: number | null;
  offset: number;
  /** offset + data.length: where to ask from next. */
  readonly nextOffset: number;
  /** data as UTF-8. */
  readonly text: string;
}

/**
 * One line of an attached process's output: a piece of `stream` ("stdout",
 * "stderr", "pty") from byte `offset`, or its end (the last, `exitCode` set).
 */
export declare class ProcessChunk {
  constructor(f?: { stream?: string; data?: Buffer; offset?: number; exitCode?: number | null; lost?: number });
  stream: "stdout" | "stderr" | "pty" | (string & {});
  data: Buffer;
  /** Where data starts in all the process's output. */
  offset: number;
  /** Set on the last chunk, the process's end; null on the others. */
  exitCode: number | null;
  /** On the first chunk: bytes before offset the daemon no longer keeps. */
  lost: number;
  /** exitCode !== null. */
  readonly ended: boolean;
  /** offset + data.length: `from` of a read that goes on from here. */
  readonly nextOffset: number;
  /** data as UTF-8. */
  readonly text: string;
  static fromJSON(raw: unknown): ProcessChunk;
}

/** One check of GET /v1/health. */
export declare class HealthCheck {
  constructor(f?: Partial<HealthCheck>);
  ok: boolean;
  detail: string;
  static fromJSON(raw: unknown): HealthCheck;
}

/** The space left where session disks live. */
export declare class DataDirHealth {
  constructor(f?: Partial<DataDirHealth>);
  freeMb: number;
  minFreeMb: number;
  ok: boolean;
  static fromJSON(raw: unknown): DataDirHealth;
}

/** The contract's error body, where an answer carries one beside its own fields. */
export declare class ErrorDetail {
  constructor(f?: Partial<ErrorDetail>);
  code: string;
  message: string;
  static fromJSON(raw: unknown): ErrorDetail;
}

/** The daemon's health: "ok", or "unhealthy" (its 503) with reasons; "degraded" from daemons before the checks. */
export declare class Health {
  constructor(f?: Partial<Omit<Health, "ok">>);
  status: "ok" | "unhealthy" | "degraded" | (string & {});
  /** A sentence per failed check. */
  reasons: string[];
  /** Every check by name: database, cgroups, pools, data_dir. */
  checks: Record<string, HealthCheck>;
  dataDir: DataDirHealth | null;
  error: ErrorDetail | null;
  /** status === "ok". */
  readonly ok: boolean;
  static fromJSON(raw: unknown): Health;
}

/** A chunk of an attached command's output. */
export interface AttachChunk {
  /** With a terminal, all is stdout. */
  stream: "stdout" | "stderr";
  data: Buffer;
}

/** A command whose standard streams are a connection of its own (Client.attach, Sandbox.attach). */
export declare class Attached implements AsyncIterable<AttachChunk> {
  constructor(socket: Socket, head: Buffer, requestId?: string | null);
  readonly requestId: string | null;
  /** The exit status (128+N for a signal N), once it came. */
  exitCode: number | null;
  /** Sends input (a string as UTF-8); resolves once it is with the system. */
  write(data: string | Uint8Array): Promise<void>;
  /** Ends the input (EOF; with a terminal, ^D). */
  closeStdin(): Promise<void>;
  /** The terminal's new size. */
  resize(rows: number, cols: number): Promise<void>;
  /** The output as it comes, until the command exits; a connection cut before is a ProtocolError. */
  [Symbol.asyncIterator](): AsyncGenerator<AttachChunk, void, undefined>;
  /** The exit status; output not iterated is dropped. */
  wait(): Promise<number>;
  /** Hangs up: a command still running ends; a reader fails with reason. */
  close(reason?: unknown): void;
  toString(): string;
}

// Options.

/** Every call takes these. */
export interface CallOptions {
  /** How long to wait for the daemon's next bytes (null: no bound). */
  requestTimeoutMs?: number | null;
  /** Aborts the call: it rejects with signal.reason. */
  signal?: AbortSignal;
}

/** Called with each chunk of output as it comes (not necessarily whole lines); a promise is awaited. */
export type OnOutput = (chunk: string) => unknown;

/** Called with each output the code displays (display()), as it does; the Execution's outputs hold it too. A promise is awaited. */
export type OnDisplay = (output: Output) => unknown;

export interface OutputCallbacks {
  onStdout?: OnOutput;
  onStderr?: OnOutput;
  onDisplay?: OnDisplay;
}

/** The fields of POST /v1/sessions (and POST /v1/run). */
export interface SessionFields {
  template?: string;
  runtime?: "runc" | "runsc" | (string & {});
  memoryMb?: number;
  cpus?: number;
  pids?: number;
  diskMb?: number;
  timeoutS?: number;
  idleTimeoutS?: number;
  network?: "none" | "allowlist" | "open" | (string & {});
  allow?: string | string[];
  egressKbps?: number;
  maxConnections?: number;
  env?: Record<string, string>;
  labels?: Record<string, string>;
  /** MCP servers of the daemon's [mcp.servers] the code may call through its gateway. */
  mcpServers?: string | string[];
  /** What the idle timeout does (absent: the daemon's default). */
  idleAction?: "stop" | "pause" | "hibernate" | (string & {});
  /** A name, unique among the caller's sessions; usable wherever its id is. */
  name?: string;
  /** The session ends (is stopped, /workspace kept) this many seconds from now, whatever it does. Not for run (the daemon refuses it). */
  deadlineS?: number;
  /** The caller's volumes to mount (up to 16), each at its absolute path. Not for run (the daemon refuses it). */
  volumes?: VolumeMountOptions | VolumeMountOptions[];
  /**
   * Makes the session from a snapshot (an id, a name or a Snapshot): its files and settings. Only name,
   * labels (added to its), env (over its), idleAction, deadlineS and volumes may be given beside it.
   */
  snapshot?: string | Snapshot;
  /** Keep the state before each of the last this many executions (0 to 16), for undo. */
  checkpoints?: number;
}

/** The fields a session made from a snapshot may have beside it. */
export type SnapshotSessionFields = Pick<SessionFields, "name" | "labels" | "env" | "idleAction" | "deadlineS" | "volumes">;

export interface CountOptions {
  /** How many sessions to make: 1 (the default) to 100. */
  count?: number;
}

/** A volume to mount: a plain object or a VolumeMount. */
export interface VolumeMountOptions {
  /** One of the caller's volumes (client.createVolume). */
  name: string;
  /** An absolute path in the sandbox, outside /workspace, /tmp, the user's home and the system's folders. */
  path: string;
  /** Writes fail (EROFS) when true. */
  readOnly?: boolean;
}

/** Not a field of the create but its Idempotency-Key header. */
export interface IdempotencyOptions {
  /**
   * 1 to 255 printable ASCII characters: within 24 hours, a create with the same key and
   * fields answers the session the first made instead of making another (Conflict with
   * other fields), so a create whose answer was lost can be sent again safely.
   */
  idempotencyKey?: string;
}

/** Which daemon, and how: a socket, or a Client to share. */
export interface Connection {
  socket?: string;
  requestTimeoutMs?: number | null;
  client?: Client;
}

export interface ExecOptions extends OutputCallbacks, CallOptions {
  /** "python" (default) or "shell". */
  language?: "python" | "shell" | (string & {});
  /** The execution's own timeout, in seconds (absent: the session's timeout_s). */
  timeoutS?: number;
  env?: Record<string, string>;
  /** The working folder, relative to /workspace. */
  cwd?: string;
  /** The code context to run in (sbx.contexts.create made it; an id or the CodeContext); absent: "default". */
  context?: string | CodeContext;
}

export interface CreateContextOptions extends CallOptions {
  /** "python" (default: an interpreter of its own) or "shell" (a working folder). */
  language?: "python" | "shell" | (string & {});
  /** Its folder (default /workspace; relative to it). */
  cwd?: string;
  /** A Python context to copy: the new one starts with its globals, imports and folder, then they diverge. */
  from?: string | CodeContext;
}

export interface UpdateVolumeOptions extends CallOptions {
  /** Replaces the users whose sessions may mount it ([]: no one). */
  sharedWith: number[];
}

export interface UndoOptions extends CallOptions {
  /** How many executions to go back: 1 (the default) to 16. */
  steps?: number;
}

export interface CreateVolumeOptions extends CallOptions {
  /** Its size in MB (at least 16): writes past it fail with ENOSPC inside. */
  sizeMb: number;
  /** Other users whose sessions may mount it too (as "{ownerUid}/{name}"). */
  sharedWith?: number[];
}

export type CommandOptions = Omit<ExecOptions, "language">;

/** The options of an execution started without waiting for it: no callbacks, its output is asked for. */
export type SubmitOptions = Omit<ExecOptions, keyof OutputCallbacks>;

export interface WaitOptions extends CallOptions {
  /** The bound of the wait (absent or null: as long as the execution runs); past it, RequestTimeout. */
  timeoutMs?: number | null;
  /** How often to ask, in ms (default DEFAULT_POLL_MS). */
  pollMs?: number;
}

export interface InstallOptions extends OutputCallbacks, CallOptions {
  indexUrl?: string;
}

export type FileData = string | Uint8Array | Readable | AsyncIterable<Uint8Array>;

export interface RunOptions extends SessionFields, OutputCallbacks, CallOptions {
  language?: "python" | "shell" | (string & {});
  /** Written into /workspace first: path → content (a string is UTF-8). */
  files?: Record<string, string | Uint8Array> | Map<string, string | Uint8Array>;
}

export interface ProcessOptions extends CallOptions {
  env?: Record<string, string>;
  /** The working folder, relative to /workspace. */
  cwd?: string;
}

/** What starts a background process; stdin or tty make it attached. */
export interface StartProcessOptions extends ProcessOptions {
  /** Keeps its input open for writeStdin. */
  stdin?: boolean;
  /** Runs it on a terminal of that size (its output one stream, "pty"). */
  tty?: { rows: number; cols: number } | null;
  /** Names it (Process.tag). */
  tag?: string;
  /** Kills it that many seconds after its start (absent: never). */
  timeoutS?: number | null;
}

/** Where an attached process's output is read from, and whether it is followed. */
export interface OutputOptions extends CallOptions {
  /** "start" (the default: what the daemon still keeps), "now", or a byte offset. */
  from?: "start" | "now" | number;
  /** Goes on until the process ends (default true). */
  follow?: boolean;
}

export interface FollowOptions extends CallOptions {
  /** The byte to start from (default 0). */
  offset?: number;
  /** How often to ask when the last ask had nothing, in ms (default DEFAULT_FOLLOW_MS). */
  pollMs?: number;
  /** The bound of the whole follow (absent or null: until the process ends); past it, RequestTimeout. */
  timeoutMs?: number | null;
}

export interface AttachOptions extends ProcessOptions {
  /** A pseudo-terminal. */
  tty?: boolean;
  /** The terminal's size (default 24 x 80). */
  rows?: number;
  cols?: number;
}

export interface RunWithInputOptions extends ProcessOptions {
  /** The bound of the whole run; past it, RequestTimeout and the command is ended. */
  timeoutMs?: number | null;
}

/** What commands.runWithInput resolves to. */
export interface CommandOutput {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
}

export interface LabelFilter {
  /** "key=value", or several: every one must match. */
  label?: string | string[];
  labels?: Record<string, string>;
}

// The client.

export declare class Client {
  constructor(opts?: { socket?: string; requestTimeoutMs?: number | null });
  readonly socket: string;
  requestTimeoutMs: number | null;

  createSession(opts?: SessionFields & IdempotencyOptions & CallOptions): Promise<Session>;
  /** createSession under an Idempotency-Key, and whether this call made the session (false: an earlier one with the key had). */
  createSessionOnce(idempotencyKey: string, opts?: SessionFields & CallOptions): Promise<{ session: Session; created: boolean }>;
  listSessions(opts?: LabelFilter & CallOptions): Promise<Session[]>;
  getSession(id: string, opts?: CallOptions): Promise<Session>;
  deleteSession(id: string, opts?: CallOptions): Promise<void>;
  stopSession(id: string, opts?: CallOptions): Promise<Session>;
  startSession(id: string, opts?: CallOptions): Promise<Session>;
  restartSession(id: string, opts?: CallOptions): Promise<Session>;
  /** Freezes every process (memory and state kept, no CPU); an exec, a file call or stats resumes it. */
  pauseSession(id: string, opts?: CallOptions): Promise<Session>;
  hibernateSession(id: string, opts?: CallOptions): Promise<Session>;
  resumeSession(id: string, opts?: CallOptions): Promise<Session>;
  /** PATCH /v1/sessions/{id}: deadlineS sets the deadline that many seconds from now (0 removes it). */
  updateSession(id: string, opts?: { deadlineS?: number } & CallOptions): Promise<Session>;
  setNetwork(
    id: string,
    network: string,
    opts?: { allow?: string | string[]; egressKbps?: number; maxConnections?: number } & CallOptions,
  ): Promise<Session>;
  stats(id: string, opts?: CallOptions): Promise<Stats>;

  /** A new code context; ResourceExhausted past 16. */
  createContext(id: string, opts?: CreateContextOptions): Promise<CodeContext>;
  /** The session's code contexts, "default" first. */
  contexts(id: string, opts?: CallOptions): Promise<CodeContext[]>;
  /** Stops a context's interpreter and forgets it; InvalidArgument for "default". */
  deleteContext(id: string, cid: string, opts?: CallOptions): Promise<void>;
  /** Starts a context's interpreter afresh. */
  restartContext(id: string, cid: string, opts?: CallOptions): Promise<CodeContext>;

  /** A volume of sizeMb; Conflict for a name the caller has, ResourceExhausted when the disk cannot hold it. */
  createVolume(name: string, sizeMb: number, opts?: CallOptions): Promise<Volume>;
  createVolume(name: string, opts: CreateVolumeOptions): Promise<Volume>;
  /** The caller's volumes (root: everyone's). */
  volumes(opts?: CallOptions): Promise<Volume[]>;
  /** One volume; NotFound for another user's (root names it "{uid}/{name}"). */
  volume(name: string | Volume, opts?: CallOptions): Promise<Volume>;
  /** Replaces whom a volume is shared with; Conflict while a user left out has a session mounting it. */
  updateVolume(name: string | Volume, opts: UpdateVolumeOptions): Promise<Volume>;
  /** Removes a volume and its files; Conflict while a session (running or not) mounts it. */
  deleteVolume(name: string | Volume, opts?: CallOptions): Promise<void>;

  /**
   * Takes session id back over its last steps executions (default 1): how many were undone. Conflict
   * for a session made without checkpoints or for more steps than it keeps.
   */
  undo(id: string, steps?: number, opts?: CallOptions): Promise<number>;
  undo(id: string, opts: UndoOptions): Promise<number>;

  /** Keeps the session's files and settings as a snapshot; Conflict for a name the caller has. */
  createSnapshot(id: string, opts?: { name?: string } & CallOptions): Promise<Snapshot>;
  /** The caller's snapshots (root: everyone's). */
  snapshots(opts?: CallOptions): Promise<Snapshot[]>;
  /** One snapshot, by id or the caller's name for it; NotFound for another user's. */
  snapshot(ref: string | Snapshot, opts?: CallOptions): Promise<Snapshot>;
  /** Removes a snapshot and its files; sessions made from it live on. */
  deleteSnapshot(ref: string | Snapshot, opts?: CallOptions): Promise<void>;
  /** count sessions (default 1) made from a snapshot, all or none (name only with count 1). */
  createSessions(snapshot: string | Snapshot, opts?: SnapshotSessionFields & CountOptions & CallOptions): Promise<Session[]>;
  /** count new sessions (default 1) that start where session id is now; it runs on. */
  forkSession(id: string, opts?: CountOptions & CallOptions): Promise<Session[]>;

  exec(id: string, code: string, opts?: ExecOptions): Promise<Execution>;
  /** Starts code without waiting for it (wait false): the execution's id. */
  startExec(id: string, code: string, opts?: SubmitOptions): Promise<string>;
  /** Execution eid: status "running" with its output so far, then whole while the history keeps it. */
  execution(id: string, eid: string, opts?: CallOptions): Promise<Execution>;
  /** Asks for execution eid until it no longer runs. */
  waitExecution(id: string, eid: string, opts?: WaitOptions): Promise<Execution>;
  /** Interrupts the running execution, as Ctrl-C would; false when nothing was running. */
  interrupt(id: string, opts?: CallOptions): Promise<boolean>;
  installPackages(id: string, packages: string | string[], opts?: InstallOptions): Promise<Execution>;
  run(code: string, opts?: RunOptions): Promise<Execution>;
  /** Newest first, running ones first, without output. */
  executions(id: string, opts?: { limit?: number } & CallOptions): Promise<ExecutionSummary[]>;

  /** Starts argv (no shell) in the background: the process, pid first; stdin or tty make it attached. */
  startProcess(id: string, argv: string[], opts?: StartProcessOptions): Promise<Process>;
  /** Sends data to an attached process's input; eof closes it after. Conflict once it ended or its input is closed. */
  writeStdin(id: string, pid: number, data: string | Uint8Array, opts?: { eof?: boolean } & CallOptions): Promise<void>;
  /** Closes an attached process's input. */
  closeStdin(id: string, pid: number, opts?: CallOptions): Promise<void>;
  /** Sets an attached process's terminal size; Conflict without a terminal. */
  resizeProcess(id: string, pid: number, rows: number, cols: number, opts?: CallOptions): Promise<void>;
  /** Sends sig (default "TERM") with POST …/signal; NotFound when there is no such process. */
  sendSignal(id: string, pid: number, sig?: string | number, opts?: CallOptions): Promise<void>;
  /** An attached process's output as it comes; with follow the last chunk is its end, and the return value its exit code. */
  processOutput(id: string, pid: number, opts?: OutputOptions): AsyncGenerator<ProcessChunk, number | null, undefined>;
  /** Every process of the session's sandbox. */
  processes(id: string, opts?: CallOptions): Promise<Process[]>;
  /** Sends sig ("TERM", "KILL", "INT", "HUP", a number; absent: TERM); NotFound when there is no such process. */
  signalProcess(id: string, pid: number, sig?: string | number | null, opts?: CallOptions): Promise<void>;
  /** A background process's output from offset. */
  processLogs(id: string, pid: number, opts?: { offset?: number } & CallOptions): Promise<ProcessLogs>;
  /** A background process's output as it comes, until it ends; the return value is its exit code. */
  followProcess(id: string, pid: number, opts?: FollowOptions): AsyncGenerator<Buffer, number | null, undefined>;
  /** Runs argv (no shell) with its standard streams on a connection of its own (exec -i / -it). */
  attach(id: string, argv: string[], opts?: AttachOptions): Promise<Attached>;

  /** metadata (lower-case keys) is the file's user metadata, sent as X-Sandboxd-Meta-KEY headers. */
  putFile(id: string, path: string, data: FileData, opts?: { metadata?: Record<string, string> } & CallOptions): Promise<FileWritten>;
  getFile(id: string, path: string, opts?: CallOptions): Promise<Buffer | FileInfo[]>;
  deleteFile(id: string, path: string, opts?: CallOptions): Promise<void>;
  /** Unpacks a tar stream into the folder path (format=tar). */
  putTar(id: string, path: string, data: FileData, opts?: CallOptions): Promise<FileWritten>;
  /** The folder path (or a file) as a tar stream, under its own name. */
  getTar(id: string, path: string, opts?: CallOptions): Promise<Readable>;
  /** A file, folder or symlink (never followed). */
  statFile(id: string, path: string, opts?: CallOptions): Promise<FileStat>;
  /** mkdir -p; created says whether this call made it. */
  makeFolder(id: string, path: string, opts?: CallOptions): Promise<FileStat>;
  /** Renames within /workspace or /tmp; never replaces (Conflict). */
  moveFile(id: string, from: string, to: string, opts?: CallOptions): Promise<FileStat>;
  /** A folder's entries to depth levels, deeper ones with their path. */
  listFolder(id: string, path: string, depth?: number, opts?: CallOptions): Promise<FileInfo[]>;
  /** A folder's changes as they happen, until the sandbox or the folder goes. */
  watchFiles(id: string, path: string, opts?: { recursive?: boolean } & CallOptions): AsyncGenerator<FileEvent, void, undefined>;

  /** "ok" ("degraded" from an older daemon); an unhealthy daemon rejects with Unavailable. */
  health(opts?: CallOptions): Promise<string>;
  /** The Health, unhealthy (503) included; only a daemon that cannot be reached rejects. */
  healthStatus(opts?: CallOptions): Promise<Health>;
  info(opts?: CallOptions): Promise<Record<string, any>>;
  node(opts?: CallOptions): Promise<Record<string, any>>;
  /** Drains the node (root only): creates and one-shot runs answer 503 while its sessions run on; drain(false) undoes it. The node. */
  drain(on?: boolean, opts?: CallOptions): Promise<Record<string, any>>;
}

// The sandbox.

export declare class Commands {
  constructor(sandbox: Sandbox);
  /** Runs cmd with /bin/sh in /workspace (or cwd); a non-zero exit is status "error". */
  run(cmd: string, opts?: CommandOptions): Promise<Execution>;
  /** Starts cmd with /bin/sh without waiting for it: the execution's id. */
  submit(cmd: string, opts?: Omit<SubmitOptions, "language">): Promise<string>;
  /** Runs a command (an array as it is, a string with /bin/sh) fed input, over an attach. */
  runWithInput(cmd: string | string[], input?: string | Uint8Array, opts?: RunWithInputOptions): Promise<CommandOutput>;
}

export declare class Contexts {
  constructor(sandbox: Sandbox);
  /** A new context: an empty interpreter, or with from a copy of that one's state. */
  create(opts?: CreateContextOptions): Promise<CodeContext>;
  /** The session's contexts, "default" first. */
  list(opts?: CallOptions): Promise<CodeContext[]>;
  /** Stops a context's interpreter and forgets it ("default" is never deleted). */
  delete(context: string | CodeContext, opts?: CallOptions): Promise<void>;
  /** Starts a context's interpreter afresh: its variables are gone. */
  restart(context: string | CodeContext, opts?: CallOptions): Promise<CodeContext>;
}

export declare class Processes {
  constructor(sandbox: Sandbox);
  /** Starts a command in the background: an array as it is, a string with /bin/sh; stdin or tty make it attached. */
  start(cmd: string | string[], opts?: StartProcessOptions): Promise<Process>;
  /** Sends data to an attached process's input; eof closes it after. */
  writeStdin(pid: number, data: string | Uint8Array, opts?: { eof?: boolean } & CallOptions): Promise<void>;
  closeStdin(pid: number, opts?: CallOptions): Promise<void>;
  /** Sets an attached process's terminal size. */
  resize(pid: number, rows: number, cols: number, opts?: CallOptions): Promise<void>;
  /** Sends sig (default "TERM"); NotFound when there is no such process. */
  signal(pid: number, sig?: string | number, opts?: CallOptions): Promise<void>;
  /** An attached process's output as chunks; followed, the last is its end and the return value its exit code. */
  output(pid: number, opts?: OutputOptions): AsyncGenerator<ProcessChunk, number | null, undefined>;
  list(opts?: CallOptions): Promise<Process[]>;
  /** Sends sig (default "TERM"; "KILL", "INT", "HUP", a number); false when there is no such process. */
  kill(pid: number, sig?: string | number, opts?: CallOptions): Promise<boolean>;
  logs(pid: number, opts?: { offset?: number } & CallOptions): Promise<ProcessLogs>;
  /** The output as it comes, until it ends; the return value is its exit code. */
  follow(pid: number, opts?: FollowOptions): AsyncGenerator<Buffer, number | null, undefined>;
  /** Its exit code once it ends (null if the daemon did not see it end). */
  wait(pid: number, opts?: FollowOptions): Promise<number | null>;
}

export declare class Files {
  constructor(sandbox: Sandbox);
  /** Writes a file, making its folders; metadata (lower-case keys) is its user metadata, which stat and list answer. */
  write(path: string, data: FileData, opts?: { metadata?: Record<string, string> } & CallOptions): Promise<FileWritten>;
  /** The file's bytes; with an encoding, its text. A folder rejects with code EISDIR. */
  read(path: string, opts?: CallOptions & { encoding?: undefined }): Promise<Buffer>;
  read(path: string, opts: BufferEncoding | (CallOptions & { encoding: BufferEncoding })): Promise<string>;
  readText(path: string, encoding?: BufferEncoding): Promise<string>;
  /** A folder's entries (default /workspace). A file rejects with code ENOTDIR. */
  list(path?: string, opts?: { depth?: number } & CallOptions): Promise<FileInfo[]>;
  /** A file, folder or symlink (never followed). */
  stat(path: string, opts?: CallOptions): Promise<FileStat>;
  /** mkdir -p; created says whether it was new. */
  mkdir(path: string, opts?: CallOptions): Promise<FileStat>;
  /** Renames within /workspace or /tmp; never replaces (Conflict). */
  move(from: string, to: string, opts?: CallOptions): Promise<FileStat>;
  /** A folder's changes as they happen; leave the for await to stop. */
  watch(path?: string, opts?: { recursive?: boolean } & CallOptions): AsyncGenerator<FileEvent, void, undefined>;
  remove(path: string, opts?: CallOptions): Promise<void>;
  exists(path: string, opts?: CallOptions): Promise<boolean>;
  /** A local folder into the sandbox as remote/NAME (cp -r), streamed as tar. */
  uploadDir(local: string, remote?: string, opts?: CallOptions): Promise<FileWritten>;
  /** A folder of the sandbox into local/NAME (cp -r), safely: the local paths written. */
  downloadDir(remote: string, local?: string, opts?: CallOptions): Promise<string[]>;
}

export declare class Sandbox implements AsyncDisposable {
  constructor(client: Client, session: Session, created?: boolean);
  static create(opts?: SessionFields & IdempotencyOptions & Connection & { signal?: AbortSignal }): Promise<Sandbox>;
  static connect(id: string, opts?: Connection & { signal?: AbortSignal }): Promise<Sandbox>;
  static list(opts?: LabelFilter & Connection & { signal?: AbortSignal }): Promise<Session[]>;
  /** count Sandboxes (default 1) made from a snapshot, all or none; their first execution says stateReset (files only). */
  static fromSnapshot(
    snapshot: string | Snapshot,
    opts?: SnapshotSessionFields & CountOptions & Connection & { signal?: AbortSignal },
  ): Promise<Sandbox[]>;

  readonly id: string;
  /** The session as the daemon last answered it. */
  readonly session: Session;
  readonly client: Client;
  readonly commands: Commands;
  readonly files: Files;
  readonly processes: Processes;
  /** Code contexts: interpreters of their own in the session; runCode(code, { context }) runs in one. */
  readonly contexts: Contexts;
  /** Whether making it made its session: false for connect, and for a create whose idempotencyKey an earlier create had used. */
  readonly created: boolean;

  info(opts?: CallOptions): Promise<Session>;
  isRunning(opts?: CallOptions): Promise<boolean>;
  stats(opts?: CallOptions): Promise<Stats>;
  stop(opts?: CallOptions): Promise<Session>;
  start(opts?: CallOptions): Promise<Session>;
  restart(opts?: CallOptions): Promise<Session>;
  /** Interrupts the running execution, as Ctrl-C would: it resolves to status "interrupted"; false when nothing was running. */
  interrupt(opts?: CallOptions): Promise<boolean>;
  /** Freezes every process (memory and variables kept, no CPU); an execution resumes it. */
  pause(opts?: CallOptions): Promise<Session>;
  hibernate(opts?: CallOptions): Promise<Session>;
  resume(opts?: CallOptions): Promise<Session>;
  /** Ends the session this many seconds from now, whatever it does; 0 removes the deadline. */
  setDeadline(seconds: number, opts?: CallOptions): Promise<Session>;
  setNetwork(
    network: string,
    opts?: { allow?: string | string[]; egressKbps?: number; maxConnections?: number } & CallOptions,
  ): Promise<Session>;
  /** Keeps the session's files and settings as a snapshot, which outlives it; the session runs on. */
  createSnapshot(opts?: { name?: string } & CallOptions): Promise<Snapshot>;
  /** count new Sandboxes (default 1) that start where this one is now; this one runs on. */
  fork(opts?: CountOptions & CallOptions): Promise<Sandbox[]>;
  /** Takes the session back over its last steps executions (default 1; made with checkpoints): how many were undone. */
  undo(steps?: number, opts?: CallOptions): Promise<number>;
  undo(opts: UndoOptions): Promise<number>;
  /** Deletes the session; false if it was gone already. */
  kill(opts?: CallOptions): Promise<boolean>;
  delete(opts?: CallOptions): Promise<boolean>;

  runCode(code: string, opts?: ExecOptions): Promise<Execution>;
  install(packages: string | string[], opts?: InstallOptions): Promise<Execution>;
  /** Starts code without waiting for it: the execution's id. */
  submit(code: string, opts?: SubmitOptions): Promise<string>;
  /** Execution eid: status "running" with its output so far, then whole while the history keeps it. */
  execution(eid: string, opts?: CallOptions): Promise<Execution>;
  /** Waits for execution eid to end; past timeoutMs, RequestTimeout (the execution runs on). */
  waitExecution(eid: string, opts?: WaitOptions): Promise<Execution>;
  /** Newest first, running ones first, without output: execution(eid) has one whole. */
  executions(opts?: { limit?: number } & CallOptions): Promise<ExecutionSummary[]>;
  /** Runs a command (an array as it is, a string with /bin/sh) attached: exec -i, -it with tty. */
  attach(cmd: string | string[], opts?: AttachOptions): Promise<Attached>;

  [Symbol.asyncDispose](): Promise<void>;
  toString(): string;
}

/** Runs code once in a fresh sandbox that is gone afterwards (POST /v1/run). */
export declare function run(code: string, opts?: RunOptions & { socket?: string; client?: Client }): Promise<Execution>;

// Tools for agent frameworks (src/tools.js).

/** The default bound of the text a model is given for one call. */
export declare const DEFAULT_MAX_CHARS: 20000;
/** The tools, in the order of tools.json. */
export declare const TOOL_NAMES: readonly ToolName[];
/** The version of tools.json: it grows when a tool or its arguments change. */
export declare const TOOLS_VERSION: number;

export type ToolName = "run_python" | "run_shell" | "write_file" | "read_file" | "install_packages";

/** Tools by name: one, several, or all when absent. */
export type ToolNames = ToolName | Iterable<ToolName> | null;

/** A JSON Schema of tools.json (its small subset of keywords). */
export interface ToolInputSchema {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: false;
  [keyword: string]: unknown;
}

/** A tool as tools.json has it. */
export interface ToolDefinition {
  name: ToolName;
  description: string;
  input_schema: ToolInputSchema;
}

export interface OpenAITool {
  type: "function";
  function: { name: ToolName; description: string; parameters: ToolInputSchema };
}

export interface OpenAIResponsesTool {
  type: "function";
  name: ToolName;
  description: string;
  parameters: ToolInputSchema;
}

export interface AnthropicTool {
  name: ToolName;
  description: string;
  input_schema: ToolInputSchema;
}

/** The tools as tools.json has them, all or those named (a TypeError for a name that is none). */
export declare function definitions(opts?: { names?: ToolNames }): ToolDefinition[];
/** The tools for OpenAI's Chat Completions (`tools:`). */
export declare function openaiTools(opts?: { names?: ToolNames }): OpenAITool[];
/** The tools for OpenAI's Responses API. */
export declare function openaiResponsesTools(opts?: { names?: ToolNames }): OpenAIResponsesTool[];
/** The tools for Anthropic's Messages API. */
export declare function anthropicTools(opts?: { names?: ToolNames }): AnthropicTool[];

/** A Chat Completions tool message. */
export interface OpenAIToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string;
}

/** A Chat Completions user message with the figures of a call. */
export interface OpenAIImagesMessage {
  role: "user";
  content: Array<{ type: "text"; text: string } | { type: "image_url"; image_url: { url: string } }>;
}

/** A Responses API function_call_output item: text, or text and images. */
export interface OpenAIFunctionCallOutput {
  type: "function_call_output";
  call_id: string;
  output: string | Array<{ type: "input_text"; text: string } | { type: "input_image"; image_url: string; detail: "auto" }>;
}

/** A Messages API tool_result block. */
export interface AnthropicToolResult {
  type: "tool_result";
  tool_use_id: string;
  content: Array<
    { type: "text"; text: string } | { type: "image"; source: { type: "base64"; media_type: string; data: string } }
  >;
  is_error: boolean;
}

/** The outcome of one tool call. */
export declare class ToolResult {
  constructor(f: {
    name: string;
    data: Record<string, any>;
    text: string;
    isError?: boolean;
    images?: Output[];
    errorCode?: string | null;
    callId?: string | null;
    cut?: string[];
    execution?: Execution | null;
    exception?: unknown;
  });
  name: string;
  /** The whole answer as the model is told it, uncut. */
  data: Record<string, any>;
  /** data as JSON, bounded to the Toolbox's maxChars: what the model reads. */
  text: string;
  isError: boolean;
  /** The images the call made (matplotlib figures). */
  images: Output[];
  /** "unknown_tool", "invalid_argument" or the daemon's code; null for code that failed. */
  errorCode: string | null;
  callId: string | null;
  /** The fields text had to cut. */
  cut: string[];
  execution: Execution | null;
  exception: unknown;
  toOpenAI(callId?: string | null): OpenAIToolMessage;
  toOpenAIResponses(callId?: string | null): OpenAIFunctionCallOutput;
  toAnthropic(toolUseId?: string | null): AnthropicToolResult;
  /** The figures in a user message to append after the tool messages; null without any. */
  openaiImagesMessage(): OpenAIImagesMessage | null;
  toJSON(): {
    name: string;
    data: Record<string, any>;
    text: string;
    isError: boolean;
    images: Array<{ mime: string; data: string }>;
    errorCode: string | null;
    callId: string | null;
    cut: string[];
  };
}

/** A Toolbox's own options. */
export interface ToolboxOptions {
  names?: ToolNames;
  /** The bound of each result's text (default 20000, at least 1000). */
  maxChars?: number;
  /** run_python's and run_shell's timeout, else the session's timeout_s. */
  timeoutS?: number | null;
  /** install_packages' index, else the daemon's. */
  indexUrl?: string | null;
}

/** A tool call as an API or its SDK gives it. */
export type ToolArguments = Record<string, any> | string | Uint8Array | null;

/** Runs a model's tool calls against one sandbox; a call never rejects. */
export declare class Toolbox implements AsyncDisposable {
  /** A Sandbox (the caller's), or the options of Sandbox.create to make one on the first call. */
  constructor(sandbox?: Sandbox | (SessionFields & IdempotencyOptions & Connection) | null, opts?: ToolboxOptions);
  readonly names: readonly ToolName[];
  /** The sandbox in use; null before a Toolbox that makes its own made it. */
  readonly sandbox: Sandbox | null;
  maxChars: number;
  timeoutS: number | null;
  indexUrl: string | null;
  getSandbox(): Promise<Sandbox>;
  definitions(): ToolDefinition[];
  openaiTools(): OpenAITool[];
  openaiResponsesTools(): OpenAIResponsesTool[];
  anthropicTools(): AnthropicTool[];
  run(name: string, args?: ToolArguments, opts?: { callId?: string | null }): Promise<ToolResult>;
  /** A call of any of the three APIs, told apart by its shape. */
  handle(call: unknown): Promise<ToolResult>;
  /** A Chat Completions tool call: {id, type: "function", function: {name, arguments}}. */
  handleOpenAI(call: { id?: string; function?: { name?: string; arguments?: string } }): Promise<OpenAIToolMessage>;
  /** A Responses API function_call item: {type: "function_call", call_id, name, arguments}. */
  handleOpenAIResponses(item: { call_id?: string; name?: string; arguments?: string }): Promise<OpenAIFunctionCallOutput>;
  /** A Messages API tool_use block: {type: "tool_use", id, name, input}. */
  handleAnthropic(block: { id?: string; name?: string; input?: unknown }): Promise<AnthropicToolResult>;
  /** Deletes the sandbox it made, if any; a later call makes another. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  toString(): string;
}

/** Runs one tool call against a sandbox, for a caller that keeps no Toolbox. */
export declare function dispatch(
  sandbox: Sandbox,
  name: string,
  args?: ToolArguments,
  opts?: ToolboxOptions,
): Promise<ToolResult>;
