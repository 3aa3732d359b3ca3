// HTTP/1.1 over sandboxd's Unix socket, with the contract's errors.
//
// node:http speaks HTTP over a Unix socket with `socketPath`, so no
// dependency is needed. Every call opens its own connection (agent: false,
// Connection: close): a connect on a Unix socket costs microseconds, and a
// connection that is never shared can neither be found closed by the
// daemon's idle timeout halfway through a call nor keep the process alive
// once the call is done.

import http from "node:http";
import { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

import { ProtocolError, RequestTimeout, SandboxdError, Unavailable, errorFromAnswer } from "./errors.js";

/** Where the daemon listens unless told otherwise. */
export const DEFAULT_SOCKET = "/run/sandboxd/sandboxd.sock";

/** The environment variable that overrides DEFAULT_SOCKET. */
export const SOCKET_ENV = "SANDBOXD_SOCKET";

/** The Accept value that asks for an execution streamed as it runs. */
export const STREAM_MIME = "application/x-ndjson";

export const VERSION = "0.1.0";

// An error body is one sentence; a longer one is not worth holding.
const MAX_ERROR_BODY = 1 << 20;

/**
 * The socket to use: the given one, else $SANDBOXD_SOCKET, else the default.
 * @param {string | undefined | null} path
 */
export function socketPath(path) {
  return path || process.env[SOCKET_ENV] || DEFAULT_SOCKET;
}

/**
 * A path of the API from its segments, each escaped: a session id is the
 * caller's input and must not add a segment of its own.
 * @param {...string} segments
 */
export function apiPath(...segments) {
  return "/" + segments.map((s) => encodeURIComponent(String(s))).join("/");
}

/**
 * Seconds of a Retry-After header, in both of its forms (seconds, or an
 * HTTP date); null when absent or unreadable.
 * @param {string | undefined | null} v
 */
export function retryAfter(v) {
  if (!v) return null;
  v = v.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const when = Date.parse(v);
  if (Number.isNaN(when)) return null;
  return Math.max(0, (when - Date.now()) / 1000);
}

/**
 * What one call shares between its request and its answer: how it ended
 * early, if it did, so each failure is told as what it is.
 */
class CallState {
  /**
   * @param {string} where the socket
   * @param {number | null} timeoutMs
   * @param {AbortSignal | undefined} signal
   */
  constructor(where, timeoutMs, signal) {
    this.where = where;
    this.timeoutMs = timeoutMs;
    this.signal = signal;
    this.timedOut = false;
    this.aborted = false;
    /** @type {(() => void) | null} */
    this.unlisten = null;
  }

  /**
   * The error to throw for a failure of the call, in one place.
   * @param {any} err
   * @param {boolean} answered whether the answer's head had come
   * @returns {unknown}
   */
  map(err, answered) {
    if (this.aborted && this.signal) return this.signal.reason;
    if (this.timedOut) {
      const waited = this.timeoutMs ? `for ${this.timeoutMs / 1000} s` : "in time";
      return new RequestTimeout(
        `sandboxd at ${this.where} sent nothing ${waited}: give the call a longer requestTimeoutMs, or check the daemon's log`,
      );
    }
    if (err instanceof SandboxdError) return err;
    const code = err && err.code;
    if (!answered && err && err.syscall === "connect") {
      if (code === "EACCES" || code === "EPERM") {
        return new Unavailable(`permission denied on ${this.where}: run as root or as a member of the sandboxd group`, { cause: err });
      }
      if (code === "ENOENT" || code === "ECONNREFUSED") {
        return new Unavailable(`cannot connect to sandboxd at ${this.where}: is it running?`, { cause: err });
      }
      return new Unavailable(`cannot connect to sandboxd at ${this.where}: is it running? (${err.message})`, { cause: err });
    }
    if (!answered && (code === "ECONNRESET" || code === "EPIPE")) {
      return new Unavailable(`talking to sandboxd at ${this.where}: ${err.message}`, { cause: err });
    }
    if (answered && (code === "ECONNRESET" || (err && err.message === "aborted"))) {
      return new ProtocolError(`talking to sandboxd at ${this.where}: the answer was cut short`, { cause: err });
    }
    return new ProtocolError(`talking to sandboxd at ${this.where}: ${err && err.message ? err.message : String(err)}`, {
      cause: err,
    });
  }
}

/** A 2xx answer whose body is still to be read; close() ends the call. */
export class Answer {
  /**
   * @param {http.ClientRequest} req
   * @param {http.IncomingMessage} res
   * @param {CallState} state
   */
  constructor(req, res, state) {
    this._req = req;
    this._res = res;
    this._state = state;
  }

  get status() {
    return this._res.statusCode ?? 0;
  }

  get contentType() {
    return String(this._res.headers["content-type"] || "")
      .split(";")[0]
      .trim()
      .toLowerCase();
  }

  /** @returns {string | null} */
  get requestId() {
    const v = this._res.headers["x-request-id"];
    return typeof v === "string" ? v : null;
  }

  /**
   * The whole body (at most `limit` bytes of it).
   * @param {number} [limit]
   * @returns {Promise<Buffer>}
   */
  async read(limit = Infinity) {
    /** @type {Buffer[]} */
    const chunks = [];
    let n = 0;
    try {
      for await (const chunk of this._res) {
        chunks.push(chunk);
        n += chunk.length;
        if (n >= limit) break;
      }
    } catch (err) {
      throw this._state.map(err, true);
    }
    if (this._state.aborted || this._state.timedOut) throw this._state.map(null, true);
    const b = Buffer.concat(chunks);
    return n > limit ? b.subarray(0, limit) : b;
  }

  /** The body as JSON; null when it is empty. */
  async json() {
    const b = await this.read();
    if (b.length === 0) return null;
    try {
      return JSON.parse(b.toString("utf8"));
    } catch (err) {
      throw new ProtocolError(`bad answer from sandboxd: ${/** @type {Error} */ (err).message}`, {
        status: this.status,
        requestId: this.requestId,
      });
    }
  }

  /**
   * The JSON objects of an NDJSON body, one a line, as they come.
   * @returns {AsyncGenerator<Record<string, any>>}
   */
  async *lines() {
    const dec = new StringDecoder("utf8");
    let buf = "";
    /** @param {string} line */
    const parse = (line) => {
      try {
        return JSON.parse(line);
      } catch (err) {
        throw new ProtocolError(`bad stream line from sandboxd: ${/** @type {Error} */ (err).message}`, {
          requestId: this.requestId,
        });
      }
    };
    const it = this._res[Symbol.asyncIterator]();
    for (;;) {
      /** @type {IteratorResult<Buffer>} */
      let next;
      try {
        next = await it.next();
      } catch (err) {
        throw this._state.map(err, true);
      }
      if (next.done) break;
      buf += dec.write(next.value);
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const obj = parse(line);
        if (obj && typeof obj === "object" && !Array.isArray(obj)) yield obj;
      }
    }
    if (this._state.aborted || this._state.timedOut) throw this._state.map(null, true);
    const last = (buf + dec.end()).trim();
    if (last) {
      const obj = parse(last);
      if (obj && typeof obj === "object" && !Array.isArray(obj)) yield obj;
    }
  }

  /**
   * The body's chunks as they come, the call's failures the SDK's errors.
   * @returns {AsyncGenerator<Buffer>}
   */
  async *chunks() {
    const it = this._res[Symbol.asyncIterator]();
    for (;;) {
      /** @type {IteratorResult<Buffer>} */
      let next;
      try {
        next = await it.next();
      } catch (err) {
        throw this._state.map(err, true);
      }
      if (next.done) break;
      yield next.value;
    }
    if (this._state.aborted || this._state.timedOut) throw this._state.map(null, true);
  }

  /** The value of a header of the answer ("" when absent). @param {string} name */
  header(name) {
    const v = this._res.headers[name.toLowerCase()];
    return Array.isArray(v) ? v.join(", ") : v ?? "";
  }

  /** Ends the call: the connection is closed, read or not. */
  close() {
    if (!this._res.complete) this._res.destroy();
    this._req.destroy();
    if (this._state.unlisten) this._state.unlisten();
  }
}

