// Errors of the sandboxd API, one class per error code of the contract.
//
// The daemon answers every failure with {"error": {"code", "message"}}; the
// SDK throws the class of that code, so callers test `err instanceof
// NotFound` the way Go callers test errdefs.IsNotFound(err). An execution
// that fails, times out or is killed is not an error: it is an Execution
// whose `status` says so. (The Python SDK's errors.py, class for class.)

/**
 * A call to sandboxd failed.
 *
 * `code` is the contract's error code ("not_found", ...), `message` the
 * daemon's sentence saying what was wrong and what to do, `status` the HTTP
 * status (null when no answer came), `requestId` the id the daemon logged
 * the request under (to find it in the daemon's log), and `retryAfter` the
 * seconds a 429 asked to wait.
 */
export class SandboxdError extends Error {
  /** The code of the class when the daemon named none. */
  static code = "";

  /**
   * @param {string} message
   * @param {{code?: string, status?: number | null, requestId?: string | null,
   *          retryAfter?: number | null, cause?: unknown}} [opts]
   */
  constructor(message, opts = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    /** @type {string} */
    this.code = opts.code || /** @type {typeof SandboxdError} */ (new.target).code;
    this.message = message;
    /** @type {number | null} */
    this.status = opts.status ?? null;
    /** @type {string | null} */
    this.requestId = opts.requestId ?? null;
    /** @type {number | null} */
    this.retryAfter = opts.retryAfter ?? null;
  }
}

/** 400: bad JSON, an unknown field, a value out of range, a bad path. */
export class InvalidArgument extends SandboxdError {
  static code = "invalid_argument";
}

/** 404: no such session, template, file or endpoint (or not the caller's). */
export class NotFound extends SandboxdError {
  static code = "not_found";
}

/** 409: the session's state does not allow it (exec on a stopped session). */
export class Conflict extends SandboxdError {
  static code = "conflict";
}

/** 403: the caller may see it but not do this. */
export class PermissionDenied extends SandboxdError {
  static code = "permission_denied";
}

/** 413: a body over its limit. */
export class PayloadTooLarge extends SandboxdError {
  static code = "payload_too_large";
}

/** 429: too many sessions or executions, or a disk quota; see retryAfter. */
export class ResourceExhausted extends SandboxdError {
  static code = "resource_exhausted";
}

/** 500: a bug in the daemon; requestId finds it in the daemon's log. */
export class Internal extends SandboxdError {
  static code = "internal";
}

/** 503, or the daemon could not be reached at all (status is then null). */
export class Unavailable extends SandboxdError {
  static code = "unavailable";
}

/** 502: a port proxy found nothing listening inside the sandbox. */
export class BadGateway extends SandboxdError {
  static code = "bad_gateway";
}

/**
 * The daemon sent nothing for the call's requestTimeoutMs. Client-side, so
 * no HTTP status. An execution that hits its own timeoutS is not this: it
 * answers with `status === "timeout"`.
 */
export class RequestTimeout extends SandboxdError {
  static code = "deadline_exceeded";
}

/** The daemon's answer was not what the contract says (a bad line, a cut stream). */
export class ProtocolError extends SandboxdError {
  static code = "protocol";
}

// The classes of the contract's codes, in the order of api/errors.go: when a
// code is unknown (a newer daemon), the HTTP status picks the class.
/** @type {ReadonlyArray<[string, number, typeof SandboxdError]>} */
const CLASSES = [
  ["invalid_argument", 400, InvalidArgument],
  ["not_found", 404, NotFound],
  ["conflict", 409, Conflict],
  ["failed_precondition", 409, Conflict],
  ["permission_denied", 403, PermissionDenied],
  ["payload_too_large", 413, PayloadTooLarge],
  ["resource_exhausted", 429, ResourceExhausted],
  ["unavailable", 503, Unavailable],
  ["bad_gateway", 502, BadGateway],
  ["internal", 500, Internal],
];

/**
 * The error of a failed answer: by its code, else by its status. It keeps
 * the code the daemon sent, even one this SDK does not know, so `err.code`
 * is always what the wire said.
 *
 * @param {number | null} status
 * @param {string} code
 * @param {string} message
 * @param {{requestId?: string | null, retryAfter?: number | null}} [opts]
 * @returns {SandboxdError}
 */
export function errorFromAnswer(status, code, message, opts = {}) {
  let cls = SandboxdError;
  const byCode = CLASSES.find(([c]) => c === code);
  if (byCode) {
    cls = byCode[2];
  } else {
    const byStatus = CLASSES.find(([, s]) => s === status);
    if (byStatus) cls = byStatus[2];
  }
  if (!message) message = status ? `sandboxd answered HTTP ${status}` : "sandboxd failed";
  return new cls(message, { code: code || cls.code, status, requestId: opts.requestId, retryAfter: opts.retryAfter });
}
