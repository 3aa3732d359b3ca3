"""Undo of the API: take a session back over its last executions.

A session made with ``checkpoints=K`` (1 to 16) keeps the state before each
of its last K executions (docs/API.md, Undo): the interpreter each ran in,
parked by the agent, and /workspace's files. Undo puts them back; what went
over the network, /tmp and other processes stay as they are.
"""

from __future__ import annotations

from ._transport import Caller, api_path

MAX_CHECKPOINTS = 16
"""The most executions a session keeps for undo, and the most one undo goes back."""


def check_steps(steps: int) -> int:
    """steps as the wire takes it: a whole number from 1 to MAX_CHECKPOINTS
    (a whole float goes as an int, which Go's decoder takes)."""
    if isinstance(steps, float) and steps.is_integer():
        steps = int(steps)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_CHECKPOINTS:
        raise ValueError(f"steps is a whole number from 1 to {MAX_CHECKPOINTS}, not {steps!r}")
    return steps


class UndoCalls(Caller):
    """The undo endpoint; mixed into Client."""

    def undo(self, id: str, *, steps: int = 1, request_timeout: float | None = None) -> int:
        """POST /v1/sessions/{id}/undo: the session back over its last
        ``steps`` executions (1 to MAX_CHECKPOINTS), whatever their language
        or context; answers how many were undone. Conflict (the daemon's
        failed precondition) for a session made without checkpoints, or
        for more steps than it keeps."""
        body = {"steps": check_steps(steps)}
        with self._t.send("POST", api_path("v1", "sessions", id, "undo"), json_body=body, timeout=self._timeout(request_timeout)) as a:
            d = a.json() or {}
            n = d.get("undone")
            return n if isinstance(n, int) and not isinstance(n, bool) else 0
