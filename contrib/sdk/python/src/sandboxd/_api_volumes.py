"""Volume calls of the API: create, list, get, update (sharing), delete; and the mounts a
session's create takes.

A volume is a filesystem of its own size that outlives sessions and
daemon restarts (docs/API.md, Volumes); sessions mount it with
``volumes=[...]`` and several may at once, each seeing the others' files.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ._transport import Caller, api_path
from .models import Volume, VolumeMount

# The keys of a mount given as a dict (api.VolumeMount): the daemon refuses
# unknown fields, so a typo fails here, before a session is asked for.
_MOUNT_KEYS = ("name", "path", "read_only")


def volume_mounts(v: Iterable[VolumeMount | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``volumes`` of a create request from VolumeMounts or dicts of
    their keys; one mount alone (not in a list) is taken as a list of it."""
    if isinstance(v, (VolumeMount, Mapping)):
        v = [v]
    out: list[dict[str, Any]] = []
    for m in v:
        if isinstance(m, VolumeMount):
            out.append(m.to_json())
            continue
        if not isinstance(m, Mapping):
            raise TypeError(f"a volume mount is a VolumeMount or a dict of {', '.join(_MOUNT_KEYS)}, not {type(m).__name__}")
        unknown = set(m) - set(_MOUNT_KEYS)
        if unknown:
            raise TypeError(f"unknown volume mount key(s): {', '.join(sorted(unknown))}; known: {', '.join(_MOUNT_KEYS)}")
        out.append(VolumeMount(name=str(m.get("name") or ""), path=str(m.get("path") or ""), read_only=bool(m.get("read_only"))).to_json())
    return out


def volume_name(v: str | Volume) -> str:
    """The name the wire takes, from a name or a Volume; an empty one would
    name the list, not a volume."""
    name = v.name if isinstance(v, Volume) else v
    if not isinstance(name, str) or not name:
        raise ValueError(f"a volume name is required, not {name!r}")
    return name


class VolumeCalls(Caller):
    """The volume endpoints; mixed into Client."""

    def create_volume(
        self, name: str, size_mb: int, *, shared_with: list[int] | None = None, request_timeout: float | None = None
    ) -> Volume:
        """POST /v1/volumes: a volume of ``size_mb`` (at least 16; writes
        past it fail with ENOSPC inside); ``shared_with`` users' sessions
        may mount it too (as "{owner_uid}/{name}"). Conflict for a name the
        caller has; ResourceExhausted when the data dir or the caller's disk
        share cannot hold it."""
        if isinstance(size_mb, float) and size_mb.is_integer():
            # Go's decoder refuses 32.0 for an int.
            size_mb = int(size_mb)
        body: dict[str, Any] = {"name": volume_name(name), "size_mb": size_mb}
        if shared_with:
            body["shared_with"] = [int(u) for u in shared_with]
        with self._t.send("POST", "/v1/volumes", json_body=body, timeout=self._timeout(request_timeout)) as a:
            return Volume.from_json(a.json())

    def volumes(self, *, request_timeout: float | None = None) -> list[Volume]:
        """GET /v1/volumes: the caller's volumes (root: everyone's)."""
        with self._t.send("GET", "/v1/volumes", timeout=self._timeout(request_timeout)) as a:
            return [Volume.from_json(v) for v in (a.json() or {}).get("volumes") or [] if isinstance(v, dict)]

    def volume(self, name: str | Volume, *, request_timeout: float | None = None) -> Volume:
        """GET /v1/volumes/{name}: one volume, its use and the sessions that
        mount it; NotFound for another user's. Root names another user's
        as "{uid}/{name}"."""
        with self._t.send("GET", api_path("v1", "volumes", volume_name(name)), timeout=self._timeout(request_timeout)) as a:
            return Volume.from_json(a.json())

    def update_volume(self, name: str | Volume, *, shared_with: Iterable[int], request_timeout: float | None = None) -> Volume:
        """PATCH /v1/volumes/{name}: ``shared_with`` replaces the users the
        volume is shared with (empty: no one); the owner or root only.
        Conflict while a user left out has a session that mounts it: that
        user deletes those sessions first."""
        if isinstance(shared_with, (str, bytes, int)):
            raise TypeError(f"shared_with is a list of uids, not {type(shared_with).__name__}")
        uids: list[int] = []
        for u in shared_with:
            if isinstance(u, bool) or not isinstance(u, int) or u < 0:
                raise ValueError(f"a uid is a whole number, not {u!r}")
            uids.append(u)
        body = {"shared_with": uids}
        with self._t.send("PATCH", api_path("v1", "volumes", volume_name(name)), json_body=body, timeout=self._timeout(request_timeout)) as a:
            return Volume.from_json(a.json())

    def delete_volume(self, name: str | Volume, *, request_timeout: float | None = None) -> None:
        """DELETE /v1/volumes/{name}: the volume and its files are gone.
        Conflict while any session's record names it, running or stopped:
        delete those sessions first."""
        with self._t.send("DELETE", api_path("v1", "volumes", volume_name(name)), timeout=self._timeout(request_timeout)) as a:
            a.read()
