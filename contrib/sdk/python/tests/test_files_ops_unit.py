"""The fuller file calls against the fake daemon: stat, mkdir, move,
listing to a depth, and watch (an iterator, and an async one)."""

from __future__ import annotations

import asyncio
import contextlib

from sandboxd import Client, Conflict, FileEvent, NotFound, ResourceExhausted
from test_unit import FakeTestCase, Reply, Seen, error

STAT = {
    "name": "a.txt",
    "path": "/workspace/a.txt",
    "type": "file",
    "size": 5,
    "mode": "0644",
    "permissions": "-rw-r--r--",
    "owner": "sandbox",
    "group": "sandbox",
    "mtime": "2026-01-02T03:04:05Z",
}


class TestFileOps(FakeTestCase):
    def test_stat(self) -> None:
        d = self.serve(lambda s: Reply(200, STAT) if s.query["path"] == ["a.txt"] else error(404, "not_found", "no such file"))
        c = Client(d.socket)
        st = c.stat_file("s1", "a.txt")
        self.assertEqual((st.type, st.permissions, st.owner, st.size, st.symlink_target, st.created), ("file", "-rw-r--r--", "sandbox", 5, None, None))
        self.assertEqual(st.mtime.year if st.mtime else 0, 2026)
        self.assertEqual(d.seen[0].path, "/v1/sessions/s1/files/stat")
        with self.assertRaises(NotFound):
            c.stat_file("s1", "nope")

    def test_mkdir_move(self) -> None:
        def route(s: Seen) -> Reply:
            if s.path.endswith("/mkdir"):
                return Reply(201, dict(STAT, type="dir", created=True))
            if s.json()["to"] == "taken":
                return error(409, "conflict", "taken exists")
            return Reply(200, dict(STAT, path="/workspace/b.txt"))

        d = self.serve(route)
        c = Client(d.socket)
        made = c.make_folder("s1", "a/b")
        self.assertTrue(made.created)
        self.assertTrue(made.is_dir)
        self.assertEqual(d.seen[0].json(), {"path": "a/b"})
        self.assertEqual(c.move_file("s1", "a.txt", "b.txt").path, "/workspace/b.txt")
        self.assertEqual(d.seen[1].json(), {"from": "a.txt", "to": "b.txt"})
        with self.assertRaises(Conflict):
            c.move_file("s1", "a.txt", "taken")

    def test_list_depth(self) -> None:
        entries = [{"name": "a", "type": "dir", "path": "/workspace/a"}, {"name": "b", "type": "file", "path": "/workspace/a/b"}]
        d = self.serve(lambda s: Reply(200, {"entries": entries}))
        got = Client(d.socket).list_folder("s1", ".", 2)
        self.assertEqual([e.path for e in got], ["/workspace/a", "/workspace/a/b"])
        self.assertEqual(d.seen[0].query["depth"], ["2"])

    def test_watch(self) -> None:
        lines = [{"type": "create", "path": "/workspace/a"}, {"type": "write", "path": "/workspace/a"}]
        d = self.serve(lambda s: Reply(200, lines=lines))
        with contextlib.closing(Client(d.socket).watch_files("s1", ".", recursive=True)) as it:
            got = list(it)
        self.assertEqual(got, [FileEvent("create", "/workspace/a"), FileEvent("write", "/workspace/a")])
        self.assertEqual(d.seen[0].query, {"path": ["."], "recursive": ["1"]})
        self.assertEqual(d.seen[0].headers["accept"], "application/x-ndjson")

    def test_watch_error_line(self) -> None:
        lines = [{"type": "create", "path": "/workspace/a"}, {"type": "error", "error": {"code": "resource_exhausted", "message": "too many"}}]
        d = self.serve(lambda s: Reply(200, lines=lines))
        it = Client(d.socket).watch_files("s1", ".")
        self.assertEqual(next(it).type, "create")
        with self.assertRaises(ResourceExhausted):
            next(it)

    def test_watch_refused(self) -> None:
        d = self.serve(lambda s: error(409, "conflict", "start it first"))
        with self.assertRaises(Conflict):
            Client(d.socket).watch_files("s1", ".")

    def test_async_watch(self) -> None:
        from sandboxd.aio import AsyncFiles

        lines = [{"type": "create", "path": "/workspace/a"}, {"type": "remove", "path": "/workspace/a"}]
        d = self.serve(lambda s: Reply(200, lines=lines))

        class Sync:
            class files:
                pass

        c = Client(d.socket)
        Sync.files.watch = staticmethod(lambda path, recursive=False: c.watch_files("s1", path, recursive=recursive))  # type: ignore[attr-defined]

        class Fake:
            sync = Sync

        async def main() -> list[str]:
            return [ev.type async for ev in AsyncFiles(Fake()).watch(".")]  # type: ignore[arg-type]

        self.assertEqual(asyncio.run(main()), ["create", "remove"])
