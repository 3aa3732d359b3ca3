"""Session calls of the API: create, list, get, delete, lifecycle, update, network, stats."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ._api_volumes import volume_mounts
from ._transport import Caller, api_path
from .models import Session, Snapshot, Stats

# The fields of POST /v1/sessions (api.CreateSessionRequest), which POST
# /v1/run takes too. The daemon refuses unknown fields, so only these go.
SESSION_FIELDS = (
    "template",
    "runtime",
    "memory_mb",
    "cpus",
    "pids",
    "disk_mb",
    "timeout_s",
    "idle_timeout_s",
    "network",
    "allow",
    "egress_kbps",
    "max_connections",
    "env",
    "labels",
    "mcp_servers",
    "idle_action",
    "name",
    "deadline_s",
    "volumes",
    "snapshot",
    "checkpoints",
)

IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
"""The header that makes a create idempotent (docs/API.md, POST /v1/sessions)."""

# Fields the daemon reads as whole numbers: 2.0 from Python must go as 2,
# which Go's decoder takes for an int (it refuses "2.0").
_INT_FIELDS = {"memory_mb", "pids", "disk_mb", "timeout_s", "idle_timeout_s", "egress_kbps", "max_connections", "deadline_s", "checkpoints"}


def session_request(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of a create from keyword arguments: None means absent
    (the daemon's default), as the Go client's nil pointers do."""
    unknown = set(fields) - set(SESSION_FIELDS)
    if unknown:
        raise TypeError(f"unknown session field(s): {', '.join(sorted(unknown))}; known: {', '.join(SESSION_FIELDS)}")
    body: dict[str, Any] = {}
    for k in SESSION_FIELDS:
        v: Any = fields.get(k)
        if v is None:
            continue
        if k in ("env", "labels"):
            body[k] = {str(a): str(b) for a, b in v.items()}
        elif k == "volumes":
            body[k] = volume_mounts(v)
        elif k == "snapshot":
            body[k] = v.id if isinstance(v, Snapshot) else v
        elif k in ("allow", "mcp_servers"):
            body[k] = [v] if isinstance(v, str) else list(v)
        elif k in _INT_FIELDS and isinstance(v, float) and v.is_integer():
            body[k] = int(v)
        else:
            body[k] = v
    return body


