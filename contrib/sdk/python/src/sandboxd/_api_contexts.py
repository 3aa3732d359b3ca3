"""Code context calls of the API: create, list, delete, restart.

A code context is an interpreter of its own in a session's sandbox
(docs/API.md, Code contexts); an execution names one with ``context``.
"""

from __future__ import annotations

from typing import Any

from ._transport import Caller, api_path
from .models import CodeContext


def context_request(language: str | None, cwd: str | None, from_: str | None) -> dict[str, Any]:
    """The body of POST …/contexts (api.CreateContextRequest); None fields
    stay absent so the daemon's defaults hold."""
    body: dict[str, Any] = {}
    if language:
        body["language"] = language
    if cwd:
        body["cwd"] = cwd
    if from_:
        body["from"] = from_
    return body


class ContextCalls(Caller):
    """The code context endpoints; mixed into Client."""

    def create_context(
        self,
        id: str,
        *,
        language: str | None = None,
        cwd: str | None = None,
        from_: str | None = None,
        request_timeout: float | None = None,
    ) -> CodeContext:
        """POST /v1/sessions/{id}/contexts: a new interpreter ("python", the
        default) or working folder ("shell") in the session, started in
        ``cwd`` (default /workspace); ``from_`` names a Python context whose
        interpreter the new one copies, globals and all. ResourceExhausted
        past 16 contexts."""
        with self._t.send(
            "POST",
            api_path("v1", "sessions", id, "contexts"),
            json_body=context_request(language, cwd, from_),
            timeout=self._timeout(request_timeout),
        ) as a:
            return CodeContext.from_json(a.json())

    def contexts(self, id: str, *, request_timeout: float | None = None) -> list[CodeContext]:
        """GET /v1/sessions/{id}/contexts: the session's contexts, "default" first."""
        with self._t.send("GET", api_path("v1", "sessions", id, "contexts"), timeout=self._timeout(request_timeout)) as a:
            return [CodeContext.from_json(c) for c in (a.json() or {}).get("contexts") or [] if isinstance(c, dict)]

    def delete_context(self, id: str, cid: str, *, request_timeout: float | None = None) -> None:
        """DELETE /v1/sessions/{id}/contexts/{cid}: stops its interpreter
        and forgets it; InvalidArgument for "default"."""
        with self._t.send("DELETE", api_path("v1", "sessions", id, "contexts", cid), timeout=self._timeout(request_timeout)) as a:
            a.read()

    def restart_context(self, id: str, cid: str, *, request_timeout: float | None = None) -> CodeContext:
        """POST /v1/sessions/{id}/contexts/{cid}/restart: starts its
        interpreter afresh (its variables are gone)."""
        with self._t.send("POST", api_path("v1", "sessions", id, "contexts", cid, "restart"), timeout=self._timeout(request_timeout)) as a:
            return CodeContext.from_json(a.json())
