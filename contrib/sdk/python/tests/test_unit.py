"""Tests of the SDK against a fake daemon on a Unix socket: what goes on the
wire, and how each answer comes back (errors by code, streams, files,
timeouts). No sandboxd needed; test_sdk.py drives a real one."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socketserver
import tempfile
import threading
import time
import unittest
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

import sandboxd
from sandboxd import (
    AsyncSandbox,
    Client,
    Conflict,
    Internal,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    ProtocolError,
    RequestTimeout,
    ResourceExhausted,
    Sandbox,
    SandboxdError,
    Unavailable,
)

SESSION = {
    "id": "3f2a9c0d1e4b5a67",
    "owner_uid": 0,
    "template": "python",
    "status": "running",
    "created_at": "2026-01-02T03:04:05.123456789Z",
    "last_used_at": "0001-01-01T00:00:00Z",
    "exec_count": 0,
    "limits": {"memory_mb": 256, "cpus": 1.0, "pids": 256, "disk_mb": 1024, "timeout_s": 30, "idle_timeout_s": 3600},
    "network": "none",
    "labels": {"agent": "a1"},
    "runtime": "runc",
    "a_field_from_a_newer_daemon": True,
}

EXECUTION = {
    "id": "e1",
    "session_id": SESSION["id"],
    "language": "python",
    "status": "ok",
    "stdout": "0\n1\n",
    "stderr": "",
    "exit_code": 0,
    "result": "42",
    "outputs": [{"mime": "image/png", "data": base64.b64encode(b"\x89PNG").decode()}],
    "started_at": "2026-01-02T03:04:05Z",
    "duration_ms": 3.2,
    "truncated": False,
    "state_reset": False,
}


METRICS = {"wall_ms": 3.2, "cpu_ms": 2.9, "memory_peak_bytes": 31457280}

SUMMARIES = [
    # One running (no exit code yet), one ended, one from an older daemon.
    {"id": "e3", "language": "shell", "code_sha256": "ab" * 32, "caller_uid": 1000, "started_at": "2026-01-02T03:04:07Z", "duration_ms": 0, "status": "running", "metrics": METRICS},
    {"id": "e2", "language": "python", "code_sha256": "cd" * 32, "caller_uid": 0, "started_at": "2026-01-02T03:04:06Z", "duration_ms": 3.2, "status": "error", "exit_code": 1, "metrics": METRICS, "truncated": True},
    {"id": "e1", "language": "python", "started_at": "2026-01-02T03:04:05Z", "duration_ms": 1.5, "status": "ok", "exit_code": 0},
]


class Reply:
    """What the fake daemon answers: a status, a JSON or raw body, headers,
    or NDJSON lines sent one chunk each (after an optional pause)."""

    def __init__(
        self,
        status: int = 200,
        body: Any = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        lines: list[Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.status, self.body, self.raw, self.headers, self.lines, self.delay = status, body, raw, headers or {}, lines, delay


class Seen:
    """One request the fake daemon took."""

    def __init__(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes) -> None:
        self.method, self.path, self.query, self.headers, self.body = method, path, query, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


class FakeDaemon:
    """An HTTP/1.1 server on a Unix socket; route(method, path) → Reply."""

    def __init__(self, route: Callable[[Seen], Reply]) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.socket = os.path.join(self.dir.name, "s.sock")
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                u = urllib.parse.urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Transfer-Encoding") == "chunked":
                    body = b""
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        chunk = self.rfile.read(size)
                        self.rfile.readline()
                        if size == 0:
                            break
                        body += chunk
                else:
                    body = self.rfile.read(n)
                seen = Seen(self.command, u.path, urllib.parse.parse_qs(u.query), {k.lower(): v for k, v in self.headers.items()}, body)
                fake.seen.append(seen)
                r = route(seen)
                if r.delay:
                    time.sleep(r.delay)
                if r.lines is not None:
                    self.send_response(r.status)
                    self.send_header("Content-Type", "application/x-ndjson")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for ln in r.lines:
                        b = ln if isinstance(ln, bytes) else (json.dumps(ln) + "\n").encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                        self.wfile.flush()
                        time.sleep(0.01)
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if r.raw is not None:
                    data, ctype = r.raw, "application/octet-stream"
                else:
                    data, ctype = (json.dumps(r.body).encode() if r.body is not None else b""), "application/json"
                self.send_response(r.status)
                self.send_header("Content-Type", r.headers.pop("Content-Type", ctype))
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Request-Id", "req-1")
                for k, v in r.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that hangs up on a stream (an error line) is expected.
                pass

        self.server = Server(self.socket, Handler)
        # BaseHTTPRequestHandler reads client_address[0]; a Unix peer has none.
        self.server.get_request = lambda: (self.server.socket.accept()[0], ("fake", 0))  # type: ignore
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.dir.cleanup()


def error(status: int, code: str, message: str, **headers: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}}, headers=headers)


class FakeTestCase(unittest.TestCase):
    def serve(self, route: Callable[[Seen], Reply]) -> FakeDaemon:
        d = FakeDaemon(route)
        self.addCleanup(d.close)
        return d


class TestErrors(FakeTestCase):
    def test_codes(self) -> None:
        cases = [
            # (status, code, class)
            (400, "invalid_argument", InvalidArgument),
            (404, "not_found", NotFound),
            (409, "conflict", Conflict),
            (403, "permission_denied", PermissionDenied),
            (413, "payload_too_large", PayloadTooLarge),
            (429, "resource_exhausted", ResourceExhausted),
            (500, "internal", Internal),
            (503, "unavailable", Unavailable),
            (502, "bad_gateway", sandboxd.BadGateway),
            # A code this SDK does not know takes its status's class and keeps its code.
            (404, "gone_elsewhere", NotFound),
            (418, "teapot", SandboxdError),
        ]
        for status, code, cls in cases:
            with self.subTest(code=code):
                d = self.serve(lambda s: error(status, code, f"it failed: {code}"))
                with self.assertRaises(cls) as cm:
                    Client(d.socket).get_session("x")
                e = cm.exception
                self.assertIs(type(e), cls)
                self.assertEqual((e.code, e.status, e.message, e.request_id), (code, status, f"it failed: {code}", "req-1"))
                self.assertEqual(str(e), f"it failed: {code}")

    def test_builtin_bases(self) -> None:
        self.assertTrue(issubclass(InvalidArgument, ValueError))
        self.assertTrue(issubclass(NotFound, LookupError))
        self.assertTrue(issubclass(RequestTimeout, TimeoutError))

    def test_retry_after(self) -> None:
        d = self.serve(lambda s: error(429, "resource_exhausted", "too many sessions", **{"Retry-After": "3"}))
        with self.assertRaises(ResourceExhausted) as cm:
            Client(d.socket).create_session()
        self.assertEqual(cm.exception.retry_after, 3.0)

    def test_body_not_json(self) -> None:
        d = self.serve(lambda s: Reply(502, raw=b"upstream fell over\n"))
        with self.assertRaises(sandboxd.BadGateway) as cm:
            Client(d.socket).health()
        self.assertEqual(cm.exception.message, "upstream fell over")

    def test_no_daemon(self) -> None:
        with tempfile.TemporaryDirectory() as dir:
            path = os.path.join(dir, "none.sock")
            with self.assertRaises(Unavailable) as cm:
                Client(path).health()
            self.assertIn("is it running?", cm.exception.message)
            self.assertIsNone(cm.exception.status)

    def test_request_timeout(self) -> None:
        d = self.serve(lambda s: Reply(200, {"status": "ok"}, delay=1.0))
        t0 = time.monotonic()
        with self.assertRaises(RequestTimeout):
            Client(d.socket, request_timeout=0.2).health()
        self.assertLess(time.monotonic() - t0, 0.9)


class TestRequests(FakeTestCase):
    def test_create_fields(self) -> None:
        d = self.serve(lambda s: Reply(201, SESSION))
        # A whole float goes as an int; a single allow entry as a list.
        sbx = Sandbox(template="python", memory_mb=256, cpus=0.5, timeout_s=10.0, labels={"agent": "a1"}, allow="pypi.org", socket=d.socket)  # type: ignore[arg-type]
        self.assertEqual(
            d.seen[0].json(),
            {"template": "python", "memory_mb": 256, "cpus": 0.5, "timeout_s": 10, "labels": {"agent": "a1"}, "allow": ["pypi.org"]},
        )
        self.assertEqual(d.seen[0].headers["content-type"], "application/json")
        self.assertIsInstance(d.seen[0].json()["timeout_s"], int)
        s = sbx.session
        self.assertEqual((sbx.id, s.status, s.limits.memory_mb, s.labels, s.runtime), (SESSION["id"], "running", 256, {"agent": "a1"}, "runc"))
        self.assertEqual(s.created_at.year if s.created_at else 0, 2026)
        self.assertIsNone(s.last_used_at)
        # A daemon that grants no MCP server omits mcp_servers.
        self.assertEqual(s.mcp_servers, [])

    def test_create_mcp_servers(self) -> None:
        d = self.serve(lambda s: Reply(201, {**SESSION, "mcp_servers": ["github", "slack"]}))
        sbx = Sandbox(mcp_servers=("github", "slack"), socket=d.socket)
        self.assertEqual(d.seen[0].json(), {"mcp_servers": ["github", "slack"]})
        self.assertEqual(sbx.session.mcp_servers, ["github", "slack"])
        # A single name goes as a list, as allow's does; junk reads as none.
        Client(d.socket).create_session(mcp_servers="github")
        self.assertEqual(d.seen[1].json(), {"mcp_servers": ["github"]})
        self.assertEqual(sandboxd.Session.from_json({"id": "s", "mcp_servers": "github"}).mcp_servers, [])

    def test_create_idle_action(self) -> None:
        d = self.serve(lambda s: Reply(201, {**SESSION, "idle_action": "pause"}))
        sbx = Sandbox(idle_action="pause", socket=d.socket)
        self.assertEqual(d.seen[0].json(), {"idle_action": "pause"})
        self.assertEqual(sbx.session.idle_action, "pause")
        Client(d.socket).create_session(idle_action="stop")
        self.assertEqual(d.seen[1].json(), {"idle_action": "stop"})
        # A daemon that does not say reads as "".
        self.assertEqual(sandboxd.Session.from_json(SESSION).idle_action, "")

    def test_create_name(self) -> None:
        d = self.serve(lambda s: Reply(201, {**SESSION, "name": "build-1"}))
        sbx = Sandbox(name="build-1", socket=d.socket)
        self.assertEqual(d.seen[0].json(), {"name": "build-1"})
        self.assertEqual(sbx.session.name, "build-1")
        self.assertEqual(sandboxd.Session.from_json(SESSION).name, "")

    def test_deadline(self) -> None:
        deadline = "2026-11-29T02:00:00Z"

        def route(s: Seen) -> Reply:
            body = s.json() if s.body else {}
            if s.method == "PATCH" and body.get("deadline_s") == 0:
                return Reply(200, SESSION)
            if s.method == "PATCH" and body.get("deadline_s", 0) < 0:
                return error(400, "invalid_argument", "deadline_s must be 0 or more seconds, not -1")
            return Reply(201 if s.method == "POST" else 200, {**SESSION, "deadline": deadline})

        d = self.serve(route)
        # A whole float goes as an int, as the other whole-number fields do.
        sbx = Sandbox(deadline_s=600.0, socket=d.socket)  # type: ignore[arg-type]
        self.assertEqual(d.seen[0].json(), {"deadline_s": 600})
        self.assertIsInstance(d.seen[0].json()["deadline_s"], int)
        self.assertEqual(sbx.session.deadline, datetime(2026, 11, 29, 2, 0, tzinfo=timezone.utc))
        s = sbx.set_deadline(3600)
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path, raw.json()), ("PATCH", f"/v1/sessions/{sbx.id}", {"deadline_s": 3600}))
        self.assertIsNotNone(s.deadline)
        # 0 removes it: it goes (it is not "absent"), and the answer has none.
        s = sbx.set_deadline(0)
        self.assertEqual((d.seen[-1].json(), s.deadline, sbx.session.deadline), ({"deadline_s": 0}, None, None))
        self.assertIsNotNone(asyncio.run(AsyncSandbox(sbx).set_deadline(60)).deadline)
        c = Client(d.socket)
        self.assertIsNotNone(c.update_session("s1", deadline_s=60).deadline)
        self.assertEqual(d.seen[-1].path, "/v1/sessions/s1")
        with self.assertRaises(InvalidArgument):
            c.update_session("s1", deadline_s=-1)
        # A daemon that does not say has no deadline.
        self.assertIsNone(sandboxd.Session.from_json(SESSION).deadline)

    def test_interrupt(self) -> None:
        answer = {"interrupted": True}

        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.path == "/v1/sessions/gone/interrupt":
                return error(404, "not_found", "no session gone")
            return Reply(200, answer)

        d = self.serve(route)
        c = Client(d.socket)
        sbx = Sandbox(socket=d.socket)
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("s1", lambda: c.interrupt("s1")),
            (sbx.id, sbx.interrupt),
            (sbx.id, lambda: asyncio.run(AsyncSandbox(sbx).interrupt())),
        ]
        for id, call in cases:
            for interrupted in (True, False):
                with self.subTest(id=id, interrupted=interrupted):
                    answer["interrupted"] = interrupted
                    d.seen.clear()
                    self.assertIs(call(), interrupted)
                    raw = d.seen[0]
                    self.assertEqual((raw.method, raw.path, raw.body), ("POST", f"/v1/sessions/{id}/interrupt", b""))
        with self.assertRaises(NotFound):
            c.interrupt("gone")

    def test_pause_resume(self) -> None:
        status = {"pause": "paused", "resume": "running", "hibernate": "hibernated"}

        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.path == "/v1/sessions/busy/pause":
                return error(409, "conflict", "an execution is running: interrupt it or wait")
            return Reply(200, {**SESSION, "status": status[s.path.rsplit("/", 1)[1]]})

        d = self.serve(route)
        c = Client(d.socket)
        for op, call in (("pause", c.pause_session), ("resume", c.resume_session), ("hibernate", c.hibernate_session)):
            with self.subTest(op=op):
                d.seen.clear()
                self.assertEqual(call("s1").status, status[op])
                raw = d.seen[0]
                self.assertEqual((raw.method, raw.path, raw.body), ("POST", f"/v1/sessions/s1/{op}", b""))
        sbx = Sandbox(socket=d.socket)
        s = sbx.pause()
        self.assertEqual((s.status, sbx.session.status, d.seen[-1].path), ("paused", "paused", f"/v1/sessions/{sbx.id}/pause"))
        s = sbx.resume()
        self.assertEqual((s.status, sbx.session.status, d.seen[-1].path), ("running", "running", f"/v1/sessions/{sbx.id}/resume"))

        async def main() -> list[str]:
            a = AsyncSandbox(sbx)
            return [(await a.pause()).status, a.session.status, (await a.resume()).status, a.session.status]

        self.assertEqual(asyncio.run(main()), ["paused", "paused", "running", "running"])
        with self.assertRaises(Conflict) as cm:
            c.pause_session("busy")
        self.assertEqual((cm.exception.code, cm.exception.status), ("conflict", 409))

    def test_create_idempotency_key(self) -> None:
        made: dict[str, Any] = {}

        def route(s: Seen) -> Reply:
            key = s.headers.get("idempotency-key")
            if key is None:
                return Reply(201, SESSION)
            if key in made:
                if made[key] != s.json():
                    return error(409, "conflict", f"Idempotency-Key {key} made session {SESSION['id']} with another request")
                return Reply(200, SESSION)
            made[key] = s.json()
            return Reply(201, SESSION)

        d = self.serve(route)
        c = Client(d.socket)
        # Without a key, no header: a plain create, as before.
        self.assertEqual(c.create_session(labels={"a": "1"}).id, SESSION["id"])
        self.assertNotIn("idempotency-key", d.seen[-1].headers)
        # The key goes as the header, never in the body; 201 then 200.
        s, created = c.create_session_once("k-1", memory_mb=256)
        self.assertEqual((s.id, created, d.seen[-1].headers["idempotency-key"], d.seen[-1].json()), (SESSION["id"], True, "k-1", {"memory_mb": 256}))
        s, created = c.create_session_once("k-1", memory_mb=256)
        self.assertEqual((s.id, created), (SESSION["id"], False))
        self.assertEqual(c.create_session(idempotency_key="k-1", memory_mb=256).id, SESSION["id"])
        self.assertEqual(d.seen[-1].headers["idempotency-key"], "k-1")
        # The key with another request is a conflict.
        with self.assertRaises(Conflict):
            c.create_session(idempotency_key="k-1", memory_mb=512)
        # An empty key would be none: refused before anything is sent.
        n = len(d.seen)
        with self.assertRaises(ValueError):
            c.create_session(idempotency_key="")
        self.assertEqual(len(d.seen), n)

        # Sandbox says whether it made the session; connect never did.
        sbx = Sandbox(idempotency_key="k-2", labels={"agent": "a1"}, socket=d.socket)
        self.assertEqual((sbx.created, d.seen[-1].headers["idempotency-key"], d.seen[-1].json()), (True, "k-2", {"labels": {"agent": "a1"}}))
        again = Sandbox(idempotency_key="k-2", labels={"agent": "a1"}, socket=d.socket)
        self.assertEqual((again.id, again.created), (sbx.id, False))
        self.assertTrue(Sandbox(socket=d.socket).created)
        self.assertFalse(Sandbox.connect(sbx.id, socket=d.socket).created)

        async def main() -> list[bool]:
            a = await AsyncSandbox.create(idempotency_key="k-3", socket=d.socket)
            b = await AsyncSandbox.create(idempotency_key="k-3", socket=d.socket)
            return [a.created, b.created]

        self.assertEqual(asyncio.run(main()), [True, False])
        # A Toolbox takes it as any argument of Sandbox.
        from sandboxd.tools import Toolbox

        with Toolbox(idempotency_key="k-4", socket=d.socket) as tb:
            self.assertEqual(tb.sandbox.id, SESSION["id"])
            self.assertEqual(d.seen[-1].headers["idempotency-key"], "k-4")

    def test_start_exec(self) -> None:
        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.path == "/v1/sessions/bad/exec":
                return Reply(202, {"eid": "e9"})  # not the contract's answer
            return Reply(202, {"id": "e9"})

        d = self.serve(route)
        c = Client(d.socket)
        self.assertEqual(c.start_exec("s1", "x", language="shell", timeout=2.5, env={"A": "1"}, cwd="sub"), "e9")
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path), ("POST", "/v1/sessions/s1/exec"))
        self.assertEqual(raw.json(), {"language": "shell", "code": "x", "timeout_s": 2.5, "env": {"A": "1"}, "cwd": "sub", "wait": False})
        self.assertNotIn("accept", raw.headers)
        sbx = Sandbox(socket=d.socket)
        cases: list[tuple[Callable[[], str], dict[str, Any]]] = [
            (lambda: sbx.submit("print(1)"), {"language": "python", "code": "print(1)", "wait": False}),
            (lambda: sbx.submit("ls", language="shell", timeout=1), {"language": "shell", "code": "ls", "timeout_s": 1, "wait": False}),
            (lambda: sbx.commands.submit("make", cwd="p"), {"language": "shell", "code": "make", "cwd": "p", "wait": False}),
            (lambda: asyncio.run(AsyncSandbox(sbx).submit("1")), {"language": "python", "code": "1", "wait": False}),
            (lambda: asyncio.run(AsyncSandbox(sbx).commands.submit("ls")), {"language": "shell", "code": "ls", "wait": False}),
        ]
        for call, body in cases:
            with self.subTest(body=body):
                self.assertEqual(call(), "e9")
                self.assertEqual((d.seen[-1].path, d.seen[-1].json()), (f"/v1/sessions/{sbx.id}/exec", body))
        with self.assertRaises(ProtocolError):
            c.start_exec("bad", "x")

    def test_execution_and_wait(self) -> None:
        polls = {"left": 0}

        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.path.endswith("/gone"):
                return error(404, "not_found", "no execution gone in session s1")
            if s.path.endswith("/forever"):
                return Reply(200, {**EXECUTION, "status": "running", "stdout": "tick\n"})
            if polls["left"] > 0:
                polls["left"] -= 1
                return Reply(200, {**EXECUTION, "id": "e9", "status": "running", "stdout": "0\n", "result": None, "outputs": []})
            return Reply(200, {**EXECUTION, "id": "e9", "metrics": METRICS, "code_sha256": "ab" * 32, "caller_uid": 1000})

        d = self.serve(route)
        c = Client(d.socket)
        polls["left"] = 1
        e = c.execution("s1", "a/b")
        self.assertEqual((d.seen[-1].method, d.seen[-1].path), ("GET", "/v1/sessions/s1/executions/a%2Fb"))
        self.assertEqual((e.status, e.stdout, e.result, e.ok), ("running", "0\n", None, False))
        e = c.execution("s1", "e9")
        self.assertEqual((e.status, e.result, e.caller_uid, e.code_sha256), ("ok", "42", 1000, "ab" * 32))
        self.assertEqual(e.metrics, sandboxd.ExecMetrics(wall_ms=3.2, cpu_ms=2.9, memory_peak_bytes=31457280))

        # It asks until the execution no longer runs.
        sbx = Sandbox(socket=d.socket)
        for name, wait in (
            ("client", lambda: c.wait_execution("s1", "e9", poll_interval=0.01)),
            ("sandbox", lambda: sbx.wait_execution("e9", poll_interval=0.01)),
            ("async", lambda: asyncio.run(AsyncSandbox(sbx).wait_execution("e9", poll_interval=0.01))),
        ):
            with self.subTest(wait=name):
                polls["left"] = 3
                d.seen.clear()
                e = wait()
                self.assertEqual((e.status, e.id, len(d.seen)), ("ok", "e9", 4))
                self.assertTrue(all(r.method == "GET" and r.path.endswith("/executions/e9") for r in d.seen))
        self.assertEqual(sbx.execution("e9").status, "ok")
        self.assertEqual(asyncio.run(AsyncSandbox(sbx).execution("e9")).status, "ok")

        # A bounded wait gives up with RequestTimeout; the execution runs on.
        for name, wait in (
            ("sandbox", lambda: sbx.wait_execution("forever", timeout=0.2, poll_interval=0.05)),
            ("async", lambda: asyncio.run(AsyncSandbox(sbx).wait_execution("forever", timeout=0.2, poll_interval=0.05))),
        ):
            with self.subTest(wait=name):
                t0 = time.monotonic()
                with self.assertRaises(RequestTimeout) as cm:
                    wait()
                self.assertLess(time.monotonic() - t0, 2)
                self.assertIn("forever", cm.exception.message)
        with self.assertRaises(NotFound):
            sbx.wait_execution("gone")
        with self.assertRaises(ValueError):
            c.wait_execution("s1", "e9", poll_interval=0)

    def test_executions_are_summaries(self) -> None:
        d = self.serve(lambda s: Reply(201, SESSION) if s.path == "/v1/sessions" else Reply(200, {"executions": [*SUMMARIES, "junk"]}))
        sbx = Sandbox(socket=d.socket)
        for name, call in (
            ("client", lambda: sbx.client.executions(sbx.id, limit=3)),
            ("sandbox", lambda: sbx.executions(3)),
            ("async", lambda: asyncio.run(AsyncSandbox(sbx).executions(3))),
        ):
            with self.subTest(call=name):
                running, failed, old = call()
                self.assertEqual(d.seen[-1].query, {"limit": ["3"]})
                self.assertIsInstance(running, sandboxd.ExecutionSummary)
                self.assertEqual((running.id, running.status, running.exit_code, running.caller_uid, running.ok), ("e3", "running", None, 1000, False))
                self.assertEqual(running.metrics, sandboxd.ExecMetrics(3.2, 2.9, 31457280))
                # uid 0 (root) is a uid, not an absent one.
                self.assertEqual((failed.exit_code, failed.caller_uid, failed.truncated, failed.code_sha256, failed.duration_ms), (1, 0, True, "cd" * 32, 3.2))
                self.assertEqual((old.exit_code, old.ok, old.metrics, old.caller_uid, old.code_sha256), (0, True, None, None, ""))
                self.assertEqual(old.started_at, datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
                # Summaries hold no output.
                self.assertFalse(hasattr(running, "stdout"))

    def test_drain(self) -> None:
        def route(s: Seen) -> Reply:
            if s.method == "GET":
                return Reply(200, {"node_id": "n1", "state": "ready"})
            return Reply(200, {"node_id": "n1", "state": "draining" if s.json()["drain"] else "ready"})

        d = self.serve(route)
        c = Client(d.socket)
        self.assertEqual(c.node()["state"], "ready")
        for call, on, state in ((lambda: c.drain(), True, "draining"), (lambda: c.drain(False), False, "ready"), (lambda: c.drain(on=True), True, "draining")):
            with self.subTest(on=on):
                n = call()
                raw = d.seen[-1]
                self.assertEqual((raw.method, raw.path, raw.json(), n["state"], n["node_id"]), ("POST", "/v1/node/drain", {"drain": on}, state, "n1"))
        d2 = self.serve(lambda s: error(403, "permission_denied", "only root may drain the node"))
        with self.assertRaises(PermissionDenied):
            Client(d2.socket).drain()

    def test_default_socket_from_env(self) -> None:
        d = self.serve(lambda s: Reply(200, {"status": "ok"}))
        old = os.environ.get("SANDBOXD_SOCKET")
        os.environ["SANDBOXD_SOCKET"] = d.socket
        try:
            self.assertEqual(Client().health(), "ok")
        finally:
            if old is None:
                del os.environ["SANDBOXD_SOCKET"]
            else:
                os.environ["SANDBOXD_SOCKET"] = old

    def test_paths_and_queries(self) -> None:
        d = self.serve(lambda s: Reply(200, {"sessions": [SESSION]}))
        c = Client(d.socket)
        cases = [
            # (call, method, path, query)
            (lambda: c.get_session("a/b?c"), "GET", "/v1/sessions/a%2Fb%3Fc", {}),
            (lambda: c.list_sessions("agent=a1", labels={"team": "x y"}), "GET", "/v1/sessions", {"label": ["agent=a1", "team=x y"]}),
            (lambda: c.list_sessions(["a=1", "b=2"]), "GET", "/v1/sessions", {"label": ["a=1", "b=2"]}),
            (lambda: c.executions("s1", limit=5), "GET", "/v1/sessions/s1/executions", {"limit": ["5"]}),
            (lambda: c.executions("s1"), "GET", "/v1/sessions/s1/executions", {}),
        ]
        for call, method, path, query in cases:
            with self.subTest(path=path, query=query):
                d.seen.clear()
                call()
                raw = d.seen[0]
                self.assertEqual((raw.method, raw.query), (method, query))
        d.seen.clear()
        c.get_session("a/b?c")
        self.assertEqual(len(d.seen), 1)

    def test_bad_label_filter(self) -> None:
        with self.assertRaises(ValueError):
            Client("/nonexistent").list_sessions("agent")

    def test_unknown_session_field(self) -> None:
        with self.assertRaises(TypeError):
            Client("/nonexistent").create_session(memroy_mb=1)

    def test_exec_body(self) -> None:
        d = self.serve(lambda s: Reply(200, EXECUTION))
        e = Client(d.socket).exec("s1", "x", language="shell", timeout=2.5, env={"A": "1"}, cwd="sub")
        self.assertEqual(d.seen[0].json(), {"language": "shell", "code": "x", "timeout_s": 2.5, "env": {"A": "1"}, "cwd": "sub"})
        self.assertEqual((e.result, e.status, e.ok, e.outputs[0].png, e.outputs[0].html), ("42", "ok", True, b"\x89PNG", None))

    def test_run_body(self) -> None:
        d = self.serve(lambda s: Reply(200, EXECUTION))
        sandboxd.run("print(1)", files={"a.txt": "hi", "b.bin": b"\x00\xff"}, timeout=1.5, memory_mb=128, mcp_servers=["github"], socket=d.socket)
        self.assertEqual(d.seen[0].path, "/v1/run")
        self.assertEqual(
            d.seen[0].json(),
            {
                "memory_mb": 128,
                "mcp_servers": ["github"],
                "timeout_s": 2,
                "language": "python",
                "code": "print(1)",
                "files": [{"path": "a.txt", "content_base64": "aGk="}, {"path": "b.bin", "content_base64": "AP8="}],
            },
        )


class TestStream(FakeTestCase):
    def test_callbacks_in_order(self) -> None:
        lines = [
            {"type": "stdout", "data": "0\n"},
            {"type": "stderr", "data": "warn\n"},
            {"type": "progress", "data": "a newer daemon's"},
            {"type": "stdout", "data": "1\n"},
            {"type": "done", "execution": EXECUTION},
        ]
        d = self.serve(lambda s: Reply(200, lines=lines))
        got: list[tuple[str, str]] = []
        e = Client(d.socket).exec("s1", "x", on_stdout=lambda s: got.append(("out", s)), on_stderr=lambda s: got.append(("err", s)))
        self.assertEqual(got, [("out", "0\n"), ("err", "warn\n"), ("out", "1\n")])
        self.assertEqual(e.result, "42")
        self.assertEqual(d.seen[0].headers["accept"], "application/x-ndjson")

    def test_display_events(self) -> None:
        html = {"mime": "text/html", "data": base64.b64encode(b"<b>").decode(), "bundle": {"text/html": "<b>", "text/plain": "b"}}
        lines = [
            {"type": "stdout", "data": "0\n"},
            {"type": "display", "output": html},
            {"type": "display", "output": "junk"},
            {"type": "done", "execution": dict(EXECUTION, outputs=[html])},
        ]
        d = self.serve(lambda s: Reply(200, lines=lines))
        got: list[Any] = []
        # on_display alone asks for the stream.
        e = Client(d.socket).exec("s1", "x", on_display=got.append)
        self.assertEqual([o.html for o in got], ["<b>"])
        self.assertEqual(e.outputs, got)
        self.assertEqual(d.seen[0].headers["accept"], "application/x-ndjson")

    def test_error_line(self) -> None:
        lines = [{"type": "stdout", "data": "a"}, {"type": "error", "error": {"code": "conflict", "message": "stopped: start it first"}}]
        d = self.serve(lambda s: Reply(200, lines=lines))
        with self.assertRaises(Conflict) as cm:
            Client(d.socket).exec("s1", "x", on_stdout=lambda s: None)
        self.assertEqual(cm.exception.message, "stopped: start it first")

    def test_cut_stream(self) -> None:
        d = self.serve(lambda s: Reply(200, lines=[{"type": "stdout", "data": "a"}]))
        with self.assertRaises(ProtocolError):
            Client(d.socket).exec("s1", "x", on_stdout=lambda s: None)

    def test_not_streamed(self) -> None:
        # A daemon that ignores Accept answers the Execution whole.
        d = self.serve(lambda s: Reply(200, EXECUTION))
        e = Client(d.socket).exec("s1", "x", on_stdout=lambda s: None)
        self.assertEqual(e.result, "42")

    def test_async_callbacks(self) -> None:
        lines = [{"type": "stdout", "data": str(i)} for i in range(5)] + [{"type": "done", "execution": EXECUTION}]

        def route(s: Seen) -> Reply:
            return Reply(201, SESSION) if s.path == "/v1/sessions" else Reply(200, lines=lines)

        d = self.serve(route)
        got: list[str] = []

        async def slow(s: str) -> None:
            await asyncio.sleep(0.01)
            got.append("async" + s)

        async def main() -> sandboxd.Execution:
            sbx = await AsyncSandbox.create(socket=d.socket)
            return await sbx.run_code("x", on_stdout=lambda s: got.append(s), on_stderr=slow)

        e = asyncio.run(main())
        self.assertEqual((got, e.result), (["0", "1", "2", "3", "4"], "42"))


class TestFiles(FakeTestCase):
    def test_round_trip(self) -> None:
        store: dict[str, bytes] = {}

        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            path = s.query["path"][0]
            if s.method == "PUT":
                store[path] = s.body
                return Reply(201, {"path": "/workspace/" + path, "size": len(s.body)})
            if path in (".", "/workspace"):
                return Reply(200, {"entries": [{"name": "data.bin", "type": "file", "size": 3, "mode": "-rw-r--r--", "modified_at": "2026-01-02T03:04:05Z"}]})
            return Reply(200, raw=store[path])

        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        data = bytes(range(256)) * 3
        w = sbx.files.write("data.bin", data)
        self.assertEqual((w.path, w.size), ("/workspace/data.bin", len(data)))
        self.assertEqual(d.seen[-1].headers["content-type"], "application/octet-stream")
        self.assertEqual(sbx.files.read("data.bin"), data)
        with tempfile.TemporaryFile() as f:
            f.write(b"streamed")
            f.seek(0)
            sbx.files.write("f.txt", f)
        self.assertEqual(store["f.txt"], b"streamed")
        entries = sbx.files.list()
        self.assertEqual([(e.name, e.type, e.is_dir) for e in entries], [("data.bin", "file", False)])
        with self.assertRaises(IsADirectoryError):
            sbx.files.read(".")
        with self.assertRaises(NotADirectoryError):
            sbx.files.list("data.bin")
        self.assertTrue(sbx.files.exists("data.bin"))
        self.assertFalse(sbx.files.exists("other.bin"))


PROCESS = {"pid": 42, "ppid": 1, "command": "sleep 300", "started_at": "2026-01-02T03:04:05Z", "cpu_seconds": 0.25, "rss_bytes": 4096, "detached": True}


class TestProcesses(FakeTestCase):
    def test_start_list_kill(self) -> None:
        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.method == "POST":
                return Reply(201, {"pid": 42, "command": "sleep 300", "started_at": "2026-01-02T03:04:05Z", "detached": True})
            if s.method == "GET":
                return Reply(200, {"processes": [{"pid": 1, "ppid": 0, "command": "agent", "cpu_seconds": 1, "rss_bytes": 1}, PROCESS, "junk"]})
            if s.path.endswith("/processes/7"):
                return error(404, "not_found", "no process 7 in session s")
            return Reply(204)

        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        p = sbx.processes.start(["sleep", "300"], env={"A": "1"}, cwd="sub")
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path, raw.json()), ("POST", f"/v1/sessions/{sbx.id}/processes", {"argv": ["sleep", "300"], "env": {"A": "1"}, "cwd": "sub"}))
        self.assertEqual((p.pid, p.command, p.detached, p.exit_code, p.ppid), (42, "sleep 300", True, None, 0))
        self.assertEqual(p.started_at, datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
        # A string is a command line for /bin/sh.
        sbx.processes.start("echo hi && sleep 1")
        self.assertEqual(d.seen[-1].json(), {"argv": ["/bin/sh", "-c", "echo hi && sleep 1"]})
        # The client takes argv alone: a string would be one word a character.
        with self.assertRaises(TypeError):
            sbx.client.start_process(sbx.id, "sleep 300")  # type: ignore[arg-type]

        ps = sbx.processes.list()
        self.assertEqual([(x.pid, x.detached) for x in ps], [(1, False), (42, True)])
        self.assertEqual((ps[1].cpu_seconds, ps[1].rss_bytes, ps[0].started_at), (0.25, 4096, None))

        self.assertTrue(sbx.processes.kill(42))
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.path, raw.query), ("DELETE", f"/v1/sessions/{sbx.id}/processes/42", {"signal": ["TERM"]}))
        self.assertTrue(sbx.processes.kill(42, "KILL"))
        self.assertEqual(d.seen[-1].query, {"signal": ["KILL"]})
        self.assertTrue(sbx.processes.kill(42, 9))
        self.assertEqual(d.seen[-1].query, {"signal": ["9"]})
        sbx.client.signal_process(sbx.id, 42, None)
        self.assertEqual(d.seen[-1].query, {})
        self.assertFalse(sbx.processes.kill(7))
        with self.assertRaises(NotFound):
            sbx.client.signal_process(sbx.id, 7)

    def test_logs_and_follow(self) -> None:
        # The process writes "one\n", then "two\n", then ends with 3; the
        # fake serves the log from the offset asked, as the daemon does.
        log = {"data": b"", "running": True, "exit": None, "asks": 0}
        script = [(b"one\n", True, None), (b"", True, None), (b"two\n", True, None), (b"", False, 3)]

        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.path.endswith("/processes/9/logs"):
                return error(404, "not_found", "no output of process 9: it was not started in the background")
            if s.path.endswith("/processes/8/logs"):
                return Reply(200, raw=b"x")  # no Sandboxd-Process-Running
            i = min(log["asks"], len(script) - 1)
            log["asks"] += 1
            more, running, code = script[i]
            log["data"] += more
            headers = {"Sandboxd-Process-Running": "true" if running else "false"}
            if code is not None:
                headers["Sandboxd-Process-Exit-Code"] = str(code)
            off = int(s.query.get("offset", ["0"])[0])
            return Reply(200, raw=log["data"][off:], headers=headers)

        d = self.serve(route)
        sbx = Sandbox(socket=d.socket)
        got: list[bytes] = []

        def collect() -> Any:
            code = yield from sbx.processes.follow(5, poll_interval=0.01)
            return code

        gen = collect()
        try:
            while True:
                got.append(next(gen))
        except StopIteration as stop:
            code = stop.value
        self.assertEqual((got, code), ([b"one\n", b"two\n"], 3))
        offsets = [r.query.get("offset", ["0"])[0] for r in d.seen if r.path.endswith("/logs")]
        self.assertEqual(offsets, ["0", "4", "4", "8"])
        self.assertEqual(d.seen[-1].path, f"/v1/sessions/{sbx.id}/processes/5/logs")

        # One read: what is there, from an offset, and how it ended.
        lg = sbx.processes.logs(5, offset=4)
        self.assertEqual((lg.data, lg.running, lg.exit_code, lg.offset, lg.next_offset, lg.text), (b"two\n", False, 3, 4, 8, "two\n"))
        self.assertEqual(d.seen[-1].query, {"offset": ["4"]})
        log["asks"] = 0
        log["data"] = b""
        self.assertEqual(sbx.processes.wait(5, poll_interval=0.01), 3)
        log["asks"] = 0
        log["data"] = b""
        self.assertEqual(asyncio.run(AsyncSandbox(sbx).processes.wait(5, poll_interval=0.01)), 3)

        async def afollow() -> list[bytes]:
            return [c async for c in AsyncSandbox(sbx).processes.follow(5, poll_interval=0.01)]

        log["asks"] = 0
        log["data"] = b""
        self.assertEqual(asyncio.run(afollow()), [b"one\n", b"two\n"])

        with self.assertRaises(NotFound):
            sbx.processes.logs(9)
        with self.assertRaises(ProtocolError):
            sbx.processes.logs(8)
        with self.assertRaises(ValueError):
            list(sbx.processes.follow(5, poll_interval=0))

    def test_follow_timeout(self) -> None:
        d = self.serve(lambda s: Reply(201, SESSION) if s.path == "/v1/sessions" else Reply(200, raw=b"", headers={"Sandboxd-Process-Running": "true"}))
        sbx = Sandbox(socket=d.socket)
        for name, call in (
            ("sync", lambda: list(sbx.processes.follow(5, timeout=0.2, poll_interval=0.05))),
            ("async", lambda: asyncio.run(AsyncSandbox(sbx).processes.wait(5, timeout=0.2, poll_interval=0.05))),
        ):
            with self.subTest(call=name):
                t0 = time.monotonic()
                with self.assertRaises(RequestTimeout):
                    call()
                self.assertLess(time.monotonic() - t0, 2)


def _tar_of(entries: list[tuple[str, str, Any]]) -> bytes:
    """A tar stream of (name, kind, content or link target) entries."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, v in entries:
            ti = tarfile.TarInfo(name)
            if kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(ti)
            elif kind == "link":
                ti.type, ti.linkname = tarfile.SYMTYPE, v
                tf.addfile(ti)
            elif kind == "hard":
                ti.type, ti.linkname = tarfile.LNKTYPE, v
                tf.addfile(ti)
            else:
                data = v if isinstance(v, bytes) else str(v).encode()
                ti.size, ti.mode = len(data), 0o4775 if kind == "exec" else 0o644
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