def label_query(label: str | Iterable[str] | None, labels: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The label filters of a list: "k=v" strings and a dict, all of which must match."""
    q: list[tuple[str, str]] = []
    if isinstance(label, str):
        label = [label]
    for item in label or ():
        if "=" not in item:
            raise ValueError(f"label filter {item!r} is not key=value")
        q.append(("label", item))
    for k, v in (labels or {}).items():
        q.append(("label", f"{k}={v}"))
    return q


class SessionCalls(Caller):
    """The session endpoints; mixed into Client."""

    def create_session(self, *, idempotency_key: str | None = None, request_timeout: float | None = None, **fields: Any) -> Session:
        """POST /v1/sessions: a session ready to execute. ``fields`` are
        those of the create request (template, memory_mb, labels, ...).

        With ``idempotency_key`` (1 to 255 printable ASCII characters, a
        UUID say) a repeat of the create with the same key and fields
        within 24 hours answers the session the first made instead of
        making another, so a create whose answer was lost (RequestTimeout,
        Unavailable) can be sent again safely; the same key with other
        fields is Conflict. create_session_once also tells which it was."""
        return self._create(fields, idempotency_key, request_timeout)[0]

    def create_session_once(self, idempotency_key: str, *, request_timeout: float | None = None, **fields: Any) -> tuple[Session, bool]:
        """create_session under an Idempotency-Key, and whether this call
        made the session (201) or an earlier one with the key had (200)."""
        return self._create(fields, idempotency_key, request_timeout)

    def _create(self, fields: Mapping[str, Any], key: str | None, request_timeout: float | None) -> tuple[Session, bool]:
        body = session_request(fields)
        headers: dict[str, str] = {}
        if key is not None:
            # An empty key would be no key (the daemon ignores it): a
            # caller's bug that would make a second session on a retry.
            if not isinstance(key, str) or not key:
                raise ValueError(f"idempotency_key must be a non-empty string, not {key!r}")
            headers[IDEMPOTENCY_KEY_HEADER] = key
        with self._t.send("POST", "/v1/sessions", json_body=body, headers=headers, timeout=self._timeout(request_timeout)) as a:
            return Session.from_json(a.json()), a.status == 201

    def list_sessions(
        self,
        label: str | Iterable[str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        request_timeout: float | None = None,
    ) -> list[Session]:
        """GET /v1/sessions: the caller's sessions (root: all) carrying
        every label given, oldest first."""
        q = label_query(label, labels)
        with self._t.send("GET", "/v1/sessions", query=q, timeout=self._timeout(request_timeout)) as a:
            return [Session.from_json(s) for s in (a.json() or {}).get("sessions") or []]

    def get_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        with self._t.send("GET", api_path("v1", "sessions", id), timeout=self._timeout(request_timeout)) as a:
            return Session.from_json(a.json())

    def delete_session(self, id: str, *, request_timeout: float | None = None) -> None:
        """DELETE /v1/sessions/{id}: its processes, workspace and history are gone."""
        with self._t.send("DELETE", api_path("v1", "sessions", id), timeout=self._timeout(request_timeout)) as a:
            a.read()

    def stop_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Stops the session's processes; its /workspace is kept."""
        return self._lifecycle(id, "stop", request_timeout)

    def start_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Starts a stopped session with a fresh interpreter (no-op if running)."""
        return self._lifecycle(id, "start", request_timeout)

    def restart_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Replaces the session's interpreter with a fresh one, same /workspace."""
        return self._lifecycle(id, "restart", request_timeout)

    def pause_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Freezes every process of the session: memory and interpreter state
        stay, CPU use stops (no-op if paused; Conflict while it executes).
        An exec, a file call or stats resumes it first."""
        return self._lifecycle(id, "pause", request_timeout)

    def resume_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Lets a paused session run on where it stopped, and wakes a
        hibernated one (no-op if running; Conflict if stopped)."""
        return self._lifecycle(id, "resume", request_timeout)

    def hibernate_session(self, id: str, *, request_timeout: float | None = None) -> Session:
        """Saves the session's memory to disk and ends its sandbox (runsc;
        Conflict for runc): RAM and CPU freed, status "hibernated". An
        exec, a file call, start or resume wakes it where it was."""
        return self._lifecycle(id, "hibernate", request_timeout)

    def _lifecycle(self, id: str, op: str, request_timeout: float | None) -> Session:
        with self._t.send("POST", api_path("v1", "sessions", id, op), timeout=self._timeout(request_timeout)) as a:
            return Session.from_json(a.json())

    def update_session(self, id: str, *, deadline_s: int | None = None, request_timeout: float | None = None) -> Session:
        """PATCH /v1/sessions/{id}: the settings that change while the
        session lives. ``deadline_s`` sets its deadline that many seconds
        from now, earlier or later than before (the session is stopped
        then, whatever it does); 0 removes it."""
        body: dict[str, Any] = {}
        if deadline_s is not None:
            if isinstance(deadline_s, float) and deadline_s.is_integer():
                deadline_s = int(deadline_s)
            body["deadline_s"] = deadline_s
        with self._t.send("PATCH", api_path("v1", "sessions", id), json_body=body, timeout=self._timeout(request_timeout)) as a:
            return Session.from_json(a.json())

    def set_network(
        self,
        id: str,
        network: str,
        *,
        allow: Iterable[str] | None = None,
        egress_kbps: int | None = None,
        max_connections: int | None = None,
        request_timeout: float | None = None,
    ) -> Session:
        """PATCH /v1/sessions/{id}/network: the policy changes at once;
        connections to what it no longer allows are cut."""
        body: dict[str, Any] = {"network": network}
        if allow is not None:
            body["allow"] = [allow] if isinstance(allow, str) else list(allow)
        if egress_kbps is not None:
            body["egress_kbps"] = egress_kbps
        if max_connections is not None:
            body["max_connections"] = max_connections
        with self._t.send("PATCH", api_path("v1", "sessions", id, "network"), json_body=body, timeout=self._timeout(request_timeout)) as a:
            return Session.from_json(a.json())

    def stats(self, id: str, *, request_timeout: float | None = None) -> Stats:
        """GET /v1/sessions/{id}/stats: what the session uses now."""
        with self._t.send("GET", api_path("v1", "sessions", id, "stats"), timeout=self._timeout(request_timeout)) as a:
            return Stats.from_json(a.json())
