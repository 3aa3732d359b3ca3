"""Attached processes against the fake daemon: what starting one with stdin,
a terminal, a tag and a timeout sends, input, resize and signal calls, and
the output stream read as chunks that end with the exit code."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from sandboxd import AsyncSandbox, Client, Conflict, InvalidArgument, NotFound, ProcessChunk, ProtocolError, Sandbox
from test_unit import SESSION, FakeTestCase, Reply, Seen, error


def out(stream: str, data: bytes, offset: int, **more: Any) -> dict[str, Any]:
    return {"stream": stream, "data_b64": base64.b64encode(data).decode(), "offset": offset, **more}


# A process that wrote "hi\n" on stdout, "oops\n" on stderr, and ended with 3.
LINES = [out("stdout", b"hi\n", 0, lost=0), out("stderr", b"oops\n", 3), {"exit_code": 3, "offset": 8}]

ATTACHED = {"pid": 42, "command": "cat", "started_at": "2026-01-02T03:04:05Z", "attached": True, "tag": "t1", "argv": ["cat"], "tty": {"rows": 24, "cols": 80}}


def route(s: Seen) -> Reply:
    if s.path == "/v1/sessions":
        return Reply(201, SESSION)
    if s.path.endswith("/processes"):
        return Reply(201, ATTACHED)
    if "/processes/7/" in s.path:
        return error(404, "not_found", "no process 7 in session s")
    if "/processes/8/" in s.path:
        return error(409, "conflict", "process 8 ended")
    if s.path.endswith("/processes/9/output"):
        # Bad base64, then an error line: neither is output.
        return Reply(200, lines=[{"stream": "stdout", "data_b64": "!!", "offset": 0}])
    if s.path.endswith("/processes/10/output"):
        return Reply(200, lines=[out("stdout", b"a", 0), {"type": "error", "error": {"code": "invalid_argument", "message": "bad from"}}])
    if s.path.endswith("/output"):
        follow = s.query.get("follow") == ["1"]
        return Reply(200, lines=LINES if follow else LINES[:2])
    return Reply(204)


class TestAttachedProcesses(FakeTestCase):
    def test_start_fields(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        p = sbx.processes.start(["cat"], stdin=True, tty=(24, 80), tag="t1", timeout_s=30)
        raw = d.seen[-1]
        self.assertEqual(
            (raw.method, raw.path, raw.json()),
            ("POST", f"/v1/sessions/{sbx.id}/processes", {"argv": ["cat"], "stdin": True, "tty": {"rows": 24, "cols": 80}, "tag": "t1", "timeout_s": 30}),
        )
        self.assertEqual((p.pid, p.attached, p.tag, p.tty), (42, True, "t1", {"rows": 24, "cols": 80}))
        # Without them the request is what it always was.
        sbx.processes.start("sleep 1")
        self.assertEqual(d.seen[-1].json(), {"argv": ["/bin/sh", "-c", "sleep 1"]})
        n = len(d.seen)
        for bad in (dict(tty=(0, 80)), dict(tty=(24, 70000)), dict(tty=(24.5, 80)), dict(timeout_s=0), dict(timeout_s=-1)):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                sbx.processes.start(["cat"], **bad)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            sbx.processes.start(["cat"], tty=24)  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad start reached the daemon")

    def test_stdin_resize_signal(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        base = f"/v1/sessions/{sbx.id}/processes/42"
        sbx.processes.write_stdin(42, b"\x00bytes\n")
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path, raw.query, raw.body), ("POST", base + "/stdin", {}, b"\x00bytes\n"))
        sbx.processes.write_stdin(42, "héllo", eof=True)
        self.assertEqual((d.seen[-1].query, d.seen[-1].body), ({"eof": ["1"]}, "héllo".encode()))
        sbx.processes.close_stdin(42)
        self.assertEqual((d.seen[-1].path, d.seen[-1].query, d.seen[-1].body), (base + "/stdin", {"eof": ["1"]}, b""))
        sbx.processes.resize(42, 40, 120)
        self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (base + "/resize", {"rows": 40, "cols": 120}))
        sbx.processes.signal(42, "INT")
        self.assertEqual((d.seen[-1].method, d.seen[-1].path, d.seen[-1].json()), ("POST", base + "/signal", {"signal": "INT"}))
        sbx.processes.signal(42, 9)
        self.assertEqual(d.seen[-1].json(), {"signal": "9"})
        with self.assertRaises(ValueError):
            sbx.processes.resize(42, 0, 80)
        with self.assertRaises(NotFound):
            sbx.processes.signal(7)
        with self.assertRaises(NotFound):
            sbx.processes.write_stdin(7, b"x")
        with self.assertRaises(Conflict):
            sbx.processes.write_stdin(8, b"x")
        with self.assertRaises(Conflict):
            sbx.processes.resize(8, 24, 80)

    def test_output(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        chunks = list(sbx.processes.output(42))
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path, raw.query), ("GET", f"/v1/sessions/{sbx.id}/processes/42/output", {"from": ["start"], "follow": ["1"]}))
        self.assertEqual(raw.headers.get("accept"), "application/x-ndjson")
        self.assertEqual(
            chunks,
            [ProcessChunk("stdout", b"hi\n", 0), ProcessChunk("stderr", b"oops\n", 3), ProcessChunk("", b"", 8, exit_code=3)],
        )
        self.assertEqual((chunks[1].text, chunks[1].next_offset, chunks[1].ended, chunks[2].ended), ("oops\n", 8, False, True))

        def collect() -> Any:
            return (yield from sbx.processes.output(42, from_=3))

        gen = collect()
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            self.assertEqual(stop.value, 3)
        self.assertEqual(d.seen[-1].query, {"from": ["3"], "follow": ["1"]})
        # Without follow: what there is, no end, no exit code.
        got = list(sbx.processes.output(42, follow=False, from_="now"))
        self.assertEqual(([c.stream for c in got], d.seen[-1].query), (["stdout", "stderr"], {"from": ["now"]}))
        # The client has it too, as the Go client does.
        self.assertEqual([c.exit_code for c in Client(d.socket).process_output(sbx.id, 42)], [None, None, 3])

        n = len(d.seen)
        for bad in ("end", -1, True):
            with self.subTest(bad=bad), self.assertRaises((ValueError, TypeError)):
                list(sbx.processes.output(42, from_=bad))  # type: ignore[arg-type]
        self.assertEqual(len(d.seen), n, "a bad from_ reached the daemon")
        with self.assertRaises(ProtocolError):
            list(sbx.processes.output(9))
        with self.assertRaises(InvalidArgument):
            list(sbx.processes.output(10))
        with self.assertRaises(NotFound):
            list(sbx.processes.output(7))

    def test_async(self) -> None:
        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)

        async def go() -> list[ProcessChunk]:
            a = AsyncSandbox(sbx)
            p = await a.processes.start(["cat"], stdin=True, tag="t1")
            await a.processes.write_stdin(p.pid, "x")
            await a.processes.close_stdin(p.pid)
            await a.processes.resize(p.pid, 30, 100)
            await a.processes.signal(p.pid, "HUP")
            got = [c async for c in a.processes.output(p.pid)]
            # Leaving the loop early hangs up and ends cleanly.
            async for c in a.processes.output(p.pid):
                break
            return got

        got = asyncio.run(go())
        self.assertEqual([(c.stream, c.data, c.exit_code) for c in got], [("stdout", b"hi\n", None), ("stderr", b"oops\n", None), ("", b"", 3)])
        paths = [(s.method, s.path.rsplit("/", 1)[-1]) for s in d.seen[1:]]
        self.assertEqual(paths[:6], [("POST", "processes"), ("POST", "stdin"), ("POST", "stdin"), ("POST", "resize"), ("POST", "signal"), ("GET", "output")])
        self.assertEqual(d.seen[1].json(), {"argv": ["cat"], "stdin": True, "tag": "t1"})
