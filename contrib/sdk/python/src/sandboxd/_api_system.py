"""System calls of the API: health, info, node, drain.

info and node answer dicts as the daemon sends them: they describe the host
and grow with every release, and the SDK has no use of its own for them.
"""

from __future__ import annotations

import json
from typing import Any

from ._transport import Caller, failure
from .models import Health

# The status an unhealthy daemon answers GET /v1/health with, the Health
# in its body.
_UNHEALTHY = 503


class SystemCalls(Caller):
    """The daemon-wide endpoints; mixed into Client."""

    def health(self, *, request_timeout: float | None = None) -> str:
        """GET /v1/health: "ok" ("degraded" from daemons before the checks,
        when the host was short of disk). An unhealthy daemon raises
        Unavailable saying why, as one that cannot be reached does:
        health_status() answers its reasons instead."""
        return str(self._get("/v1/health", request_timeout).get("status") or "")

    def health_status(self, *, request_timeout: float | None = None) -> Health:
        """GET /v1/health as a Health: ``ok``, or status "unhealthy" with its
        ``reasons`` and ``checks`` (the daemon's 503), without raising for
        it. A daemon that cannot be reached, or a 503 that is not a Health
        (a proxy's), still raises Unavailable."""
        with self._t.send("GET", "/v1/health", timeout=self._timeout(request_timeout), answers=(_UNHEALTHY,)) as a:
            if a.status != _UNHEALTHY:
                out = a.json()
                return Health.from_json(out if isinstance(out, dict) else {})
            raw = a.read()
            try:
                out = json.loads(raw)
            except ValueError:
                out = None
            if not isinstance(out, dict) or not isinstance(out.get("status"), str):
                raise failure(a.status, a.resp.reason, raw, a.request_id, a.resp.getheader("Retry-After"))
            return Health.from_json(out)

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