/**
 * @typedef {Buffer | Uint8Array | string | Readable | AsyncIterable<Uint8Array> | null | undefined} Body
 * @typedef {Array<[string, string]>} Query
 * @typedef {{query?: Query, json?: unknown, body?: Body, accept?: string, headers?: Record<string, string>,
 *            timeoutMs: number | null, signal?: AbortSignal, answers?: number[]}} SendOptions
 */

/**
 * Sends calls to one daemon and hands back 2xx answers; anything else is
 * thrown as the error of its code. Paths come escaped (see apiPath).
 */
export class Transport {
  /** @param {string | undefined | null} [socket] */
  constructor(socket) {
    this.socket = socketPath(socket);
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {SendOptions} opts
   * @returns {Promise<Answer>}
   */
  async send(method, path, opts) {
    const { query = [], json, body, accept, timeoutMs, signal } = opts;
    let url = path;
    if (query.length) url += "?" + new URLSearchParams(query).toString();
    /** @type {Record<string, string>} */
    const headers = { "User-Agent": `sandboxd-js/${VERSION}`, Connection: "close", ...opts.headers };
    /** @type {Buffer | Readable | null} */
    let data = null;
    if (json !== undefined) {
      data = Buffer.from(JSON.stringify(json), "utf8");
      headers["Content-Type"] = "application/json";
    } else if (body !== undefined && body !== null) {
      if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["Content-Type"] = "application/octet-stream";
      if (typeof body === "string") data = Buffer.from(body, "utf8");
      else if (body instanceof Uint8Array) data = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      else if (body instanceof Readable) data = body;
      else if (typeof (/** @type {any} */ (body)[Symbol.asyncIterator]) === "function") data = Readable.from(body);
      else throw new TypeError("a body is a Buffer, a Uint8Array, a string, a Readable or an AsyncIterable of bytes");
    }
    if (Buffer.isBuffer(data)) headers["Content-Length"] = String(data.length);
    if (accept) headers.Accept = accept;

    if (signal && signal.aborted) throw signal.reason;
    const state = new CallState(this.socket, timeoutMs, signal);
    const req = http.request({ socketPath: this.socket, method, path: url, headers, agent: false });
    if (timeoutMs) {
      // The socket's idle timeout: how long the daemon may send nothing,
      // before the answer or between two lines of a stream.
      req.setTimeout(timeoutMs, () => {
        state.timedOut = true;
        req.destroy();
      });
    }
    if (signal) {
      const onAbort = () => {
        state.aborted = true;
        req.destroy();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      state.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    // Errors after the answer's head are the answer's to tell (a daemon may
    // answer a 413 before it has read the whole upload, then close).
    req.on("error", () => {});
    req.on("close", () => state.unlisten && state.unlisten());

    /** @type {http.IncomingMessage} */
    let res;
    try {
      res = await new Promise((resolve, reject) => {
        req.once("response", resolve);
        req.once("error", reject);
        req.once("close", () => reject(new Error("the connection closed before an answer")));
        if (data instanceof Readable) {
          data.once("error", (err) => req.destroy(err));
          data.pipe(req);
        } else {
          req.end(data ?? undefined);
        }
      });
    } catch (err) {
      if (state.unlisten) state.unlisten();
      req.destroy();
      throw state.map(err, false);
    }
    res.on("error", () => {});
    if (data instanceof Readable) {
      // An answer before the whole body (a 413) ends the upload: the rest
      // of the body is not sent, and its source is closed.
      data.unpipe(req);
      if (!data.readableEnded) data.destroy();
    }
    const ans = new Answer(req, res, state);
    const status = res.statusCode ?? 0;
    // `answers` are statuses the caller reads as answers of its own (the
    // Health a 503 of GET /v1/health carries).
    if ((status >= 200 && status < 300) || (opts.answers || []).includes(status)) return ans;
    try {
      throw await failure(ans, res);
    } finally {
      ans.close();
    }
  }

  /**
   * POSTs json to path asking for the connection to be taken over by
   * `protocol` (Connection: Upgrade), and resolves to the socket once the
   * daemon answered 101, with the bytes that came after the answer's head.
   * A refusal is the error of its answer, as any call's. `timeoutMs` and
   * `signal` bound the handshake alone: the socket is the caller's after.
   * @param {string} path
   * @param {{json: unknown, protocol: string, timeoutMs: number | null, signal?: AbortSignal}} opts
   * @returns {Promise<{socket: import("node:net").Socket, head: Buffer, requestId: string | null}>}
   */
  async upgrade(path, opts) {
    const { json, protocol, timeoutMs, signal } = opts;
    const data = Buffer.from(JSON.stringify(json), "utf8");
    const headers = {
      "User-Agent": `sandboxd-js/${VERSION}`,
      Connection: "Upgrade",
      Upgrade: protocol,
      "Content-Type": "application/json",
      "Content-Length": String(data.length),
    };
    if (signal && signal.aborted) throw signal.reason;
    const state = new CallState(this.socket, timeoutMs, signal);
    const req = http.request({ socketPath: this.socket, method: "POST", path, headers, agent: false });
    if (timeoutMs) {
      req.setTimeout(timeoutMs, () => {
        state.timedOut = true;
        req.destroy();
      });
    }
    if (signal) {
      const onAbort = () => {
        state.aborted = true;
        req.destroy();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      state.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    req.on("error", () => {});
    try {
      return await new Promise((resolve, reject) => {
        let answered = false;
        req.once("upgrade", (res, socket, head) => {
          answered = true;
          // The handshake's bounds were for the handshake: the command has
          // no timeout, and an abort now would cut it.
          socket.setTimeout(0);
          socket.removeAllListeners("timeout");
          if (state.unlisten) state.unlisten();
          const requestId = typeof res.headers["x-request-id"] === "string" ? res.headers["x-request-id"] : null;
          if (String(res.headers.upgrade || "").toLowerCase() !== protocol.toLowerCase()) {
            socket.destroy();
            reject(new ProtocolError(`sandboxd upgraded the connection to ${JSON.stringify(res.headers.upgrade)}, not ${protocol}`));
            return;
          }
          resolve({ socket, head, requestId });
        });
        req.once("response", (res) => {
          answered = true;
          res.on("error", () => {});
          const ans = new Answer(req, res, state);
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            ans.close();
            reject(new ProtocolError(`sandboxd answered ${status}, not 101 Switching Protocols: is it older than ${protocol}?`, { status }));
            return;
          }
          failure(ans, res).then(reject, reject).finally(() => ans.close());
        });
        req.once("error", (err) => reject(state.map(err, answered)));
        req.once("close", () => {
          if (!answered) reject(state.map(new Error("the connection closed before an answer"), false));
        });
        req.end(data);
      });
    } catch (err) {
      if (state.unlisten) state.unlisten();
      req.destroy();
      throw err;
    }
  }
}

/**
 * The error of a non-2xx answer, from its body {"error": {"code", "message"}}.
 * @param {Answer} ans
 * @param {http.IncomingMessage} res
 */
async function failure(ans, res) {
  return errorOf(ans.status, res.statusMessage || "", await ans.read(MAX_ERROR_BODY), ans.requestId, ans.header("retry-after"));
}

/**
 * The error of a failed answer from its body, {"error": {"code",
 * "message"}}; a body that is not that is the message as it is.
 * @param {number} status
 * @param {string} statusMessage
 * @param {Buffer} raw
 * @param {string | null} requestId
 * @param {string | null | undefined} retryAfterHeader
 */
export function errorOf(status, statusMessage, raw, requestId, retryAfterHeader) {
  let code = "";
  let message = "";
  const text = raw.toString("utf8").trim();
  try {
    const detail = JSON.parse(text).error;
    if (detail && typeof detail === "object") {
      code = String(detail.code || "");
      message = String(detail.message || "");
    }
  } catch {
    message = text;
  }
  if (!message) message = text || `sandboxd answered HTTP ${status} ${statusMessage}`.trim();
  return errorFromAnswer(status, code, message, { requestId, retryAfter: retryAfter(retryAfterHeader) });
}
