"""Snapshots and fork against the fake daemon: what snapshotting a session,
list, get and delete send and how their answers read; sessions made from a
snapshot, one and several (a list); fork (a list); bad counts and names
refused before the daemon is asked; sync and asyncio."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

from sandboxd import AsyncSandbox, Client, Conflict, InvalidArgument, NotFound, Sandbox, Session, Snapshot
from test_unit import SESSION, FakeTestCase, Reply, Seen, error

SNAP = {
    "id": "9a8b7c6d5e4f3a21",
    "session_id": SESSION["id"],
    "name": "base",
    "owner_uid": 1000,
    "template": "python",
    "runtime": "runc",
    "memory": False,
    "size_mb": 3,
    "created_at": "2026-01-02T03:04:05Z",
}

FORK_PATH = f"/v1/sessions/{SESSION['id']}/fork"
SNAPSHOTS_PATH = f"/v1/sessions/{SESSION['id']}/snapshots"


def sessions(n: int) -> dict[str, Any]:
    return {"sessions": [{**SESSION, "id": f"s{i}"} for i in range(n)]}


def route(s: Seen) -> Reply:
    if s.path == "/v1/sessions" and s.method == "POST":
        b = s.json()
        if b.get("snapshot") == "gone":
            return error(404, "not_found", "no such snapshot gone")
        if "count" in b:
            return Reply(201, sessions(b["count"]))
        return Reply(201, SESSION)
    if s.path == SNAPSHOTS_PATH:
        b = s.json() if s.body else {}
        if b.get("name") == "taken":
            return error(409, "conflict", "snapshot taken exists")
        return Reply(201, {**SNAP, "name": b.get("name", "")})
    if s.path == FORK_PATH:
        return Reply(201, sessions(s.json().get("count", 1)))
    if s.path == "/v1/sessions/busy/fork":
        return error(400, "invalid_argument", "count 101: at most 100")
    if s.path == "/v1/snapshots":
        return Reply(200, {"snapshots": [SNAP, {**SNAP, "id": "other", "name": ""}]})
    if s.path == "/v1/snapshots/gone":
        return error(404, "not_found", "no such snapshot gone")
    if s.path.startswith("/v1/snapshots/") and s.method == "GET":
        return Reply(200, SNAP)
    if s.path.startswith("/v1/sessions/") and s.method == "GET":
        return Reply(200, SESSION)
    return Reply(204)


class TestSnapshotCalls(FakeTestCase):
    def test_snapshot_list_get_delete(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        snap = c.create_snapshot(SESSION["id"], name="base")
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", SNAPSHOTS_PATH, {"name": "base"}))
        want = Snapshot(SNAP["id"], SESSION["id"], "base", 1000, "python", "runc", False, 3, datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
        self.assertEqual(snap, want)
        c.create_snapshot(SESSION["id"])
        self.assertEqual(d.seen[-1].json(), {}, "no name: none sent")
        with self.assertRaises(Conflict):
            c.create_snapshot(SESSION["id"], name="taken")

        self.assertEqual([(x.id, x.name) for x in c.snapshots()], [(SNAP["id"], "base"), ("other", "")])
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", "/v1/snapshots"))
        self.assertEqual(c.snapshot("base"), want)
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", "/v1/snapshots/base"))
        with self.assertRaises(NotFound):
            c.snapshot("gone")

        c.delete_snapshot(snap)
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("DELETE", f"/v1/snapshots/{SNAP['id']}"))
        c.delete_snapshot("base")
        self.assertEqual(d.seen[-1].path, "/v1/snapshots/base")

        n = len(d.seen)
        for bad in ("", None):
            with self.subTest(ref=bad), self.assertRaises(ValueError):
                c.delete_snapshot(bad)  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")

    def test_create_from_snapshot(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        # One: create_session answers it alone, no count sent.
        s = c.create_session(snapshot="base", labels={"k": "v"})
        self.assertEqual(d.seen[-1].json(), {"snapshot": "base", "labels": {"k": "v"}})
        self.assertEqual(s, Session.from_json(SESSION))
        c.create_session(snapshot=Snapshot.from_json(SNAP))
        self.assertEqual(d.seen[-1].json(), {"snapshot": SNAP["id"]}, "a Snapshot goes as its id")

        # Several: a list, count on the wire.
        ss = c.create_sessions("base", 3, env={"A": "1"})
        self.assertEqual(d.seen[-1].json(), {"snapshot": "base", "count": 3, "env": {"A": "1"}})
        self.assertEqual([x.id for x in ss], ["s0", "s1", "s2"])
        self.assertEqual(len(c.create_sessions(Snapshot.from_json(SNAP))), 1)
        self.assertEqual(d.seen[-1].json(), {"snapshot": SNAP["id"], "count": 1})
        c.create_sessions("base", 2.0)  # type: ignore[arg-type]
        self.assertEqual(d.seen[-1].json()["count"], 2, "a whole float goes as an int")
        with self.assertRaises(NotFound):
            c.create_sessions("gone", 2)

        n = len(d.seen)
        cases: list[tuple[str, Any, type[Exception]]] = [
            ("count 0", dict(snapshot="base", count=0), ValueError),
            ("count 101", dict(snapshot="base", count=101), ValueError),
            ("count a bool", dict(snapshot="base", count=True), ValueError),
            ("count a string", dict(snapshot="base", count="2"), ValueError),
            ("no snapshot", dict(snapshot="", count=2), ValueError),
            ("a typo", dict(snapshot="base", count=2, lables={"k": "v"}), TypeError),
        ]
        for name, kw, exc in cases:
            with self.subTest(name), self.assertRaises(exc):
                c.create_sessions(**kw)
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")

    def test_fork(self) -> None:
        d = self.serve(route)
        c = Client(d.socket)
        ss = c.fork_session(SESSION["id"])
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", FORK_PATH, {"count": 1}))
        self.assertEqual([x.id for x in ss], ["s0"])
        self.assertEqual(len(c.fork_session(SESSION["id"], count=4)), 4)
        self.assertEqual(d.seen[-1].json(), {"count": 4})
        with self.assertRaises(InvalidArgument):
            c.fork_session("busy", count=100)
        n = len(d.seen)
        with self.assertRaises(ValueError):
            c.fork_session(SESSION["id"], count=0)
        self.assertEqual(len(d.seen), n, "a bad count reached the daemon")


class TestSandboxSnapshots(FakeTestCase):
    def test_sandbox(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket, snapshot="base", name="n1")
        self.assertEqual(d.seen[-1].json(), {"snapshot": "base", "name": "n1"})
        self.assertEqual(sbx.snapshot("base2").name, "base2")
        self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (SNAPSHOTS_PATH, {"name": "base2"}))

        forks = sbx.fork(2)
        self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (FORK_PATH, {"count": 2}))
        self.assertEqual([type(f) for f in forks], [Sandbox, Sandbox])
        self.assertEqual([f.id for f in forks], ["s0", "s1"])
        self.assertTrue(all(f.created and f.client is sbx.client for f in forks), "forks share the client and are the caller's")

        made = Sandbox.from_snapshot("base", 3, labels={"k": "v"}, socket=d.socket)
        self.assertEqual(d.seen[-1].json(), {"snapshot": "base", "count": 3, "labels": {"k": "v"}})
        self.assertEqual([s.id for s in made], ["s0", "s1", "s2"])
        self.assertEqual(Sandbox.from_snapshot("base", socket=d.socket)[0].id, "s0")

    def test_async(self) -> None:
        d = self.serve(route)

        async def main() -> None:
            sbx = await AsyncSandbox.create(socket=d.socket, snapshot="base")
            self.assertEqual(d.seen[-1].json(), {"snapshot": "base"})
            self.assertEqual((await sbx.snapshot()).id, SNAP["id"])
            self.assertEqual(d.seen[-1].path, SNAPSHOTS_PATH)
            forks = await sbx.fork(2)
            self.assertEqual([(type(f), f.id) for f in forks], [(AsyncSandbox, "s0"), (AsyncSandbox, "s1")])
            made = await AsyncSandbox.from_snapshot("base", 2, socket=d.socket)
            self.assertEqual([(type(s), s.id) for s in made], [(AsyncSandbox, "s0"), (AsyncSandbox, "s1")])
            self.assertEqual(d.seen[-1].json(), {"snapshot": "base", "count": 2})

        asyncio.run(main())
