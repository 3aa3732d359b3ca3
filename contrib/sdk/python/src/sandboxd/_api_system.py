"""System calls of the API: health, info, node, drain.

info and node answer dicts as the daemon sends them: they describe the host
and grow with every release, and the SDK has no use of its own for them.
"""

from __future__ import annotations

from typing import Any

from ._transport import Caller


class SystemCalls(Caller):
    """The daemon-wide endpoints; mixed into Client."""

    def health(self, *, request_timeout: float | None = None) -> str:
        """GET /v1/health: "ok", or "degraded" when the host is short of
        something (the daemon serves, but refuses what does not fit)."""
        return str(self._get("/v1/health", request_timeout).get("status") or "")

    def info(self, *, request_timeout: float | None = None) -> dict[str, Any]:
        """GET /v1/info: version, runtimes, limits' defaults and maxima, pools."""
        return self._get("/v1/info", request_timeout)

    def node(self, *, request_timeout: float | None = None) -> dict[str, Any]:
        """GET /v1/node: the daemon as a scheduler sees it."""
        return self._get("/v1/node", request_timeout)

    def drain(self, on: bool = True, *, request_timeout: float | None = None) -> dict[str, Any]:
        """POST /v1/node/drain (root only; PermissionDenied otherwise): while
        the node drains (``state`` "draining"), creates and one-shot runs
        answer Unavailable with retry_after, so that a scheduler places new
        work elsewhere, and the sessions here run on. ``on=False`` takes
        sessions again. Answers the node, as node() does; the state
        outlives a restart of the daemon."""
        with self._t.send("POST", "/v1/node/drain", json_body={"drain": bool(on)}, timeout=self._timeout(request_timeout)) as a:
            out = a.json()
            return out if isinstance(out, dict) else {}

    def _get(self, path: str, request_timeout: float | None) -> dict[str, Any]:
        with self._t.send("GET", path, timeout=self._timeout(request_timeout)) as a:
            out = a.json()
            return out if isinstance(out, dict) else {}
