"""Snapshot calls of the API: snapshot a session, list, get, delete; make
sessions from a snapshot, several at once; fork a running session.

A snapshot is a session's /workspace files and settings kept beyond it
(docs/API.md, Snapshots); sessions are made from it as often as wanted.
Today it holds files only (``Snapshot.memory`` False): the first execution
of a session made from it answers ``state_reset``.
"""

from __future__ import annotations

from typing import Any

from ._api_sessions import session_request
from ._transport import Caller, api_path
from .models import Session, Snapshot

MAX_COUNT = 100
"""The most sessions one create from a snapshot, or one fork, makes (api.MaxCount)."""


def snapshot_ref(v: str | Snapshot) -> str:
    """The id or name the wire takes, from either or a Snapshot; an empty
    one would name the list, not a snapshot."""
    ref = v.id if isinstance(v, Snapshot) else v
    if not isinstance(ref, str) or not ref:
        raise ValueError(f"a snapshot id or name is required, not {ref!r}")
    return ref


def check_count(count: int) -> int:
    """count as the wire takes it: a whole number from 1 to MAX_COUNT (a
    whole float goes as an int, which Go's decoder takes)."""
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count is a whole number from 1 to {MAX_COUNT}, not {count!r}")
    return count


def _sessions(d: Any) -> list[Session]:
    return [Session.from_json(s) for s in (d or {}).get("sessions") or [] if isinstance(s, dict)]


class SnapshotCalls(Caller):
    """The snapshot and fork endpoints; mixed into Client."""

    def create_snapshot(self, id: str, *, name: str | None = None, request_timeout: float | None = None) -> Snapshot:
        """POST /v1/sessions/{id}/snapshots: the session's files and
        settings kept as a snapshot, ``name`` the caller's name for it
        (unique among theirs: Conflict otherwise). The session is frozen
        only while its files are read, and runs on."""
        body: dict[str, Any] = {"name": name} if name else {}
        with self._t.send("POST", api_path("v1", "sessions", id, "snapshots"), json_body=body, timeout=self._timeout(request_timeout)) as a:
            return Snapshot.from_json(a.json())

    def snapshots(self, *, request_timeout: float | None = None) -> list[Snapshot]:
        """GET /v1/snapshots: the caller's snapshots (root: everyone's)."""
        with self._t.send("GET", "/v1/snapshots", timeout=self._timeout(request_timeout)) as a:
            return [Snapshot.from_json(s) for s in (a.json() or {}).get("snapshots") or [] if isinstance(s, dict)]

    def snapshot(self, ref: str | Snapshot, *, request_timeout: float | None = None) -> Snapshot:
        """GET /v1/snapshots/{ref}: one snapshot, by its id or the caller's
        name for it; NotFound for another user's."""
        with self._t.send("GET", api_path("v1", "snapshots", snapshot_ref(ref)), timeout=self._timeout(request_timeout)) as a:
            return Snapshot.from_json(a.json())

    def delete_snapshot(self, ref: str | Snapshot, *, request_timeout: float | None = None) -> None:
        """DELETE /v1/snapshots/{ref}: the snapshot and its files are gone;
        sessions made from it live on."""
        with self._t.send("DELETE", api_path("v1", "snapshots", snapshot_ref(ref)), timeout=self._timeout(request_timeout)) as a:
            a.read()

    def create_sessions(
        self, snapshot: str | Snapshot, count: int = 1, *, request_timeout: float | None = None, **fields: Any
    ) -> list[Session]:
        """POST /v1/sessions with a snapshot and a count: ``count`` sessions
        (1 to MAX_COUNT) made from the snapshot, all of them or none.
        ``fields`` may be name (only with count 1), labels (added to the
        snapshot's), env (over the snapshot's), idle_action, deadline_s and
        volumes: the rest is the snapshot's (InvalidArgument otherwise).
        create_session(snapshot=...) makes one and answers it alone."""
        body = session_request({**fields, "snapshot": snapshot_ref(snapshot)})
        body["count"] = check_count(count)
        with self._t.send("POST", "/v1/sessions", json_body=body, timeout=self._timeout(request_timeout)) as a:
            return _sessions(a.json())

    def fork_session(self, id: str, *, count: int = 1, request_timeout: float | None = None) -> list[Session]:
        """POST /v1/sessions/{id}/fork: ``count`` new sessions (1 to
        MAX_COUNT) that start where session id is now: its files, settings
        and volumes. The source is frozen only while its files are read, and
        runs on; the snapshot in between is nobody's."""
        body = {"count": check_count(count)}
        with self._t.send("POST", api_path("v1", "sessions", id, "fork"), json_body=body, timeout=self._timeout(request_timeout)) as a:
            return _sessions(a.json())