class TestFolders(FakeTestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name

    def sandbox(self, tar: bytes = b"") -> tuple[FakeDaemon, Sandbox]:
        def route(s: Seen) -> Reply:
            if s.path == "/v1/sessions":
                return Reply(201, SESSION)
            if s.method == "PUT":
                return Reply(201, {"path": "/workspace", "size": 11, "files": 2})
            return Reply(200, raw=tar, headers={"Content-Type": "application/x-tar"})

        d = self.serve(route)
        return d, Sandbox(socket=d.socket)

    def test_upload_dir(self) -> None:
        import io
        import tarfile

        src = os.path.join(self.dir, "proj")
        os.makedirs(os.path.join(src, "sub", "deeper"))
        with open(os.path.join(src, "a.txt"), "w") as f:
            f.write("hello")
        with open(os.path.join(src, "sub", "deeper", "b.bin"), "wb") as f:
            f.write(bytes(range(256)) * 5)
        os.chmod(os.path.join(src, "sub", "deeper", "b.bin"), 0o755)
        os.symlink("../a.txt", os.path.join(src, "sub", "rel"))
        os.symlink("/workspace/elsewhere", os.path.join(src, "abs"))
        long = "n" * 150
        with open(os.path.join(src, long), "w") as f:
            f.write("long")
        os.mkfifo(os.path.join(src, "fifo"))
        d, sbx = self.sandbox()
        w = sbx.files.upload_dir(src, "dest")
        self.assertEqual((w.path, w.size, w.files), ("/workspace", 11, 2))
        raw = d.seen[-1]
        self.assertEqual((raw.method, raw.query), ("PUT", {"path": ["dest"], "format": ["tar"]}))
        self.assertEqual((raw.headers["content-type"], raw.headers.get("transfer-encoding")), ("application/x-tar", "chunked"))
        with tarfile.open(fileobj=io.BytesIO(raw.body)) as tf:
            got = {m.name: m for m in tf.getmembers()}
            self.assertEqual(tf.extractfile(got["proj/a.txt"]).read(), b"hello")  # type: ignore[union-attr]
            self.assertEqual(tf.extractfile(got["proj/sub/deeper/b.bin"]).read(), bytes(range(256)) * 5)  # type: ignore[union-attr]
        self.assertEqual(
            sorted(got),
            sorted(["proj", "proj/a.txt", "proj/abs", "proj/sub", "proj/sub/deeper", "proj/sub/deeper/b.bin", "proj/sub/rel", f"proj/{long}"]),
        )
        self.assertTrue(got["proj"].isdir() and got["proj/sub/rel"].issym())
        self.assertEqual((got["proj/sub/rel"].linkname, got["proj/abs"].linkname), ("../a.txt", "/workspace/elsewhere"))
        self.assertEqual((got["proj/sub/deeper/b.bin"].mode, got["proj/a.txt"].uid, got["proj/a.txt"].uname), (0o755, 0, ""))
        # The stream ends as a tar does: two zero blocks.
        self.assertTrue(raw.body.endswith(b"\0" * 1024))

        # A local failure is raised as itself, not as the daemon's.
        with self.assertRaises(FileNotFoundError):
            sbx.files.upload_dir(os.path.join(self.dir, "none"))
        with self.assertRaises(NotADirectoryError):
            sbx.files.upload_dir(os.path.join(src, "a.txt"))
        if os.geteuid() != 0:
            os.chmod(os.path.join(src, "sub", "deeper", "b.bin"), 0)
            with self.assertRaises(PermissionError):
                sbx.files.upload_dir(src)

    def test_download_dir(self) -> None:
        long = "d" * 120
        tar = _tar_of(
            [
                ("res", "dir", None),
                ("res/a.txt", "file", "alpha"),
                ("res/run.sh", "exec", "#!/bin/sh"),
                (f"res/{long}/deep.txt", "file", "deep"),
                ("res/link", "link", "a.txt"),
                ("res/abs", "link", "/workspace/res/a.txt"),
                ("res/hard", "hard", "res/a.txt"),
            ]
        )
        for with_filter in (True, False):
            with self.subTest(data_filter=with_filter):
                import sandboxd._tar as t

                # Without tarfile.data_filter (Python before 3.11.4), the
                # same checks and modes are the SDK's own.
                saved = t._data_filter
                if not with_filter:
                    t._data_filter = None
                try:
                    _, sbx = self.sandbox(tar)
                    out = os.path.join(self.dir, f"out-{with_filter}")
                    written = sbx.files.download_dir("res", out)
                    self.assertEqual(
                        written,
                        [os.path.join(out, "res", p) if p else os.path.join(out, "res") for p in ("", "a.txt", "run.sh", f"{long}/deep.txt", "link", "abs")],
                    )
                    with open(os.path.join(out, "res", "a.txt")) as f:
                        self.assertEqual(f.read(), "alpha")
                    with open(os.path.join(out, "res", long, "deep.txt")) as f:
                        self.assertEqual(f.read(), "deep")
                    self.assertEqual(os.readlink(os.path.join(out, "res", "link")), "a.txt")
                    self.assertEqual(os.readlink(os.path.join(out, "res", "abs")), "/workspace/res/a.txt")
                    self.assertFalse(os.path.lexists(os.path.join(out, "res", "hard")))
                    # No setuid bit; the owner may read and write.
                    self.assertEqual(os.stat(os.path.join(out, "res", "run.sh")).st_mode & 0o7777, 0o755)
                    # Again: what is there is replaced, folders merge.
                    self.assertEqual(len(sbx.files.download_dir("res", out)), 6)
                finally:
                    t._data_filter = saved

    def test_download_refuses(self) -> None:
        outside = os.path.join(self.dir, "outside")
        os.makedirs(outside)
        victim = os.path.join(outside, "victim.txt")
        cases: list[tuple[str, list[tuple[str, str, Any]], type[BaseException]]] = [
            ("absolute", [("/tmp/evil.txt", "file", "x")], ProtocolError),
            ("dotdot", [("res", "dir", None), ("res/../../evil.txt", "file", "x")], ProtocolError),
            # A link, then a file through it: never written through.
            ("through a link", [("res", "dir", None), ("res/out", "link", outside), ("res/out/evil.txt", "file", "x")], (ProtocolError, NotADirectoryError)),  # type: ignore[list-item]
            ("through a relative link", [("res", "dir", None), ("res/up", "link", "../.."), ("res/up/evil.txt", "file", "x")], (ProtocolError, NotADirectoryError)),  # type: ignore[list-item]
        ]
        import sandboxd._tar as t

        for with_filter in (True, False):
            for name, entries, exc in cases:
                with self.subTest(case=name, data_filter=with_filter):
                    saved = t._data_filter
                    if not with_filter:
                        t._data_filter = None
                    try:
                        _, sbx = self.sandbox(_tar_of(entries))
                        out = os.path.join(self.dir, "o", f"{name}-{with_filter}")
                        with self.assertRaises(exc):
                            sbx.files.download_dir("res", out)
                        self.assertEqual(os.listdir(outside), [])
                        self.assertFalse(os.path.exists("/tmp/evil.txt") and os.path.getsize("/tmp/evil.txt") == 1)
                    finally:
                        t._data_filter = saved

        # A file whose name is a symlink already there replaces the link:
        # its target is untouched.
        with open(victim, "w") as f:
            f.write("keep")
        out = os.path.join(self.dir, "replace")
        os.makedirs(os.path.join(out, "res"))
        os.symlink(victim, os.path.join(out, "res", "a.txt"))
        _, sbx = self.sandbox(_tar_of([("res", "dir", None), ("res/a.txt", "file", "new")]))
        sbx.files.download_dir("res", out)
        self.assertFalse(os.path.islink(os.path.join(out, "res", "a.txt")))
        with open(os.path.join(out, "res", "a.txt")) as f:
            self.assertEqual(f.read(), "new")
        with open(victim) as f:
            self.assertEqual(f.read(), "keep")
        os.unlink(victim)

        # A stream cut before its end is told, between entries too.
        whole = _tar_of([("res", "dir", None), ("res/a.txt", "file", "alpha"), ("res/b.txt", "file", "beta")])
        # res/ (one block), a.txt and b.txt (two each): the entries end at
        # 5 blocks, and tarfile pads the rest of its 10 KiB record.
        self.assertEqual(len(whole), 10240)
        for cut in (512 * 5, 512 * 3, 700):
            with self.subTest(cut=cut):
                _, sbx = self.sandbox(whole[:cut])
                with self.assertRaises(ProtocolError):
                    sbx.files.download_dir("res", os.path.join(self.dir, "cut"))
        _, sbx = self.sandbox(b"not a tar stream at all" * 40)
        with self.assertRaises(ProtocolError):
            sbx.files.download_dir("res", os.path.join(self.dir, "junk"))

    def test_raw_tar_calls(self) -> None:
        tar = _tar_of([("x", "dir", None)])
        d, sbx = self.sandbox(tar)
        with sbx.client.get_tar(sbx.id, "x") as stream:
            self.assertEqual(stream.read(), tar)
        self.assertEqual((d.seen[-1].method, d.seen[-1].query), ("GET", {"path": ["x"], "format": ["tar"]}))
        w = sbx.client.put_tar(sbx.id, "into", tar)
        self.assertEqual((d.seen[-1].body, d.seen[-1].query, w.files), (tar, {"path": ["into"], "format": ["tar"]}, 2))
        w = sbx.client.put_tar(sbx.id, "into", iter([tar[:100], tar[100:]]))
        self.assertEqual(d.seen[-1].body, tar)
        out = os.path.join(self.dir, "async")
        self.assertEqual(asyncio.run(AsyncSandbox(sbx).files.download_dir("x", out)), [os.path.join(out, "x")])


class FakeAttach:
    """A daemon's attach end on a Unix socket: it takes one connection,
    checks the request, answers ``head`` and then runs ``serve(conn,
    request)`` on the frames."""

    def __init__(self, head: bytes, serve: Callable[[Any, dict[str, Any]], None] | None = None) -> None:
        import socket as socketlib

        self.dir = tempfile.TemporaryDirectory()
        self.socket = os.path.join(self.dir.name, "s.sock")
        self.srv = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        self.srv.bind(self.socket)
        self.srv.listen(1)
        self.request: dict[str, Any] = {}
        self.error: BaseException | None = None

        def run() -> None:
            conn, _ = self.srv.accept()
            try:
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += conn.recv(4096)
                head_raw, _, rest = buf.partition(b"\r\n\r\n")
                lines = head_raw.decode().split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
                n = int(headers["content-length"])
                while len(rest) < n:
                    rest += conn.recv(4096)
                self.request = {"line": lines[0], "headers": headers, "body": json.loads(rest[:n]), "extra": rest[n:]}
                conn.sendall(head)
                if serve is not None:
                    serve(conn, self.request)
            except BaseException as e:  # noqa: BLE001 - told to the test
                self.error = e
            finally:
                conn.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.thread.join(5)
        self.srv.close()
        self.dir.cleanup()


def _recv_frame(conn: Any, buf: bytearray) -> tuple[int, bytes] | None:
    import struct

    def need(n: int) -> bool:
        while len(buf) < n:
            b = conn.recv(1 << 16)
            if not b:
                return False
            buf.extend(b)
        return True

    if not need(5):
        return None
    typ, n = struct.unpack(">BI", bytes(buf[:5]))
    if not need(5 + n):
        return None
    payload = bytes(buf[5 : 5 + n])
    del buf[: 5 + n]
    return typ, payload


UPGRADED = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: sandboxd-attach/1\r\nX-Request-Id: req-9\r\n\r\n"


class TestAttach(unittest.TestCase):
    def fake(self, head: bytes, serve: Callable[[Any, dict[str, Any]], None] | None = None) -> FakeAttach:
        f = FakeAttach(head, serve)
        self.addCleanup(f.close)
        return f

    def test_frames(self) -> None:
        from sandboxd import _attach as at

        self.assertEqual(at.encode_frame(0, b"hi"), b"\x00\x00\x00\x00\x02hi")
        self.assertEqual(at.encode_frame(4), b"\x04\x00\x00\x00\x00")
        self.assertEqual(at.resize_payload(24, 80), b"\x00\x18\x00\x50")
        self.assertEqual(at.resize_payload(65535, 0), b"\xff\xff\x00\x00")
        for rows, cols in ((-1, 80), (24, 65536)):
            with self.assertRaises(ValueError):
                at.resize_payload(rows, cols)
        cases = [(b"\x00\x00\x00\x03", 3), (b"\x00\x00\x00\x89", 137), (b"\xff\xff\xff\xff", -1), (b"\x80\x00\x00\x00", -(1 << 31))]
        for payload, code in cases:
            with self.subTest(code=code):
                self.assertEqual(at.parse_exit(payload), code)
        with self.assertRaises(ProtocolError):
            at.parse_exit(b"\x00\x03")
        with self.assertRaises(ValueError):
            at.encode_frame(0, b"x" * (at.MAX_FRAME + 1))
        self.assertEqual(
            at.attach_request(["python3", "-i"], tty=True, rows=30, cols=100, env={"A": 1}, cwd="sub"),  # type: ignore[dict-item]
            {"argv": ["python3", "-i"], "env": {"A": "1"}, "cwd": "sub", "tty": True, "rows": 30, "cols": 100},
        )
        self.assertEqual(at.attach_request(["ls"]), {"argv": ["ls"]})

    def test_session(self) -> None:
        got: list[tuple[int, bytes]] = []

        def serve(conn: Any, req: dict[str, Any]) -> None:
            import struct

            buf = bytearray()
            conn.sendall(struct.pack(">BI", 1, 6) + b"ready\n" + struct.pack(">BI", 2, 4) + b"warn" + struct.pack(">BI", 9, 1) + b"?")
            while True:
                f = _recv_frame(conn, buf)
                assert f is not None
                got.append(f)
                if f[0] == 4:
                    break
            data = b"".join(p for t, p in got if t == 0)
            conn.sendall(struct.pack(">BI", 1, len(data)) + data + struct.pack(">BI", 3, 4) + struct.pack(">i", 137))

        f = self.fake(UPGRADED, serve)
        c = Client(f.socket)
        with c.attach("s/1", ["cat"], tty=True, rows=24, cols=80, env={"T": "1"}, cwd="w") as a:
            self.assertEqual(a.request_id, "req-9")
            a.resize(50, 132)
            a.write(b"abc")
            a.write("déf")
            a.close_stdin()
            out = list(a.read())
            self.assertEqual(a.wait(), 137)
            self.assertEqual(a.exit_code, 137)
            with self.assertRaises(BrokenPipeError):
                a.write(b"late")
        self.assertEqual(out, [("stdout", b"ready\n"), ("stderr", b"warn"), ("stdout", "abcdéf".encode())])
        self.assertEqual(got, [(5, b"\x00\x32\x00\x84"), (0, b"abc"), (0, "déf".encode()), (4, b"")])
        r = f.request
        self.assertEqual(r["line"], "POST /v1/sessions/s%2F1/attach HTTP/1.1")
        self.assertEqual((r["headers"]["connection"], r["headers"]["upgrade"], r["headers"]["content-type"]), ("Upgrade", "sandboxd-attach/1", "application/json"))
        self.assertEqual(r["body"], {"argv": ["cat"], "env": {"T": "1"}, "cwd": "w", "tty": True, "rows": 24, "cols": 80})
        self.assertIsNone(f.error)

    def test_big_input_both_ways(self) -> None:
        # 3 MiB in, echoed back as it comes (cat): run_with_input feeds it
        # from a thread while it reads, or both ends would wait.
        import struct

        def serve(conn: Any, req: dict[str, Any]) -> None:
            buf = bytearray()
            while True:
                f = _recv_frame(conn, buf)
                assert f is not None
                if f[0] == 4:
                    break
                conn.sendall(struct.pack(">BI", 1, len(f[1])) + f[1])
            conn.sendall(struct.pack(">BI", 2, 2) + b"e!" + struct.pack(">BI", 3, 4) + struct.pack(">i", 3))

        f = self.fake(UPGRADED, serve)
        d = FakeDaemon(lambda s: Reply(201, SESSION))
        self.addCleanup(d.close)
        sbx = Sandbox(socket=d.socket)
        sbx._client = Client(f.socket)  # the attach goes to the fake attach end
        data = os.urandom(3 << 20)
        code, out, err = sbx.commands.run_with_input(["cat"], data, timeout=30)
        self.assertEqual((code, len(out), out == data, err), (3, len(data), True, b"e!"))
        self.assertEqual(f.request["body"], {"argv": ["cat"]})

    def test_run_with_input_shell_and_async(self) -> None:
        import struct

        def serve(conn: Any, req: dict[str, Any]) -> None:
            buf = bytearray()
            n = 0
            while True:
                fr = _recv_frame(conn, buf)
                assert fr is not None
                if fr[0] == 4:
                    break
                n += len(fr[1])
            out = f"{n}\n".encode()
            conn.sendall(struct.pack(">BI", 1, len(out)) + out + struct.pack(">BI", 3, 4) + struct.pack(">i", 0))

        for name in ("sync", "async"):
            with self.subTest(call=name):
                f = self.fake(UPGRADED, serve)
                d = FakeDaemon(lambda s: Reply(201, SESSION))
                self.addCleanup(d.close)
                sbx = Sandbox(socket=d.socket)
                sbx._client = Client(f.socket)
                if name == "sync":
                    got = sbx.commands.run_with_input("wc -c", "héllo")
                else:
                    got = asyncio.run(AsyncSandbox(sbx).commands.run_with_input("wc -c", "héllo"))
                self.assertEqual(got, (0, b"6\n", b""))
                self.assertEqual(f.request["body"], {"argv": ["/bin/sh", "-c", "wc -c"]})

    def test_refusals(self) -> None:
        body = json.dumps({"error": {"code": "not_found", "message": "no session s1"}}).encode()
        chunked_body = json.dumps({"error": {"code": "invalid_argument", "message": "cannot run nope: no such file"}}).encode()
        cases: list[tuple[str, bytes, type[SandboxdError], str]] = [
            (
                "by length",
                b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nX-Request-Id: r1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
                NotFound,
                "no session s1",
            ),
            (
                "chunked",
                b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(chunked_body), chunked_body),
                InvalidArgument,
                "cannot run nope: no such file",
            ),
            ("to the close", b"HTTP/1.1 409 Conflict\r\nConnection: close\r\n\r\nstopped: start it first", Conflict, "stopped: start it first"),
            ("not upgraded", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", ProtocolError, "not 101"),
            ("another protocol", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", ProtocolError, "websocket"),
            ("not http", b"SSH-2.0-OpenSSH\r\n\r\n", ProtocolError, "not an HTTP status"),
        ]
        for name, head, cls, message in cases:
            with self.subTest(case=name):
                f = self.fake(head)
                with self.assertRaises(cls) as cm:
                    Client(f.socket).attach("s1", ["ls"])
                self.assertIn(message, cm.exception.message)
                if name == "by length":
                    self.assertEqual((cm.exception.status, cm.exception.request_id), (404, "r1"))
        with self.assertRaises(TypeError):
            Client("/nonexistent").attach("s1", "ls")  # type: ignore[arg-type]
        with self.assertRaises(Unavailable):
            Client("/nonexistent/sandboxd.sock").attach("s1", ["ls"])

    def test_exit_before_a_write(self) -> None:
        # The daemon sends the exit and closes while the client has not
        # written yet: the write fails, and the exit status is still read.
        import struct

        def serve(conn: Any, req: dict[str, Any]) -> None:
            conn.sendall(struct.pack(">BI", 2, 3) + b"bye" + struct.pack(">BI", 3, 4) + struct.pack(">i", 3))

        f = self.fake(UPGRADED, serve)
        with Client(f.socket).attach("s1", ["sh", "-c", "exit 3"]) as a:
            f.thread.join(5)  # the daemon's end closed
            with self.assertRaises(BrokenPipeError):
                a.write(b"too late")
                a.close_stdin()
            self.assertEqual((list(a.read()), a.exit_code), ([("stderr", b"bye")], 3))

    def test_cut_and_timeout(self) -> None:
        import struct

        f = self.fake(UPGRADED, lambda conn, req: conn.sendall(struct.pack(">BI", 1, 2) + b"ab"))
        with Client(f.socket).attach("s1", ["ls"]) as a:
            it = a.read()
            self.assertEqual(next(it), ("stdout", b"ab"))
            with self.assertRaises(ProtocolError):
                next(it)

        f = self.fake(UPGRADED, lambda conn, req: conn.sendall(struct.pack(">BI", 1, 10) + b"ab"))
        with Client(f.socket).attach("s1", ["ls"]) as a:
            with self.assertRaises(ProtocolError):
                a.wait()

        f = self.fake(UPGRADED, lambda conn, req: conn.sendall(struct.pack(">BI", 1, (1 << 20) + 1)))
        with Client(f.socket).attach("s1", ["ls"]) as a:
            with self.assertRaises(ProtocolError):
                a.wait()

        hold = threading.Event()
        f = self.fake(UPGRADED, lambda conn, req: hold.wait(5))
        self.addCleanup(hold.set)
        with Client(f.socket).attach("s1", ["sleep", "100"]) as a:
            t0 = time.monotonic()
            with self.assertRaises(RequestTimeout):
                a.wait(timeout=0.2)
            self.assertLess(time.monotonic() - t0, 2)


class TestHealth(FakeTestCase):
    UNHEALTHY = {
        "status": "unhealthy",
        "reasons": ["database: disk I/O error"],
        "checks": {"database": {"ok": False, "detail": "disk I/O error"}, "cgroups": {"ok": True}, "junk": "x"},
        "data_dir": {"free_mb": 100, "min_free_mb": 512, "ok": False},
        "error": {"code": "unavailable", "message": "sandboxd is unhealthy: database: disk I/O error"},
    }

    def test_ok(self) -> None:
        d = self.serve(lambda s: Reply(200, {"status": "ok", "checks": {"database": {"ok": True}}, "data_dir": {"free_mb": 9000, "min_free_mb": 512, "ok": True}}))
        h = Client(d.socket).health_status()
        self.assertTrue(h.ok)
        self.assertEqual((h.status, h.reasons, h.checks["database"], h.data_dir, h.error), ("ok", [], sandboxd.HealthCheck(True, ""), sandboxd.DataDirHealth(9000, 512, True), None))
        self.assertEqual(Client(d.socket).health(), "ok")
        self.assertEqual(d.seen[-1].path, "/v1/health")

    def test_unhealthy(self) -> None:
        d = self.serve(lambda s: Reply(503, self.UNHEALTHY))
        c = Client(d.socket)
        h = c.health_status()
        self.assertFalse(h.ok)
        self.assertEqual((h.status, h.reasons, h.checks["database"].detail, h.checks["cgroups"].ok, sorted(h.checks)), ("unhealthy", ["database: disk I/O error"], "disk I/O error", True, ["cgroups", "database"]))
        self.assertEqual((h.error.code if h.error else "", h.data_dir.free_mb if h.data_dir else 0), ("unavailable", 100))
        # health() keeps raising, with the reasons.
        with self.assertRaises(Unavailable) as cm:
            c.health()
        self.assertEqual((cm.exception.status, cm.exception.message), (503, "sandboxd is unhealthy: database: disk I/O error"))
        # A degraded daemon from before the checks is no error, and not ok.
        d2 = self.serve(lambda s: Reply(200, {"status": "degraded"}))
        self.assertEqual((Client(d2.socket).health_status().ok, Client(d2.socket).health()), (False, "degraded"))

    def test_not_a_health(self) -> None:
        d = self.serve(lambda s: error(503, "unavailable", "draining", **{"Retry-After": "30"}))
        with self.assertRaises(Unavailable) as cm:
            Client(d.socket).health_status()
        self.assertEqual((cm.exception.message, cm.exception.retry_after), ("draining", 30.0))
        d2 = self.serve(lambda s: Reply(500, raw=b"boom"))
        with self.assertRaises(Internal):
            Client(d2.socket).health_status()
        with self.assertRaises(Unavailable):
            Client("/nonexistent/sandboxd.sock").health_status()


class TestModels(unittest.TestCase):
    def test_lenient(self) -> None:
        cases: list[tuple[dict[str, Any], Callable[[sandboxd.Execution], bool]]] = [
            # (json, check)
            ({}, lambda e: e.status == "" and e.result is None and e.outputs == []),
            ({"result": None, "error": {"name": "ZeroDivisionError", "value": "division by zero"}}, lambda e: str(e.error) == "ZeroDivisionError: division by zero"),
            ({"exit_code": "x", "outputs": "x"}, lambda e: e.exit_code == 0 and e.outputs == []),
            ({"started_at": "not a time"}, lambda e: e.started_at is None),
            ({"started_at": "2026-01-02T03:04:05.123456789Z"}, lambda e: e.started_at == datetime(2026, 1, 2, 3, 4, 5, 123456, timezone.utc)),
            ({"started_at": "2026-01-02T03:04:05.5+02:00"}, lambda e: e.started_at == datetime(2026, 1, 2, 1, 4, 5, 500000, timezone.utc)),
            ({"started_at": "2026-01-02T03:04:05Z"}, lambda e: e.started_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
            ({"outputs": [{"mime": "text/html", "data": base64.b64encode(b"<b>x</b>").decode()}]}, lambda e: e.outputs[0].html == "<b>x</b>" and e.outputs[0].png is None),
            # A daemon (or a history) older than metrics, code_sha256 and caller_uid.
            ({}, lambda e: e.metrics is None and e.code_sha256 == "" and e.caller_uid is None),
            ({"metrics": "x", "caller_uid": "0"}, lambda e: e.metrics is None and e.caller_uid is None),
            ({"metrics": {"cpu_ms": 1.5}, "caller_uid": 0}, lambda e: e.metrics == sandboxd.ExecMetrics(0.0, 1.5, 0) and e.caller_uid == 0),
            ({"status": "running"}, lambda e: e.status == sandboxd.models.STATUS_RUNNING and not e.ok),
        ]
        for raw, check in cases:
            with self.subTest(raw=raw):
                self.assertTrue(check(sandboxd.Execution.from_json(raw)))

    def test_output_bundle(self) -> None:
        png = base64.b64encode(b"\x89PNG").decode()
        o = sandboxd.Output.from_json(
            {
                "mime": "image/png",
                "data": png,
                "bundle": {"image/png": png, "text/html": "<p>é</p>", "text/markdown": "# m", "image/svg+xml": "<svg/>", "application/json": '{"a": 1}', "text/plain": "p"},
            }
        )
        self.assertEqual((o.png, o.html, o.markdown, o.svg, o.json, o.text, o.mime), (b"\x89PNG", "<p>é</p>", "# m", "<svg/>", {"a": 1}, "p", "image/png"))
        # Without a bundle (a figure, an older daemon), mime and data alone.
        fig = sandboxd.Output.from_json({"mime": "image/png", "data": png})
        self.assertEqual((fig.png, fig.html, fig.json, fig.bundle), (b"\x89PNG", None, None, {}))


if __name__ == "__main__":
    unittest.main()
