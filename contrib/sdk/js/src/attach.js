// Attach: a command in the sandbox with its standard streams on this
// connection (sandboxctl exec -i / -it, docker's exec).
//
// POST /v1/sessions/{id}/attach asks, with Connection: Upgrade and Upgrade:
// sandboxd-attach/1, for the connection to be taken over. A refusal is an
// ordinary error answer; success is 101, and then both sides send frames: a
// type byte, a 4-byte big-endian length, the payload (api/attach.go). The
// client sends stdin (0), its end (4) and terminal resizes (5); the daemon
// the command's stdout (1) and stderr (2), and last its exit status (3).
// node:http hands the socket over on its "upgrade" event (Transport.upgrade).

import { ProtocolError } from "./errors.js";

/** The protocol an attach upgrades its connection to. */
export const ATTACH_UPGRADE = "sandboxd-attach/1";

export const FRAME_STDIN = 0;
export const FRAME_STDOUT = 1;
export const FRAME_STDERR = 2;
export const FRAME_EXIT = 3;
export const FRAME_CLOSE_STDIN = 4;
export const FRAME_RESIZE = 5;

/** The longest payload of a frame, either way. */
export const MAX_FRAME = 1 << 20;

/** @type {Record<number, "stdout" | "stderr">} */
const STREAMS = { [FRAME_STDOUT]: "stdout", [FRAME_STDERR]: "stderr" };

// Output chunks held for a reader that has not asked for them yet: past
// this many, the socket is paused, and the daemon waits (so does the
// command, once its pipe is full).
const HIGH_WATER = 64;

// The errors of a write to a daemon that has closed the connection.
const PEER_GONE = new Set(["EPIPE", "ECONNRESET", "ERR_STREAM_DESTROYED"]);

/**
 * Keeps a write to a connection the daemon closed from destroying the
 * socket. The daemon closes it right after the exit frame, which may then
 * still wait in the socket's receive queue: node:net destroys a socket
 * whose write failed, and with it what it had not read yet (Go's and
 * Python's sockets read on after a failed write). Such a write's error is
 * kept for its caller instead (`gone`), and reading goes on to the exit
 * frame. Other errors fail the socket as they would.
 * @param {import("node:net").Socket} socket
 * @param {(err: Error) => void} gone
 */
function keepReadingAfterPeerClosed(socket, gone) {
  /** @param {(err?: Error | null) => void} cb */
  const wrap = (cb) => (/** @type {Error | null | undefined} */ err) => {
    if (err && PEER_GONE.has(/** @type {any} */ (err).code)) {
      gone(err);
      cb(null);
    } else {
      cb(err);
    }
  };
  const s = /** @type {any} */ (socket);
  const write = s._write;
  const writev = s._writev;
  if (typeof write === "function") {
    s._write = (/** @type {unknown} */ chunk, /** @type {string} */ enc, /** @type {(err?: Error | null) => void} */ cb) => write.call(socket, chunk, enc, wrap(cb));
  }
  if (typeof writev === "function") {
    s._writev = (/** @type {unknown} */ chunks, /** @type {(err?: Error | null) => void} */ cb) => writev.call(socket, chunks, wrap(cb));
  }
}

/**
 * One frame: its type, its length (4 bytes, big-endian), its payload.
 * @param {number} type
 * @param {Uint8Array} [payload]
 */
export function encodeFrame(type, payload = Buffer.alloc(0)) {
  if (payload.length > MAX_FRAME) throw new RangeError(`a frame of ${payload.length} bytes is over the limit of ${MAX_FRAME}`);
  const b = Buffer.alloc(5 + payload.length);
  b[0] = type;
  b.writeUInt32BE(payload.length, 1);
  b.set(payload, 5);
  return b;
}

/**
 * A resize frame's payload: rows, then columns, 2 bytes each.
 * @param {number} rows
 * @param {number} cols
 */
export function resizePayload(rows, cols) {
  for (const [what, v] of /** @type {Array<[string, number]>} */ ([["rows", rows], ["cols", cols]])) {
    if (!Number.isInteger(v) || v < 0 || v > 0xffff) throw new RangeError(`${what} must be 0 to 65535, not ${v}`);
  }
  const b = Buffer.alloc(4);
  b.writeUInt16BE(rows, 0);
  b.writeUInt16BE(cols, 2);
  return b;
}

/**
 * An exit frame's status (4 bytes, big-endian, signed: 128+N for a signal N).
 * @param {Buffer} payload
 */
export function parseExit(payload) {
  if (payload.length !== 4) throw new ProtocolError(`sandboxd sent an exit frame of ${payload.length} bytes, not 4`);
  return payload.readInt32BE(0);
}

/**
 * Reads frames out of the bytes that come, in whatever pieces they come.
 */
