"""Tests of the SDK against a real sandboxd, the one at $SANDBOXD_SOCKET
(integration/sdk_python_test.go starts one and runs these with the SDK
installed from its wheel). $SANDBOXD_TEST_INDEX_URL, when set, is a package
index serving sbxdemo 1.0 (the Go test's fake internet) for the install test.

Every test deletes the sessions it makes: the Go test checks none is left.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import threading
import time
import unittest
import uuid
from typing import Any, Callable, TypeVar

import sandboxd
from sandboxd import (
    AsyncSandbox,
    Client,
    Conflict,
    InvalidArgument,
    NotFound,
    RequestTimeout,
    Sandbox,
    SandboxdError,
    Unavailable,
    run,
    run_async,
)

# Labels of this run, so lists see only its sessions.
RUN = uuid.uuid4().hex[:12]

# A cell that prints a tick a second, three times.
TICKS = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(1)"

T = TypeVar("T")


def eventually(what: str, probe: Callable[[], T], ok: Callable[[T], bool], within: float = 30.0) -> T:
    """probe() until ok says so, or fail after ``within`` seconds: what the
    daemon does in the background (a process ending, being reaped) is
    waited for, never slept for."""
    deadline = time.monotonic() + within
    while True:
        got = probe()
        if ok(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still {got!r} after {within:g} s")
        time.sleep(0.05)


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestSandbox(unittest.TestCase):
    def test_issue_example(self) -> None:
        with Sandbox(template="python", memory_mb=256, labels={"agent": "a1", "run": RUN}) as sbx:
            r = sbx.run_code("x = 6 * 7\nx")
            self.assertEqual((r.result, r.status, r.exit_code, r.stdout, r.error, r.outputs), ("42", "ok", 0, "", None, []))
            self.assertTrue(r.ok)
            self.assertEqual(r.session_id, sbx.id)
            # The interpreter keeps its variables between executions.
            self.assertEqual(sbx.run_code("x + 1").result, "43")
            s = sbx.info()
            self.assertEqual((s.id, s.status, s.template, s.limits.memory_mb, s.labels), (sbx.id, "running", "python", 256, {"agent": "a1", "run": RUN}))
            self.assertEqual(s.exec_count, 2)
            self.assertIsNotNone(s.created_at)
            st = sbx.stats()
            self.assertEqual((st.status, st.memory_limit_bytes), ("running", 256 << 20))
            self.assertGreater(st.memory_bytes, 0)
        # Leaving the block deleted it.
        with self.assertRaises(NotFound):
            Sandbox.connect(sbx.id)
        self.assertFalse(sbx.kill())

    def test_streaming(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            got: list[str] = []
            r = sbx.run_code("for i in range(3): print(i)", on_stdout=got.append)
            self.assertEqual(("".join(got), r.stdout, r.status), ("0\n1\n2\n", "0\n1\n2\n", "ok"))

            # stdout and stderr come to their callbacks in the order written.
            events: list[tuple[str, str]] = []
            code = "import sys, time\nprint('a', flush=True)\ntime.sleep(0.2)\nprint('b', file=sys.stderr, flush=True)\ntime.sleep(0.2)\nprint('c', flush=True)"
            r = sbx.run_code(code, on_stdout=lambda s: events.append(("out", s)), on_stderr=lambda s: events.append(("err", s)))
            self.assertEqual(events, [("out", "a\n"), ("err", "b\n"), ("out", "c\n")])
            self.assertEqual((r.stdout, r.stderr), ("a\nc\n", "b\n"))

            # Output comes as it is written, not with the answer.
            first: list[float] = []
            r = sbx.run_code("import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('last')", on_stdout=lambda s: first.append(time.monotonic()))
            done = time.monotonic()
            self.assertEqual(r.stdout, "first\nlast\n")
            self.assertLess(first[0], done - 1.0, "the first line came with the end of the execution: not streamed")

            # Shell commands stream too.
            lines: list[str] = []
            c = sbx.commands.run("echo one; sleep 0.2; echo two >&2; exit 4", on_stdout=lines.append, on_stderr=lines.append)
            self.assertEqual((lines, c.exit_code, c.status), (["one\n", "two\n"], 4, "error"))

    def test_python_error(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            r = sbx.run_code("1 / 0")
            self.assertEqual((r.status, r.exit_code, r.result), ("error", 1, None))
            assert r.error is not None
            self.assertEqual((r.error.name, r.error.value), ("ZeroDivisionError", "division by zero"))
            self.assertIn("ZeroDivisionError", r.error.traceback)

    def test_commands(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            c = sbx.commands.run("ls -la")
            self.assertEqual((c.exit_code, c.status, c.language), (0, "ok", "shell"))
            self.assertIn(" .", c.stdout)
            sbx.files.write("sub/keep", b"")
            cases: list[tuple[str, dict[str, Any], int, str]] = [
                # (command, kwargs, exit code, stdout)
                ("pwd", {}, 0, "/workspace\n"),
                ("pwd", {"cwd": "sub"}, 0, "/workspace/sub\n"),
                ("echo $FOO", {"env": {"FOO": "bar"}}, 0, "bar\n"),
                ("echo out; exit 3", {}, 3, "out\n"),
                ("id -un", {}, 0, "sandbox\n"),
            ]
            for cmd, kw, code, out in cases:
                with self.subTest(cmd=cmd, kw=kw):
                    c = sbx.commands.run(cmd, **kw)
                    self.assertEqual((c.exit_code, c.stdout), (code, out))
                    self.assertEqual(c.status, "ok" if code == 0 else "error")

    def test_files(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            w = sbx.files.write("data.csv", b"a,b\n1,2\n")
            self.assertEqual((w.path, w.size), ("/workspace/data.csv", 8))
            self.assertEqual(sbx.files.read("data.csv"), b"a,b\n1,2\n")
            self.assertEqual(sbx.run_code("open('data.csv').read()").result, repr("a,b\n1,2\n"))

            # Every byte value, both ways, and a file the code wrote.
            blob = bytes(range(256)) * 64
            sbx.files.write("/tmp/blob.bin", blob)
            self.assertEqual(sbx.files.read("/tmp/blob.bin"), blob)
            self.assertEqual(sbx.run_code("len(open('/tmp/blob.bin', 'rb').read())").result, str(len(blob)))
            sbx.run_code("open('made.bin', 'wb').write(bytes([0, 255, 10, 13]))")
            self.assertEqual(sbx.files.read("made.bin"), b"\x00\xff\n\r")

            sbx.files.write("dir/deep/note.txt", "héllo")
            self.assertEqual(sbx.files.read_text("dir/deep/note.txt"), "héllo")
            entries = {e.name: e for e in sbx.files.list(".")}
            self.assertEqual(entries["data.csv"].type, "file")
            self.assertEqual(entries["data.csv"].size, 8)
            self.assertTrue(entries["dir"].is_dir)
            self.assertIsNotNone(entries["data.csv"].modified_at)
            self.assertTrue(sbx.files.exists("dir/deep/note.txt"))
            self.assertFalse(sbx.files.exists("dir/deep/other.txt"))
            with self.assertRaises(IsADirectoryError):
                sbx.files.read("dir")

            sbx.files.remove("dir")
            self.assertFalse(sbx.files.exists("dir"))
            with self.assertRaises(NotFound) as cm:
                sbx.files.read("dir/deep/note.txt")
            self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))
            for bad in ("../etc/passwd", "/etc/passwd"):
                with self.subTest(path=bad):
                    with self.assertRaises(InvalidArgument) as cm2:
                        sbx.files.read(bad)
                    self.assertEqual((cm2.exception.code, cm2.exception.status), ("invalid_argument", 400))

    def test_list_and_connect(self) -> None:
        label = f"list-{RUN}"
        with Sandbox(labels={"agent": "a1", "set": label}) as a, Sandbox(labels={"agent": "a2", "set": label}) as b:

            def ids(sessions: list[sandboxd.Session]) -> list[str]:
                return sorted(s.id for s in sessions)

            self.assertEqual(ids(Sandbox.list(label=f"set={label}")), sorted([a.id, b.id]))
            self.assertEqual(ids(Sandbox.list(label=[f"set={label}", "agent=a1"])), [a.id])
            self.assertEqual(ids(Sandbox.list(labels={"set": label, "agent": "a2"})), [b.id])
            self.assertEqual(ids(Sandbox.list(label=f"set={label}-none")), [])

            a.run_code("y = 5")
            same = Sandbox.connect(a.id)
            self.assertEqual((same.id, same.session.labels["agent"]), (a.id, "a1"))
            self.assertEqual(same.run_code("y").result, "5")
            b.kill()
            self.assertEqual(ids(Sandbox.list(label=f"set={label}")), [a.id])

    def test_errors(self) -> None:
        with self.assertRaises(NotFound) as cm:
            Sandbox.connect("nosuchsession0000")
        e = cm.exception
        self.assertEqual((e.code, e.status), ("not_found", 404))
        self.assertTrue(e.message and e.request_id)
        self.assertIsInstance(e, SandboxdError)

        with self.assertRaises(InvalidArgument) as cm2:
            Sandbox(memory_mb=-1, labels={"run": RUN})
        self.assertEqual((cm2.exception.code, cm2.exception.status), ("invalid_argument", 400))
        with self.assertRaises(InvalidArgument):
            Sandbox(network="sideways", labels={"run": RUN})

        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.run_code("z = 1")
            self.assertEqual(sbx.stop().status, "stopped")
            with self.assertRaises(Conflict) as cm3:
                sbx.run_code("z")
            self.assertEqual((cm3.exception.code, cm3.exception.status), ("conflict", 409))
            self.assertEqual(sbx.start().status, "running")
            r = sbx.run_code("z")
            self.assertEqual((r.status, r.error.name if r.error else ""), ("error", "NameError"))
            with self.assertRaises(InvalidArgument):
                sbx.run_code("1", language="cobol")

    def test_restart_and_history(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.run_code("v = 1")
            sbx.files.write("kept.txt", "kept")
            self.assertEqual(sbx.restart().status, "running")
            r = sbx.run_code("v")
            self.assertEqual(r.error.name if r.error else "", "NameError")
            self.assertEqual(sbx.files.read("kept.txt"), b"kept")
            # Newest first, as summaries.
            hist = sbx.executions(limit=2)
            self.assertEqual([(h.id, h.status) for h in hist], [(r.id, "error"), (hist[1].id, "ok")])
            self.assertEqual(len(sbx.executions()), 2)
            self.assertIsInstance(hist[0], sandboxd.ExecutionSummary)
            self.assertEqual((hist[0].exit_code, hist[0].language, hist[0].caller_uid), (1, "python", os.geteuid()))
            self.assertEqual(hist[0].code_sha256, hashlib.sha256(b"v").hexdigest())
            # One whole, by its id: what the answer had.
            whole = sbx.execution(r.id)
            self.assertEqual((whole.id, whole.status, whole.error.name if whole.error else ""), (r.id, "error", "NameError"))
            with self.assertRaises(NotFound):
                sbx.execution("0000000000000000")

    def test_metrics(self) -> None:
        with Sandbox(memory_mb=512, labels={"run": RUN}) as sbx:
            # 64 MiB touched, and about 0.3 s of CPU.
            code = (
                "import time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
                "t = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\ndel b"
            )
            r = sbx.run_code(code)
            self.assertEqual(r.status, "ok", r.stderr)
            m = r.metrics
            assert m is not None
            self.assertEqual(m.wall_ms, r.duration_ms)
            self.assertGreaterEqual(m.cpu_ms, 200)
            self.assertGreaterEqual(m.memory_peak_bytes, 64 << 20)
            self.assertEqual((r.code_sha256, r.caller_uid), (hashlib.sha256(code.encode()).hexdigest(), os.geteuid()))
            self.assertEqual(sbx.executions(1)[0].metrics, m)

    def test_submit(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            t0 = time.monotonic()
            eid = sbx.submit(TICKS)
            self.assertLess(time.monotonic() - t0, 2, "submit waited for the code")
            # Running, with its output so far.
            e = sbx.execution(eid)
            deadline = time.monotonic() + 20
            while "tick 0" not in e.stdout and time.monotonic() < deadline:
                time.sleep(0.05)
                e = sbx.execution(eid)
            self.assertEqual(e.status, "running")
            self.assertIn("tick 0", e.stdout)
            self.assertNotIn("tick 2", e.stdout)
            running = sbx.executions()[0]
            self.assertEqual((running.id, running.status, running.exit_code), (eid, "running", None))
            # A bounded wait gives up; the execution runs on.
            with self.assertRaises(RequestTimeout):
                sbx.wait_execution(eid, timeout=0.1)
            # An execution sent meanwhile waits its turn.
            self.assertEqual(sbx.run_code("print('after')").stdout, "after\n")
            e = sbx.wait_execution(eid)
            self.assertEqual((e.id, e.status, e.stdout, e.exit_code), (eid, "ok", "tick 0\ntick 1\ntick 2\n", 0))
            self.assertIsNotNone(e.metrics)
            self.assertEqual(e.code_sha256, hashlib.sha256(TICKS.encode()).hexdigest())
            # A shell command, failing.
            eid = sbx.commands.submit("echo one; echo two >&2; exit 3", cwd="/tmp")
            c = sbx.wait_execution(eid, timeout=20, poll_interval=0.05)
            self.assertEqual((c.status, c.exit_code, c.stdout, c.stderr, c.language), ("error", 3, "one\n", "two\n", "shell"))
            # Its timeout holds.
            eid = sbx.submit("import time\ntime.sleep(30)", timeout=1)
            self.assertEqual(sbx.wait_execution(eid, timeout=30).status, "timeout")
            # Interrupted as any other execution.
            eid = sbx.submit("import time\ntime.sleep(30)")
            deadline = time.monotonic() + 20
            while not sbx.interrupt() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(sbx.wait_execution(eid, timeout=20).status, "interrupted")

    def test_idempotency_key(self) -> None:
        key = f"sdk-{RUN}-{uuid.uuid4().hex}"
        with Sandbox(idempotency_key=key, labels={"run": RUN}) as sbx:
            self.assertTrue(sbx.created)
            sbx.run_code("x = 1")
            # The same create again: the same session, state and all.
            again = Sandbox(idempotency_key=key, labels={"run": RUN})
            self.assertEqual((again.id, again.created), (sbx.id, False))
            self.assertEqual(again.run_code("x").result, "1")
            s, created = Client().create_session_once(key, labels={"run": RUN})
            self.assertEqual((s.id, created), (sbx.id, False))
            # The key with another request is a conflict.
            with self.assertRaises(Conflict):
                Sandbox(idempotency_key=key, labels={"run": RUN, "other": "yes"})
            # One session was made, however many creates there were.
            self.assertEqual([x.id for x in Sandbox.list(label=f"run={RUN}")], [sbx.id])
        # The key went with its session: it makes a new one now.
        with Sandbox(idempotency_key=key, labels={"run": RUN}) as fresh:
            self.assertTrue(fresh.created)
            self.assertNotEqual(fresh.id, sbx.id)
        with self.assertRaises(InvalidArgument):
            Sandbox(idempotency_key="has space", labels={"run": RUN})

    def test_interrupt(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.run_code("x = 1")
            started = threading.Event()
            out: list[str] = []
            got: list[Any] = []

            def on_stdout(s: str) -> None:
                out.append(s)
                if "started" in "".join(out):
                    started.set()

            def cell() -> None:
                try:
                    got.append(sbx.run_code('import time\nprint("started", flush=True)\ntime.sleep(30)', on_stdout=on_stdout))
                except BaseException as e:  # the test reports it, not the thread
                    got.append(e)
                finally:
                    started.set()  # ended before "started": the wait below must not hang

            t = threading.Thread(target=cell, daemon=True)
            t.start()
            self.assertTrue(started.wait(20), "the cell printed nothing in 20 s")
            self.assertFalse(got, f"the cell ended before it was interrupted: {got}")
            self.assertIs(sbx.interrupt(), True)
            t.join(20)
            self.assertFalse(t.is_alive(), "the interrupted cell did not answer")
            r = got[0]
            self.assertIsInstance(r, sandboxd.Execution, r)
            self.assertEqual((r.status, r.exit_code, r.error.name if r.error else ""), ("interrupted", 130, "KeyboardInterrupt"))
            # Nothing runs now; the interpreter kept its variables.
            self.assertIs(sbx.interrupt(), False)
            self.assertEqual(sbx.run_code("x").result, "1")

    def test_pause(self) -> None:
        with Sandbox(idle_action="pause", labels={"run": RUN}) as sbx:
            self.assertEqual(sbx.session.idle_action, "pause")
            sbx.run_code("x = 3")
            self.assertEqual(sbx.pause().status, "paused")
            self.assertEqual(sbx.session.status, "paused")
            # Pausing a paused session changes nothing.
            self.assertEqual(sbx.pause().status, "paused")
            # An execution resumes it, variables and all.
            self.assertEqual(sbx.run_code("x + 1").result, "4")
            self.assertEqual(sbx.info().status, "running")
            self.assertEqual(sbx.pause().status, "paused")
            self.assertEqual(sbx.resume().status, "running")
            self.assertEqual(sbx.session.status, "running")

    def test_deadline(self) -> None:
        with Sandbox(deadline_s=600, labels={"run": RUN}) as sbx:
            first = sbx.session.deadline
            self.assertIsNotNone(first)
            later = sbx.set_deadline(3600).deadline
            self.assertTrue(first is not None and later is not None and later > first)
            self.assertEqual(sbx.info().deadline, later)
            self.assertIsNone(sbx.set_deadline(0).deadline)
            self.assertIsNone(sbx.info().deadline)
            with self.assertRaises(InvalidArgument):
                sbx.set_deadline(-1)

    def test_timeout(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            t0 = time.monotonic()
            r = sbx.run_code("import time\ntime.sleep(30)", timeout=1)
            self.assertEqual(r.status, "timeout")
            self.assertLess(time.monotonic() - t0, 20)
            c = sbx.commands.run("sleep 30", timeout=0.5)
            self.assertEqual(c.status, "timeout")
            # The session serves on.
            self.assertEqual(sbx.run_code("1 + 1").result, "2")
            # A call whose answer takes longer than its request_timeout.
            with self.assertRaises(RequestTimeout):
                sbx.run_code("import time\ntime.sleep(3)", request_timeout=0.5)

    def test_session_timeout_default(self) -> None:
        with Sandbox(timeout_s=1, labels={"run": RUN}) as sbx:
            self.assertEqual(sbx.session.limits.timeout_s, 1)
            self.assertEqual(sbx.run_code("import time\ntime.sleep(30)").status, "timeout")

    def test_rich_output(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            r = sbx.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nNone")
            self.assertEqual((r.status, len(r.outputs)), ("ok", 1), r.error)
            out = r.outputs[0]
            self.assertEqual(out.mime, "image/png")
            self.assertTrue(out.png and out.png.startswith(b"\x89PNG\r\n\x1a\n"))
            self.assertIsNone(out.html)

    def test_display(self) -> None:
        code = (
            "class J:\n"
            "    def _repr_json_(self): return {'a': [1, 2]}\n"
            "class P:\n"
            "    def _repr_png_(self): return b'\\x89PNG'\n"
            "class B:\n"
            "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
            "        return {'text/html': '<i>b</i>', 'text/markdown': '*b*', 'text/plain': 'b'}\n"
            "class Bad:\n"
            "    def _repr_html_(self): raise ValueError('no')\n"
            "    def __repr__(self): return 'Bad()'\n"
            "import pandas as pd, time\n"
            "print('before', flush=True)\n"
            "display(J(), P(), B(), Bad())\n"
            "print('between', flush=True)\n"
            "class S:\n"
            "    def _repr_svg_(self): return '<svg/>'\n"
            "display(S())\n"
            "time.sleep(1.5)\n"
            "pd.DataFrame({'x': [1, 2]})"
        )
        with Sandbox(labels={"run": RUN}) as sbx:
            events: list[tuple[str, Any, float]] = []
            r = sbx.run_code(
                code,
                on_stdout=lambda s: events.append(("out", s.strip(), time.monotonic())),
                on_display=lambda o: events.append(("display", o, time.monotonic())),
            )
            done = time.monotonic()
            self.assertEqual(r.status, "ok", r.error)
            self.assertEqual([e[0] for e in events], ["out", "display", "display", "display", "display", "out", "display"])
            self.assertLess(events[-1][2], done - 1.0, "the display came with the end of the execution: not streamed")
            outs = r.outputs
            self.assertEqual([o.mime for o in outs], ["application/json", "image/png", "text/html", "text/plain", "image/svg+xml", "text/html"])
            self.assertEqual([e[1] for e in events if e[0] == "display"], outs[:5])
            j, p, b, bad, svg, df = outs
            self.assertEqual(j.json, {"a": [1, 2]})
            self.assertEqual(p.png, b"\x89PNG")
            self.assertEqual((b.html, b.markdown, b.text, b.svg), ("<i>b</i>", "*b*", "b", None))
            self.assertEqual(b.bundle, {"text/html": "<i>b</i>", "text/markdown": "*b*", "text/plain": "b"})
            self.assertEqual((bad.text, bad.html), ("Bad()", None))
            self.assertEqual(svg.svg, "<svg/>")
            # The last expression: its repr is the result, its HTML an output.
            self.assertIn("x", r.result or "")
            self.assertIn("<table", df.html or "")
            self.assertEqual(df.text, r.result)
            # An old client's view: mime and base64 data.
            self.assertEqual(b.content, b"<i>b</i>")
            # A plain call answers the same outputs.
            r2 = sbx.run_code("display(B())\npd.DataFrame({'x': [1]})")
            self.assertEqual([o.mime for o in r2.outputs], ["text/html", "text/html"])

    def test_install(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            # A requirement that is an option is refused before pip runs.
            with self.assertRaises(InvalidArgument):
                sbx.install("--index-url=http://evil/simple")
            index = os.environ.get("SANDBOXD_TEST_INDEX_URL")
            if not index:
                self.skipTest("SANDBOXD_TEST_INDEX_URL is not set: no package index to install from")
            out: list[str] = []
            r = sbx.install("sbxdemo==1.0", index_url=index, on_stdout=out.append)
            self.assertEqual(r.status, "ok", r.stderr)
            self.assertIn("Successfully installed sbxdemo-1.0", "".join(out))
            self.assertEqual(sbx.run_code("import sbxdemo\nsbxdemo.VALUE").result, repr("installed by the python sdk test"))
            # A package the index lacks fails as pip does: an Execution, not an exception.
            r = sbx.install("nosuchpkg", index_url=index)
            self.assertNotEqual((r.status, r.exit_code), ("ok", 0))


class TestProcesses(unittest.TestCase):
    def test_follow(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            p = sbx.processes.start(["sh", "-c", "for i in 1 2 3; do echo tick $i; sleep 0.2; done; echo oops >&2; exit 5"])
            self.assertGreater(p.pid, 1)
            self.assertTrue(p.detached)
            self.assertIn("sh", p.command)
            chunks: list[bytes] = []

            def follow() -> Any:
                return (yield from sbx.processes.follow(p.pid, timeout=60, poll_interval=0.05))

            gen = follow()
            try:
                while True:
                    chunks.append(next(gen))
            except StopIteration as stop:
                code = stop.value
            # stdout and stderr go to one log, in the order written.
            self.assertEqual(b"".join(chunks), b"tick 1\ntick 2\ntick 3\noops\n")
            # The daemon notes the exit as it reaps the process: a logs
            # answer may say "ended" a moment before it knows how.
            if code is None:
                code = eventually("the exit code", lambda: sbx.processes.logs(p.pid).exit_code, lambda c: c is not None)
            self.assertEqual(code, 5)
            lg = sbx.processes.logs(p.pid, offset=7)
            self.assertEqual((lg.data, lg.running, lg.exit_code, lg.next_offset), (b"tick 2\ntick 3\noops\n", False, 5, 26))
            self.assertEqual(sbx.processes.wait(p.pid, timeout=30), 5)
            # A string runs with /bin/sh, in cwd, with env.
            sbx.files.write("sub/keep", b"")
            q = sbx.processes.start("echo $GREETING from $(pwd)", env={"GREETING": "hi"}, cwd="sub")
            self.assertEqual(sbx.processes.wait(q.pid, timeout=30), 0)
            self.assertEqual(sbx.processes.logs(q.pid).data, b"hi from /workspace/sub\n")

            async def in_async() -> bytes:
                asbx = AsyncSandbox(sbx)
                r = await asbx.processes.start(["echo", "async"])
                return b"".join([c async for c in asbx.processes.follow(r.pid, timeout=60, poll_interval=0.05)])

            self.assertEqual(asyncio.run(in_async()), b"async\n")
            with self.assertRaises(NotFound):
                sbx.processes.logs(999999)
            with self.assertRaises(TypeError):
                sbx.client.start_process(sbx.id, "ls")  # type: ignore[arg-type]

    def test_list_and_kill(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            p = sbx.processes.start(["sleep", "300"])
            listed = eventually("the process in the list", lambda: {x.pid: x for x in sbx.processes.list()}, lambda ps: p.pid in ps)
            self.assertTrue(listed[p.pid].detached)
            self.assertIn("sleep", listed[p.pid].command)
            self.assertIn(1, listed)
            self.assertFalse(listed[1].detached)
            # Executions run beside it.
            self.assertEqual(sbx.run_code("6 * 7").result, "42")
            self.assertTrue(sbx.processes.logs(p.pid).running)
            self.assertTrue(sbx.processes.kill(p.pid))
            eventually("the killed process running", lambda: sbx.processes.logs(p.pid).running, lambda r: r is False)
            eventually("the killed process in the list", lambda: [x.pid for x in sbx.processes.list()], lambda ps: p.pid not in ps)
            self.assertFalse(sbx.processes.kill(p.pid))
            # KILL by name, a process started by a command.
            q = sbx.processes.start(["sh", "-c", "trap '' TERM; sleep 300"])
            eventually("the process in the list", lambda: [x.pid for x in sbx.processes.list()], lambda ps: q.pid in ps)
            self.assertTrue(sbx.processes.kill(q.pid, "KILL"))
            sbx.processes.wait(q.pid, timeout=30)
            # 128 + 9, as shells say; known once the daemon reaped it.
            self.assertEqual(eventually("the exit code", lambda: sbx.processes.logs(q.pid).exit_code, lambda c: c is not None), 137)
            with self.assertRaises(InvalidArgument):
                sbx.processes.kill(1)
            with self.assertRaises(InvalidArgument):
                sbx.processes.kill(p.pid, "NOSUCHSIGNAL")


class TestFolders(unittest.TestCase):
    def test_round_trip(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, Sandbox(labels={"run": RUN}) as sbx:
            src = os.path.join(tmp, "proj")
            os.makedirs(os.path.join(src, "sub", "deep"))
            os.makedirs(os.path.join(src, "empty"))
            blob = bytes(range(256)) * 4096
            files = {"a.txt": b"alpha\n", "sub/deep/b.bin": blob, "run.sh": b"#!/bin/sh\necho ran\n"}
            for rel, data in files.items():
                with open(os.path.join(src, rel), "wb") as f:
                    f.write(data)
            os.chmod(os.path.join(src, "run.sh"), 0o755)
            os.symlink("../../a.txt", os.path.join(src, "sub", "deep", "up"))
            os.symlink("/workspace/proj/a.txt", os.path.join(src, "abs"))

            w = sbx.files.upload_dir(src)
            self.assertEqual((w.path.rstrip("/"), w.files, w.size), ("/workspace", 3, sum(len(d) for d in files.values())))
            self.assertEqual(sbx.files.read("proj/sub/deep/b.bin"), blob)
            c = sbx.commands.run("readlink proj/sub/deep/up proj/abs; cat proj/sub/deep/up; ./proj/run.sh; test -d proj/empty && echo empty")
            self.assertEqual((c.exit_code, c.stdout), (0, "../../a.txt\n/workspace/proj/a.txt\nalpha\nran\nempty\n"), c.stderr)
            w = sbx.files.upload_dir(src, "nested/deeper")
            self.assertEqual(w.path, "/workspace/nested/deeper")
            self.assertEqual(sbx.files.read_text("nested/deeper/proj/a.txt"), "alpha\n")

            # The sandbox's own links come back as links, wherever they point.
            sbx.commands.run("ln -s /etc/passwd proj/passwd && ln -s ../.. proj/sub/top")
            out = os.path.join(tmp, "out")
            written = sbx.files.download_dir("proj", out)
            got = os.path.join(out, "proj")
            self.assertIn(os.path.join(got, "sub", "deep", "b.bin"), written)
            for rel, data in files.items():
                with open(os.path.join(got, rel), "rb") as f:
                    self.assertEqual(f.read(), data, rel)
            self.assertTrue(os.access(os.path.join(got, "run.sh"), os.X_OK))
            self.assertTrue(os.path.isdir(os.path.join(got, "empty")))
            links = {rel: os.readlink(os.path.join(got, rel)) for rel in ("sub/deep/up", "abs", "passwd", "sub/top")}
            self.assertEqual(links, {"sub/deep/up": "../../a.txt", "abs": "/workspace/proj/a.txt", "passwd": "/etc/passwd", "sub/top": "../.."})
            # Again over the same folder: replaced, not written through.
            self.assertEqual(sorted(sbx.files.download_dir("proj", out)), sorted(written))
            self.assertEqual(os.readlink(os.path.join(got, "passwd")), "/etc/passwd")
            # A file alone.
            self.assertEqual(sbx.files.download_dir("proj/a.txt", os.path.join(tmp, "one")), [os.path.join(tmp, "one", "a.txt")])

            with self.assertRaises(InvalidArgument):
                sbx.files.upload_dir(src, "../outside")
            with self.assertRaises(NotFound):
                sbx.files.download_dir("nosuchfolder", os.path.join(tmp, "none"))
            with self.assertRaises(FileNotFoundError):
                sbx.files.upload_dir(os.path.join(tmp, "nosuchfolder"))


class TestAttach(unittest.TestCase):
    def test_run_with_input(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            code, out, err = sbx.commands.run_with_input(["wc", "-c"], input=b"x" * 100000, timeout=60)
            self.assertEqual((code, int(out.strip() or b"-1"), err), (0, 100000, b""))
            # The exit status passes through, input or not.
            self.assertEqual(sbx.commands.run_with_input(["sh", "-c", "exit 3"], timeout=60)[0], 3)
            self.assertEqual(sbx.commands.run_with_input(["sh", "-c", "exit 3"], input=b"not read", timeout=60)[0], 3)
            self.assertEqual(sbx.commands.run_with_input("cat; echo oops >&2; exit 4", "héllo", timeout=60), (4, "héllo".encode(), b"oops\n"))
            # More than the sockets hold, back as it goes in.
            big = os.urandom(4 << 20)
            code, out, err = sbx.commands.run_with_input(["cat"], big, timeout=120)
            self.assertEqual((code, len(out), out == big, err), (0, len(big), True, b""))

            async def in_async() -> tuple[int, bytes, bytes]:
                return await AsyncSandbox(sbx).commands.run_with_input(["wc", "-c"], b"abc", timeout=60)

            code, out, _ = asyncio.run(in_async())
            self.assertEqual((code, out.strip()), (0, b"3"))

    def test_attached(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            with sbx.attach(["sh", "-c", "read line; echo got $line; echo err >&2; exit 7"], env={"X": "1"}, cwd="/tmp") as a:
                a.write(b"hello\n")
                got: dict[str, bytes] = {"stdout": b"", "stderr": b""}
                for stream, data in a.read(timeout=60):
                    got[stream] += data
                self.assertEqual((a.wait(), got), (7, {"stdout": b"got hello\n", "stderr": b"err\n"}))
            # A terminal of the size asked.
            code = "import os, sys; print(os.isatty(0), os.get_terminal_size())"
            with sbx.attach(["python3", "-c", code], tty=True, rows=30, cols=100) as a:
                out = b"".join(d for _, d in a.read(timeout=60))
                self.assertEqual(a.exit_code, 0)
            self.assertIn(b"True os.terminal_size(columns=100, lines=30)", out)
            with self.assertRaises(NotFound):
                sbx.client.attach("nosuchsession0000", ["ls"])


class TestOneShot(unittest.TestCase):
    def test_run(self) -> None:
        self.assertEqual(run("print(1)").stdout, "1\n")
        r = run("print(open('in.txt').read() + open('bin', 'rb').read().hex())", files={"in.txt": "hello ", "bin": b"\x00\xff"})
        self.assertEqual(r.stdout, "hello 00ff\n")
        r = run("echo $GREETING; exit 2", language="shell", env={"GREETING": "hi"})
        self.assertEqual((r.stdout, r.exit_code, r.status), ("hi\n", 2, "error"))
        got: list[str] = []
        r = run("print('streamed')", on_stdout=got.append)
        self.assertEqual(("".join(got), r.stdout), ("streamed\n", "streamed\n"))
        self.assertEqual(run("import time\ntime.sleep(30)", timeout=1).status, "timeout")
        with self.assertRaises(InvalidArgument):
            run("1", memory_mb=-1)


class TestClient(unittest.TestCase):
    def test_system(self) -> None:
        c = Client()
        self.assertIn(c.health(), ("ok", "degraded"))
        h = c.health_status()
        self.assertEqual((h.status, h.ok, h.reasons, h.error), ("ok", True, [], None))
        self.assertTrue(h.checks)
        self.assertEqual([n for n, chk in h.checks.items() if not chk.ok], [])
        self.assertEqual(c.info()["api_version"], "1")
        self.assertEqual(c.socket, os.environ["SANDBOXD_SOCKET"])
        self.assertEqual(c.node()["state"], "ready")

    def test_drain(self) -> None:
        c = Client()
        if os.geteuid() != 0:
            with self.assertRaises(sandboxd.PermissionDenied):
                c.drain()
            self.assertEqual(c.node()["state"], "ready")
            return
        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.run_code("x = 5")
            try:
                n = c.drain()
                self.assertEqual((n["state"], c.node()["state"]), ("draining", "draining"))
                # New work is refused, with a time to come back.
                with self.assertRaises(Unavailable) as cm:
                    Sandbox(labels={"run": RUN})
                self.assertEqual((cm.exception.status, cm.exception.retry_after), (503, 30.0))
                with self.assertRaises(Unavailable):
                    run("print(1)")
                # A session runs on.
                self.assertEqual(sbx.run_code("x").result, "5")
            finally:
                # Whatever failed, the node takes sessions again for the other tests.
                self.assertEqual(c.drain(False)["state"], "ready")
            self.assertEqual(c.drain(on=False)["state"], "ready")
            with Sandbox(labels={"run": RUN}) as other:
                self.assertEqual(other.run_code("1 + 1").result, "2")

    def test_unreachable(self) -> None:
        with self.assertRaises(sandboxd.Unavailable) as cm:
            Client("/nonexistent/sandboxd.sock").health()
        self.assertIn("is it running?", cm.exception.message)


class TestAsync(unittest.TestCase):
    def test_basics(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create(memory_mb=256, labels={"run": RUN, "async": "yes"}) as sbx:
                r = await sbx.run_code("x = 6 * 7\nx")
                self.assertEqual(r.result, "42")
                self.assertIs(await sbx.interrupt(), False)

                got: list[str] = []

                async def collect(s: str) -> None:
                    await asyncio.sleep(0)
                    got.append(s)

                r = await sbx.run_code("for i in range(3): print(i)", on_stdout=collect)
                self.assertEqual(("".join(got), r.status), ("0\n1\n2\n", "ok"))

                shown: list[Any] = []

                async def show(o: Any) -> None:
                    await asyncio.sleep(0)
                    shown.append(o)

                r = await sbx.run_code("class H:\n    def _repr_html_(self): return '<b>h</b>'\ndisplay(H())", on_display=show)
                self.assertEqual(([o.html for o in shown], r.outputs), (["<b>h</b>"], shown))

                c = await sbx.commands.run("echo hi")
                self.assertEqual((c.exit_code, c.stdout), (0, "hi\n"))
                await sbx.files.write("a.bin", b"\x00\x01")
                # Calls of one sandbox may run at once.
                data, entries, stats = await asyncio.gather(sbx.files.read("a.bin"), sbx.files.list("."), sbx.stats())
                self.assertEqual(data, b"\x00\x01")
                self.assertIn("a.bin", [e.name for e in entries])
                self.assertEqual(stats.memory_limit_bytes, 256 << 20)
                listed = await AsyncSandbox.list(labels={"run": RUN, "async": "yes"})
                self.assertEqual([s.id for s in listed], [sbx.id])
                same = await AsyncSandbox.connect(sbx.id)
                self.assertEqual((await same.run_code("x")).result, "42")
                with self.assertRaises(NotFound):
                    await AsyncSandbox.connect("nosuchsession0000")
                self.assertEqual((await run_async("print(2)")).stdout, "2\n")

                # Started, then waited for on the loop.
                eid = await sbx.submit(TICKS)
                e = await sbx.execution(eid)
                self.assertIn(e.status, ("running", "ok"))
                e = await sbx.wait_execution(eid, timeout=30, poll_interval=0.1)
                self.assertEqual((e.status, e.stdout), ("ok", "tick 0\ntick 1\ntick 2\n"))
                eid = await sbx.commands.submit("exit 4")
                self.assertEqual((await sbx.wait_execution(eid)).exit_code, 4)
                hist = await sbx.executions(2)
                self.assertEqual([h.id for h in hist], [eid, e.id])
            self.assertEqual(await AsyncSandbox.list(labels={"run": RUN, "async": "yes"}), [])

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
