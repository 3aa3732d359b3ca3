"""Attached processes against a real sandboxd ($SANDBOXD_SOCKET): input
written and closed, stdout and stderr apart, a terminal resized, a timeout
and a signal, output followed from the start and from now, and the same
from asyncio."""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid
from typing import Iterable

from sandboxd import AsyncSandbox, Conflict, NotFound, ProcessChunk, Sandbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


def by_stream(chunks: Iterable[ProcessChunk]) -> tuple[dict[str, bytes], int | None]:
    """What each stream got, and the exit code of the last chunk."""
    streams: dict[str, bytes] = {}
    code = None
    for c in chunks:
        if c.ended:
            code = c.exit_code
        else:
            streams[c.stream] = streams.get(c.stream, b"") + c.data
    return streams, code


class TestAttachedProcesses(unittest.TestCase):
    def test_stdin_and_streams(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            p = sbx.processes.start(["sh", "-c", "echo err >&2; cat; exit 4"], stdin=True, tag="cat")
            self.assertTrue(p.attached)
            sbx.processes.write_stdin(p.pid, b"hello\n")
            listed = {x.pid: x for x in sbx.processes.list()}
            self.assertEqual((listed[p.pid].attached, listed[p.pid].tag, listed[p.pid].argv[0]), (True, "cat", "sh"))
            sbx.processes.write_stdin(p.pid, "bye\n")
            sbx.processes.close_stdin(p.pid)
            streams, code = by_stream(sbx.processes.output(p.pid))
            self.assertEqual((streams, code), ({"stdout": b"hello\nbye\n", "stderr": b"err\n"}, 4))
            # Read again without follow, from an offset: what is kept.
            again = list(sbx.processes.output(p.pid, follow=False, from_=0))
            self.assertEqual(b"".join(c.data for c in again if c.stream == "stdout"), b"hello\nbye\n")
            with self.assertRaises(Conflict):
                sbx.processes.write_stdin(p.pid, b"late")
            with self.assertRaises(Conflict):
                sbx.processes.resize(p.pid, 10, 10)
            with self.assertRaises(NotFound):
                list(sbx.processes.output(999999))

    def test_terminal(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            p = sbx.processes.start(["sh", "-c", 'read x; stty size; echo "$TERM"'], tty=(24, 80))
            self.assertEqual(p.tty, {"rows": 24, "cols": 80})
            sbx.processes.resize(p.pid, 30, 100)
            sbx.processes.write_stdin(p.pid, "go\n")
            streams, code = by_stream(sbx.processes.output(p.pid))
            self.assertEqual((list(streams), code), (["pty"], 0))
            self.assertIn(b"30 100", streams["pty"])

    def test_timeout_and_signal(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            slow = sbx.processes.start(["sh", "-c", "echo early; sleep 60"], stdin=True, timeout_s=1)
            streams, code = by_stream(sbx.processes.output(slow.pid, from_="now"))
            self.assertIn(streams.get("stdout", b""), (b"", b"early\n"))
            self.assertEqual(code, 137)
            p = sbx.processes.start(["sleep", "60"], stdin=True)
            sbx.processes.signal(p.pid, "TERM")

            def follow() -> object:
                return (yield from sbx.processes.output(p.pid))

            gen = follow()
            try:
                while True:
                    next(gen)
            except StopIteration as stop:
                self.assertEqual(stop.value, 143)
            with self.assertRaises(NotFound):
                sbx.processes.signal(999999, "TERM")

    def test_async(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:

            async def go() -> tuple[dict[str, bytes], int | None]:
                a = AsyncSandbox(sbx)
                p = await a.processes.start(["tr", "a-z", "A-Z"], stdin=True)
                await a.processes.write_stdin(p.pid, "hello ")
                await a.processes.write_stdin(p.pid, "async\n", eof=True)
                return by_stream([c async for c in a.processes.output(p.pid)])

            self.assertEqual(asyncio.run(go()), ({"stdout": b"HELLO ASYNC\n"}, 0))