export class FrameDecoder {
  constructor() {
    /** @type {Buffer} */
    this._buf = Buffer.alloc(0);
  }

  /**
   * The whole frames the bytes so far hold; a partial one waits for more.
   * @param {Buffer} chunk
   * @returns {Array<{type: number, payload: Buffer}>}
   */
  push(chunk) {
    this._buf = this._buf.length ? Buffer.concat([this._buf, chunk]) : chunk;
    const out = [];
    while (this._buf.length >= 5) {
      const n = this._buf.readUInt32BE(1);
      if (n > MAX_FRAME) throw new ProtocolError(`sandboxd sent a frame of ${n} bytes, over the limit of ${MAX_FRAME}: not the attach protocol`);
      if (this._buf.length < 5 + n) break;
      out.push({ type: this._buf[0], payload: Buffer.from(this._buf.subarray(5, 5 + n)) });
      this._buf = this._buf.subarray(5 + n);
    }
    return out;
  }

  /** Whether bytes of a frame are held (a stream that ends now was cut in one). */
  get pending() {
    return this._buf.length > 0;
  }
}

/**
 * @typedef {{stream: "stdout" | "stderr", data: Buffer}} Chunk
 */

/**
 * A command in a session's sandbox whose standard streams are this
 * connection. write() sends it input, closeStdin() ends it, resize() sets
 * its terminal's size; iterating it (for await) yields its output as
 * {stream, data} chunks until it exits, and wait() resolves to its exit
 * status (128+N for a signal N). close() hangs up, which ends a command
 * still running.
 */
export class Attached {
  /**
   * @param {import("node:net").Socket} socket the upgraded connection
   * @param {Buffer} head what came after the 101's head
   * @param {string | null} [requestId]
   */
  constructor(socket, head, requestId = null) {
    this._socket = socket;
    this.requestId = requestId;
    /** The exit status, once it came. @type {number | null} */
    this.exitCode = null;
    this._dec = new FrameDecoder();
    /** @type {Chunk[]} */
    this._queue = [];
    this._ended = false;
    /** @type {unknown} */
    this._error = null;
    this._discard = false;
    this._iterating = false;
    /** @type {(() => void) | null} */
    this._wake = null;
    /** @type {(code: number) => void} */
    let resolveExit = () => {};
    /** @type {(err: unknown) => void} */
    let rejectExit = () => {};
    /** @type {Promise<number>} */
    this._exit = new Promise((resolve, reject) => {
      resolveExit = resolve;
      rejectExit = reject;
    });
    // Nobody may ever ask: a rejection no one awaits must not end the
    // process (Node's unhandled rejections).
    this._exit.catch(() => {});
    this._resolveExit = resolveExit;
    this._rejectExit = rejectExit;
    /** A write the daemon was gone for. @type {Error | null} */
    this._gone = null;
    keepReadingAfterPeerClosed(socket, (err) => (this._gone = this._gone || err));

    socket.on("data", (b) => this._take(b));
    socket.on("end", () => this._finish(null));
    socket.on("close", () => this._finish(null));
    socket.on("error", (err) => this._finish(err));
    if (head && head.length) this._take(head);
  }

  /** @param {Buffer} b */
  _take(b) {
    if (this._ended) return;
    let frames;
    try {
      frames = this._dec.push(b);
    } catch (err) {
      this._finish(err);
      this._socket.destroy();
      return;
    }
    for (const f of frames) {
      const stream = STREAMS[f.type];
      if (stream) {
        if (!this._discard) this._queue.push({ stream, data: f.payload });
      } else if (f.type === FRAME_EXIT) {
        try {
          this.exitCode = parseExit(f.payload);
        } catch (err) {
          this._finish(err);
          this._socket.destroy();
          return;
        }
        this._ended = true;
        this._resolveExit(this.exitCode);
        // The last frame: the daemon is done with the connection.
        this._socket.destroy();
        break;
      }
      // Other types are a newer daemon's: skipped.
    }
    if (this._queue.length >= HIGH_WATER) this._socket.pause();
    this._poke();
  }

  /** @param {unknown} err */
  _finish(err) {
    if (this._ended) return;
    this._ended = true;
    this._error =
      err ||
      new ProtocolError(
        this._dec.pending
          ? "sandboxd closed the connection in the middle of a frame"
          : "sandboxd closed the connection before the command ended",
        { cause: err || undefined },
      );
    this._rejectExit(this._error);
    this._poke();
  }

  _poke() {
    const w = this._wake;
    this._wake = null;
    if (w) w();
  }

