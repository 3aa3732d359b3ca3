"""Volumes against the fake daemon: what create, list, get and delete send
and how their answers read, the mounts a session's create sends (from
VolumeMounts and dicts) and reads back, and bad mounts refused before the
daemon is asked; sync and asyncio."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

from sandboxd import AsyncSandbox, Client, Conflict, NotFound, Sandbox, Volume, VolumeMount
from test_unit import SESSION, FakeTestCase, Reply, Seen, error

VOL = {"name": "data", "size_mb": 32, "used_mb": 1, "owner_uid": 1000, "created_at": "2026-01-02T03:04:05Z", "mounted_by": ["s1"]}


def route(s: Seen) -> Reply:
    if s.path == "/v1/sessions":
        return Reply(201, {**SESSION, "volumes": s.json().get("volumes") or []})
    if s.path == "/v1/volumes" and s.method == "POST":
        b = s.json()
        if b["name"] == "taken":
            return error(409, "conflict", "volume taken exists")
        return Reply(201, {**VOL, **b, "mounted_by": []})
    if s.path == "/v1/volumes":
        return Reply(200, {"volumes": [VOL, {**VOL, "name": "other", "mounted_by": None}]})
    if s.path == "/v1/volumes/gone":
        return error(404, "not_found", "no such volume gone")
    if s.path == "/v1/volumes/data" and s.method == "DELETE":
        return error(409, "conflict", "volume data is mounted by s1")
    if s.path.startswith("/v1/volumes/") and s.method == "GET":
        return Reply(200, VOL)
    return Reply(204)


class TestVolumeCalls(FakeTestCase):
    def test_calls(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        v = c.create_volume("scratch", 32)
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", "/v1/volumes", {"name": "scratch", "size_mb": 32}))
        self.assertEqual(v, Volume("scratch", 32, 1, 1000, datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), []))
        c.create_volume("f", 32.0)  # type: ignore[arg-type]
        self.assertEqual(d.seen[-1].body, b'{"name": "f", "size_mb": 32}', "a whole float goes as an int")
        with self.assertRaises(Conflict):
            c.create_volume("taken", 32)

        self.assertEqual([(x.name, x.mounted_by) for x in c.volumes()], [("data", ["s1"]), ("other", [])])
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", "/v1/volumes"))
        self.assertEqual(c.volume("data"), Volume.from_json(VOL))
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", "/v1/volumes/data"))
        with self.assertRaises(NotFound):
            c.volume("gone")

        c.delete_volume(v)
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("DELETE", "/v1/volumes/scratch"))
        with self.assertRaises(Conflict):
            c.delete_volume("data")
        # Root's {uid}/{name} stays one segment.
        c.volume("1000/data")
        self.assertEqual(d.seen[-1].path, "/v1/volumes/1000%2Fdata")

        n = len(d.seen)
        for bad in ("", None):
            with self.subTest(name=bad), self.assertRaises(ValueError):
                c.delete_volume(bad)  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")


class TestMounts(FakeTestCase):
    def test_session_mounts(self) -> None:
        # What Sandbox(volumes=...) sends: the wire's objects, read_only only when set.
        cases: list[tuple[str, Any, list[dict[str, Any]]]] = [
            ("dicts", [{"name": "data", "path": "/data"}, {"name": "data", "path": "/ro", "read_only": True}],
             [{"name": "data", "path": "/data"}, {"name": "data", "path": "/ro", "read_only": True}]),
            ("VolumeMounts", [VolumeMount("data", "/data"), VolumeMount("data", "/ro", read_only=True)],
             [{"name": "data", "path": "/data"}, {"name": "data", "path": "/ro", "read_only": True}]),
            ("one mount alone", VolumeMount("data", "/mnt/v"), [{"name": "data", "path": "/mnt/v"}]),
            ("read_only false", [{"name": "data", "path": "/d", "read_only": False}], [{"name": "data", "path": "/d"}]),
        ]
        d = self.serve(route)
        for name, volumes, want in cases:
            with self.subTest(name):
                sbx = Sandbox(socket=d.socket, volumes=volumes)
                self.assertEqual(d.seen[-1].json()["volumes"], want)
                got = [VolumeMount(w["name"], w["path"], w.get("read_only", False)) for w in want]
                self.assertEqual(sbx.session.volumes, got)

    def test_without_volumes(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        self.assertNotIn("volumes", d.seen[-1].json())
        self.assertEqual(sbx.session.volumes, [])

    def test_bad_mounts(self) -> None:
        d = self.serve(route)
        cases: list[tuple[str, Any]] = [
            ("a typo", [{"name": "data", "path": "/d", "readonly": True}]),
            ("a string", ["data:/d"]),
        ]
        for name, volumes in cases:
            with self.subTest(name), self.assertRaises(TypeError):
                Sandbox(socket=d.socket, volumes=volumes)
        self.assertEqual(d.seen, [], "a bad mount reached the daemon")

    def test_client_and_async(self) -> None:
        d = self.serve(route)
        s = Client(d.socket).create_session(volumes=[VolumeMount("data", "/data")])
        self.assertEqual(s.volumes, [VolumeMount("data", "/data")])

        async def main() -> None:
            sbx = await AsyncSandbox.create(socket=d.socket, volumes=[{"name": "data", "path": "/mnt/v", "read_only": True}])
            self.assertEqual(d.seen[-1].json()["volumes"], [{"name": "data", "path": "/mnt/v", "read_only": True}])
            self.assertEqual(sbx.session.volumes, [VolumeMount("data", "/mnt/v", True)])

        asyncio.run(main())
