"""Undo and checkpoints against the fake daemon: what a create with
checkpoints sends and how the session reads back, what undo sends (steps, 1
by default) and answers, bad steps refused before the daemon is asked, the
daemon's refusals as errors; a volume's sharing replaced; sync and asyncio."""

from __future__ import annotations

import asyncio
from typing import Any

from sandboxd import AsyncSandbox, Client, Conflict, InvalidArgument, NotFound, Sandbox, Volume
from test_unit import SESSION, FakeTestCase, Reply, Seen, error

UNDO_PATH = f"/v1/sessions/{SESSION['id']}/undo"
VOL = {"name": "data", "size_mb": 32, "used_mb": 1, "owner_uid": 1000, "created_at": "2026-01-02T03:04:05Z", "shared_with": [1001]}


def route(s: Seen) -> Reply:
    if s.path == "/v1/sessions" and s.method == "POST":
        b = s.json()
        return Reply(201, {**SESSION, **({"checkpoints": b["checkpoints"]} if "checkpoints" in b else {})})
    if s.path == UNDO_PATH:
        steps = (s.json() if s.body else {}).get("steps", 1)
        if steps > 3:
            return error(409, "conflict", f"session keeps 3 checkpoints: it cannot go back {steps} executions")
        return Reply(200, {"undone": steps})
    if s.path == "/v1/sessions/plain/undo":
        return error(409, "conflict", "session plain keeps no checkpoints")
    if s.path == "/v1/sessions/odd/undo":
        return error(400, "invalid_argument", "steps 17: undo goes back 1 to 16 executions")
    if s.path == "/v1/volumes/data" and s.method == "PATCH":
        b = s.json()
        if 1002 in b["shared_with"]:
            return error(409, "conflict", "user 1001 has session s9 mounting it")
        return Reply(200, {**VOL, "shared_with": b["shared_with"] or None})
    if s.path == "/v1/volumes/gone":
        return error(404, "not_found", "no such volume gone")
    if s.path.startswith("/v1/sessions/") and s.method == "GET":
        return Reply(200, SESSION)
    return Reply(204)


class TestUndoCalls(FakeTestCase):
    def test_create_with_checkpoints(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        s = c.create_session(checkpoints=3)
        self.assertEqual(d.seen[-1].json(), {"checkpoints": 3})
        self.assertEqual(s.checkpoints, 3)
        c.create_session(checkpoints=2.0)
        self.assertEqual(d.seen[-1].body, b'{"checkpoints": 2}', "a whole float goes as an int")
        self.assertEqual(c.create_session().checkpoints, 0, "absent: none")
        self.assertEqual(d.seen[-1].json(), {})

    def test_undo(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        self.assertEqual(c.undo(SESSION["id"]), 1)
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", UNDO_PATH, {"steps": 1}))
        self.assertEqual(c.undo(SESSION["id"], steps=3), 3)
        self.assertEqual(d.seen[-1].json(), {"steps": 3})
        self.assertEqual(c.undo(SESSION["id"], steps=2.0), 2)  # type: ignore[arg-type]
        self.assertEqual(d.seen[-1].body, b'{"steps": 2}', "a whole float goes as an int")
        cases: list[tuple[str, Any, type[Exception]]] = [
            ("more than kept", dict(id=SESSION["id"], steps=5), Conflict),
            ("no checkpoints", dict(id="plain"), Conflict),
            ("the daemon's bound", dict(id="odd", steps=16), InvalidArgument),
        ]
        for name, kw, exc in cases:
            with self.subTest(name), self.assertRaises(exc):
                c.undo(**kw)

        n = len(d.seen)
        for bad in (0, 17, -1, True, "2", 1.5, None):
            with self.subTest(steps=bad), self.assertRaises(ValueError):
                c.undo(SESSION["id"], steps=bad)  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")

    def test_update_volume(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        v = c.update_volume("data", shared_with=[1001, 1003])
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("PATCH", "/v1/volumes/data", {"shared_with": [1001, 1003]}))
        self.assertEqual(v.shared_with, [1001, 1003])
        v = c.update_volume(Volume.from_json(VOL), shared_with=[])
        self.assertEqual(d.seen[-1].body, b'{"shared_with": []}', "[]: shared with no one, sent as such")
        self.assertEqual(v.shared_with, [])
        c.update_volume("data", shared_with=(u for u in [1001]))
        self.assertEqual(d.seen[-1].json(), {"shared_with": [1001]}, "any iterable of uids")
        with self.assertRaises(Conflict):
            c.update_volume("data", shared_with=[1002])
        with self.assertRaises(NotFound):
            c.update_volume("gone", shared_with=[])

        n = len(d.seen)
        cases: list[tuple[str, Any, Any, type[Exception]]] = [
            ("no name", "", [1], ValueError),
            ("a uid alone", "data", 1001, TypeError),
            ("a string", "data", "1001", TypeError),
            ("a negative uid", "data", [-1], ValueError),
            ("a bool", "data", [True], ValueError),
        ]
        for name, vol, uids, exc in cases:
            with self.subTest(name), self.assertRaises(exc):
                c.update_volume(vol, shared_with=uids)
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")


class TestSandboxUndo(FakeTestCase):
    def test_sandbox(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket, checkpoints=3)
        self.assertEqual(d.seen[-1].json(), {"checkpoints": 3})
        self.assertEqual(sbx.session.checkpoints, 3)
        self.assertEqual(sbx.undo(), 1)
        self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (UNDO_PATH, {"steps": 1}))
        self.assertEqual(sbx.undo(2), 2)
        self.assertEqual(d.seen[-1].json(), {"steps": 2})
        with self.assertRaises(Conflict):
            sbx.undo(4)

    def test_async(self) -> None:
        d = self.serve(route)

        async def main() -> None:
            sbx = await AsyncSandbox.create(socket=d.socket, checkpoints=2)
            self.assertEqual(d.seen[-1].json(), {"checkpoints": 2})
            self.assertEqual(await sbx.undo(), 1)
            self.assertEqual(await sbx.undo(steps=2), 2)
            self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (UNDO_PATH, {"steps": 2}))

        asyncio.run(main())
