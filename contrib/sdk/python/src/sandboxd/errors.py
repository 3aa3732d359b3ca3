"""Errors of the sandboxd API, one class per error code of the contract.

The daemon answers every failure with ``{"error": {"code", "message"}}``;
the SDK raises the class of that code, so callers catch ``NotFound`` the way
Go callers test ``errdefs.IsNotFound(err)``. An execution that fails, times
out or is killed is not an error: it is an ``Execution`` whose ``status``
says so.
"""

from __future__ import annotations

__all__ = [
    "SandboxdError",
    "InvalidArgument",
    "NotFound",
    "Conflict",
    "PermissionDenied",
    "PayloadTooLarge",
    "ResourceExhausted",
    "Internal",
    "Unavailable",
    "BadGateway",
    "RequestTimeout",
    "ProtocolError",
    "error_from_answer",
]


class SandboxdError(Exception):
    """A call to sandboxd failed.

    ``code`` is the contract's error code (``"not_found"``, ...), ``message``
    the daemon's sentence saying what was wrong and what to do, ``status``
    the HTTP status (``None`` when no answer came), ``request_id`` the id
    the daemon logged the request under (to find it in the daemon's log),
    and ``retry_after`` the seconds a 429 asked to wait.
    """

    code: str = ""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


# The classes below also derive from the built-in exception a Python caller
# would reach for first, so `except ValueError` keeps working for code that
# does not know the SDK's classes.


class InvalidArgument(SandboxdError, ValueError):
    """400: bad JSON, an unknown field, a value out of range, a bad path."""

    code = "invalid_argument"


class NotFound(SandboxdError, LookupError):
    """404: no such session, template, file or endpoint (or not the caller's)."""

    code = "not_found"


class Conflict(SandboxdError):
    """409: the session's state does not allow it (exec on a stopped session)."""

    code = "conflict"


class PermissionDenied(SandboxdError):
    """403: the caller may see it but not do this."""

    code = "permission_denied"


class PayloadTooLarge(SandboxdError):
    """413: a body over its limit."""

    code = "payload_too_large"


class ResourceExhausted(SandboxdError):
    """429: too many sessions or executions, or a disk quota; see retry_after."""

    code = "resource_exhausted"


class Internal(SandboxdError):
    """500: a bug in the daemon; request_id finds it in the daemon's log."""

    code = "internal"


class Unavailable(SandboxdError):
    """503, or the daemon could not be reached at all (status is then None)."""

    code = "unavailable"


class BadGateway(SandboxdError):
    """502: a port proxy found nothing listening inside the sandbox."""

    code = "bad_gateway"


class RequestTimeout(SandboxdError, TimeoutError):
    """The daemon sent nothing for the call's request_timeout.

    Client-side, so no HTTP status. An execution that hits its own
    ``timeout`` is not this: it answers with ``status == "timeout"``.
    """

    code = "deadline_exceeded"


class ProtocolError(SandboxdError):
    """The daemon's answer was not what the contract says (a bad line, a cut stream)."""

    code = "protocol"


# The classes of the contract's codes, in the order of api/errors.go: when a
# code is unknown (a newer daemon), the HTTP status picks the class.
_CLASSES: tuple[tuple[str, int, type[SandboxdError]], ...] = (
    ("invalid_argument", 400, InvalidArgument),
    ("not_found", 404, NotFound),
    ("conflict", 409, Conflict),
    ("failed_precondition", 409, Conflict),
    ("permission_denied", 403, PermissionDenied),
    ("payload_too_large", 413, PayloadTooLarge),
    ("resource_exhausted", 429, ResourceExhausted),
    ("unavailable", 503, Unavailable),
    ("bad_gateway", 502, BadGateway),
    ("internal", 500, Internal),
)


def error_from_answer(
    status: int | None,
    code: str,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
) -> SandboxdError:
    """The exception of a failed answer: by its code, else by its status.

    It keeps the code the daemon sent, even one this SDK does not know, so
    ``err.code`` is always what the wire said.
    """
    cls: type[SandboxdError] = SandboxdError
    for c, _, k in _CLASSES:
        if c == code:
            cls = k
            break
    else:
        for _, s, k in _CLASSES:
            if s == status:
                cls = k
                break
    if not message:
        message = f"sandboxd answered HTTP {status}" if status else "sandboxd failed"
    return cls(message, code=code or cls.code, status=status, request_id=request_id, retry_after=retry_after)