  /**
   * Sends input to the command (a string as UTF-8), in frames of at most
   * 1 MiB; resolves once the bytes are with the system, which a command
   * reading slowly may delay. It rejects (EPIPE) once the command ended and
   * the daemon closed the connection; its exit status is still read.
   * @param {string | Uint8Array} data
   * @returns {Promise<void>}
   */
  async write(data) {
    const b = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    for (let off = 0; off < b.length; off += MAX_FRAME) {
      await this._send(FRAME_STDIN, b.subarray(off, Math.min(off + MAX_FRAME, b.length)));
    }
  }

  /** Ends the command's input (EOF; with a terminal, ^D). */
  closeStdin() {
    return this._send(FRAME_CLOSE_STDIN);
  }

  /**
   * Sets the size of the command's terminal (with tty).
   * @param {number} rows
   * @param {number} cols
   */
  resize(rows, cols) {
    return this._send(FRAME_RESIZE, resizePayload(rows, cols));
  }

  /**
   * @param {number} type
   * @param {Uint8Array} [payload]
   * @returns {Promise<void>}
   */
  _send(type, payload) {
    if (this.exitCode !== null) return Promise.reject(new Error(`the command exited with ${this.exitCode}: it takes no more input`));
    if (this._gone) return Promise.reject(this._gone);
    if (this._socket.destroyed || !this._socket.writable) return Promise.reject(new Error("the attach is closed"));
    const frame = encodeFrame(type, payload);
    return new Promise((resolve, reject) => {
      this._socket.write(frame, (err) => {
        const e = err || this._gone;
        if (e) reject(e);
        else resolve();
      });
    });
  }

  /**
   * The command's output as it comes, {stream: "stdout" | "stderr", data}
   * (with a terminal, all is stdout), until it exits; a connection cut
   * before the exit throws ProtocolError. One reader at a time.
   * @returns {AsyncGenerator<Chunk>}
   */
  async *[Symbol.asyncIterator]() {
    this._iterating = true;
    try {
      for (;;) {
        const c = this._queue.shift();
        if (c) {
          if (this._queue.length < HIGH_WATER / 2 && this._socket.isPaused()) this._socket.resume();
          yield c;
          continue;
        }
        if (this._ended) {
          if (this.exitCode === null) throw this._error;
          return;
        }
        await new Promise((resolve) => (this._wake = () => resolve(undefined)));
      }
    } finally {
      this._iterating = false;
    }
  }

  /**
   * Resolves to the command's exit status once it exits. Output not
   * iterated is dropped (iterate first, or at the same time, to keep it).
   * @returns {Promise<number>}
   */
  wait() {
    if (!this._iterating) {
      this._discard = true;
      this._queue.length = 0;
      if (this._socket.isPaused()) this._socket.resume();
    }
    return this._exit;
  }

  /**
   * Hangs up: a command still running ends. A reader then fails with
   * `reason` (a ProtocolError if none).
   * @param {unknown} [reason]
   */
  close(reason) {
    if (!this._ended && reason) this._finish(reason);
    this._socket.destroy();
  }

  toString() {
    const state = this.exitCode !== null ? `exited ${this.exitCode}` : this._ended ? "closed" : "open";
    return `Attached(${state})`;
  }
}

/**
 * The body of POST …/attach (api.AttachRequest); absent fields stay absent.
 * @param {string[]} argv
 * @param {{tty?: boolean, rows?: number, cols?: number, env?: Record<string, string>, cwd?: string}} [opts]
 */
export function attachRequest(argv, opts = {}) {
  const body = commandRequest(argv, opts.env, opts.cwd);
  if (opts.tty) body.tty = true;
  if (opts.rows !== undefined && opts.rows !== null) body.rows = opts.rows;
  if (opts.cols !== undefined && opts.cols !== null) body.cols = opts.cols;
  return body;
}

/**
 * The body of POST …/processes and …/attach: argv as is (no shell).
 * @param {string[]} argv
 * @param {Record<string, string> | undefined | null} env
 * @param {string | undefined | null} cwd
 * @returns {Record<string, any>}
 */
export function commandRequest(argv, env, cwd) {
  if (!Array.isArray(argv)) {
    // A string would be no argv at all: the daemon runs argv without a shell.
    throw new TypeError("argv is an array of strings, the command and its arguments (no shell): e.g. [\"ls\", \"-la\"]");
  }
  /** @type {Record<string, any>} */
  const body = { argv: argv.map(String) };
  if (env && Object.keys(env).length) body.env = Object.fromEntries(Object.entries(env).map(([k, v]) => [String(k), String(v)]));
  if (cwd) body.cwd = cwd;
  return body;
}

/**
 * argv as the daemon runs it: a string is a command line for /bin/sh (as
 * commands.run takes), an array runs as it is.
 * @param {string | string[]} cmd
 */
export function shellArgv(cmd) {
  return typeof cmd === "string" ? ["/bin/sh", "-c", cmd] : [...cmd].map(String);
}
