"""Code contexts against the fake daemon: what create, list, delete and
restart send and how their answers read, the context an execution names,
and file metadata and permissions, sync and asyncio."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from sandboxd import AsyncSandbox, CodeContext, InvalidArgument, NotFound, Sandbox
from test_unit import SESSION, FakeTestCase, Reply, Seen, error

CTX = {"id": "c1", "language": "python", "cwd": "/workspace", "created_at": "2026-01-02T03:04:05Z"}
DEFAULT = {**CTX, "id": "default"}
EXECUTION = {"id": "e1", "status": "ok", "stdout": "", "stderr": "", "result": "1"}


def route(s: Seen) -> Reply:
    if s.path == "/v1/sessions":
        return Reply(201, SESSION)
    if s.path.endswith("/contexts") and s.method == "POST":
        return Reply(201, {**CTX, **{k: v for k, v in s.json().items() if k in ("language", "cwd")}})
    if s.path.endswith("/contexts"):
        return Reply(200, {"contexts": [DEFAULT, CTX]})
    if s.path.endswith("/contexts/default") and s.method == "DELETE":
        return error(400, "invalid_argument", "the default context is never deleted")
    if "/contexts/gone" in s.path:
        return error(404, "not_found", "no context gone in session")
    if s.path.endswith("/restart"):
        return Reply(200, CTX)
    if s.path.endswith("/exec"):
        return Reply(202, {"id": "e1"}) if s.json().get("wait") is False else Reply(200, EXECUTION)
    if s.path.endswith("/files") and s.method == "PUT":
        return Reply(201, {"path": "/workspace/a", "size": 1})
    if s.path.endswith("/files/stat"):
        return Reply(200, {"name": "a", "path": "/workspace/a", "type": "file", "permissions": "-rw-r--r--", "metadata": {"author": "me"}})
    if s.path.endswith("/files"):
        return Reply(200, {"entries": [{"name": "a", "type": "file", "permissions": "-rw-r--r--", "metadata": {"author": "me"}}, {"name": "b"}]})
    return Reply(204)


class TestContexts(FakeTestCase):
    def test_calls(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        base = f"/v1/sessions/{sbx.id}/contexts"
        c = sbx.contexts.create()
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", base, {}))
        self.assertEqual(c, CodeContext("c1", "python", "/workspace", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)))
        sbx.contexts.create("shell", cwd="sub", from_=c)
        self.assertEqual(d.seen[-1].json(), {"language": "shell", "cwd": "sub", "from": "c1"})
        sbx.contexts.create(from_="default")
        self.assertEqual(d.seen[-1].json(), {"from": "default"})
        self.assertEqual([x.id for x in sbx.contexts.list()], ["default", "c1"])
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", base))
        self.assertEqual(sbx.contexts.restart(c).id, "c1")
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("POST", base + "/c1/restart"))
        sbx.contexts.delete("c1")
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("DELETE", base + "/c1"))
        with self.assertRaises(InvalidArgument):
            sbx.contexts.delete("default")
        with self.assertRaises(NotFound):
            sbx.contexts.restart("gone")
        # An id with a slash stays one segment.
        sbx.contexts.delete("a/b")
        self.assertEqual(d.seen[-1].path, base + "/a%2Fb")
        n = len(d.seen)
        with self.assertRaises(ValueError):
            sbx.contexts.delete("")
        with self.assertRaises(TypeError):
            sbx.run_code("1", context=7)  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad call reached the daemon")

    def test_exec_context(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        c = CodeContext("c1")
        sbx.run_code("1", context=c)
        self.assertEqual(d.seen[-1].json(), {"language": "python", "code": "1", "context": "c1"})
        sbx.commands.run("pwd", context="sh1")
        self.assertEqual(d.seen[-1].json(), {"language": "shell", "code": "pwd", "context": "sh1"})
        self.assertEqual(sbx.submit("1", context="c1"), "e1")
        self.assertEqual(d.seen[-1].json(), {"language": "python", "code": "1", "context": "c1", "wait": False})
        sbx.commands.submit("pwd", context=c)
        self.assertEqual(d.seen[-1].json()["context"], "c1")
        # Without one the request is what it always was.
        sbx.run_code("1")
        self.assertNotIn("context", d.seen[-1].json())

    def test_async(self) -> None:
        d = self.serve(route)

        async def main() -> None:
            sbx = await AsyncSandbox.create(socket=d.socket)
            c = await sbx.contexts.create(from_="default")
            self.assertEqual(d.seen[-1].json(), {"from": "default"})
            await sbx.run_code("x", context=c)
            self.assertEqual(d.seen[-1].json()["context"], "c1")
            await sbx.commands.run("pwd", context=c)
            self.assertEqual(d.seen[-1].json()["context"], "c1")
            self.assertEqual(len(await sbx.contexts.list()), 2)
            self.assertEqual((await sbx.contexts.restart(c)).id, "c1")
            await sbx.contexts.delete(c)
            self.assertEqual(d.seen[-1].method, "DELETE")

        asyncio.run(main())


class TestFileMetadata(FakeTestCase):
    def test_write_metadata(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        sbx.files.write("a", b"x", metadata={"author": "me", "kind": "note"})
        h = d.seen[-1].headers
        self.assertEqual((h.get("x-sandboxd-meta-author"), h.get("x-sandboxd-meta-kind")), ("me", "note"))
        sbx.files.write("a", b"x")
        self.assertFalse([k for k in d.seen[-1].headers if k.startswith("x-sandboxd-meta-")])

    def test_read_metadata(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        st = sbx.files.stat("a")
        self.assertEqual((st.permissions, st.metadata), ("-rw-r--r--", {"author": "me"}))
        a, b = sbx.files.list(".")
        self.assertEqual((a.permissions, a.metadata), ("-rw-r--r--", {"author": "me"}))
        self.assertEqual((b.permissions, b.metadata), ("", {}))
