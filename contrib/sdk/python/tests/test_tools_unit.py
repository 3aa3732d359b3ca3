"""Tests of sandboxd.tools against the fake daemon of test_unit.py: the
definitions in each API's form, the check of a model's arguments, what a
call answers in each API's message and how its text is bounded. No sandboxd
needed; test_tools_sdk.py drives a real one."""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import types
import unittest
from importlib import resources
from typing import Any

from test_unit import EXECUTION, SESSION, FakeTestCase, Reply, Seen, error

from sandboxd import Sandbox
from sandboxd._tools_schema import SCHEMA_KEYWORDS
from sandboxd.tools import (
    TOOL_NAMES,
    TOOLS_VERSION,
    Toolbox,
    anthropic_tools,
    definitions,
    dispatch,
    openai_responses_tools,
    openai_tools,
)

SID = SESSION["id"]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
# Both APIs' rule for a tool's name.
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def execution(**fields: Any) -> dict[str, Any]:
    e = dict(EXECUTION, outputs=[], result=None, stdout="", stderr="")
    e.update(fields)
    return e


class Daemon:
    """Routes of a fake daemon for the tools: a session, its files (kept in
    a dict) and executions answered from a queue."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.answers: list[Reply] = []

    def route(self, s: Seen) -> Reply:
        if s.path == "/v1/sessions" and s.method == "POST":
            return Reply(201, SESSION)
        if s.path == f"/v1/sessions/{SID}" and s.method == "DELETE":
            return Reply(204)
        if s.path.endswith("/files"):
            path = s.query["path"][0]
            if s.method == "PUT":
                self.files[path] = s.body
                return Reply(201, {"path": "/workspace/" + path, "size": len(s.body)})
            if path == "dir":
                return Reply(200, {"entries": [{"name": "a.txt", "type": "file", "size": 3, "mode": "-rw-r--r--"}]})
            if path not in self.files:
                return error(404, "not_found", f"no file {path} in session {SID}")
            return Reply(200, raw=self.files[path])
        if s.path.endswith("/exec") or s.path.endswith("/packages"):
            return self.answers.pop(0) if self.answers else Reply(200, execution())
        return error(404, "not_found", "no such endpoint")


class ToolsTestCase(FakeTestCase):
    def setUp(self) -> None:
        self.d = Daemon()
        self.fake = self.serve(self.d.route)
        self.sbx = Sandbox(socket=self.fake.socket)
        self.fake.seen.clear()

    def answer(self, *replies: Reply) -> None:
        self.d.answers.extend(replies)


def keywords(s: Any) -> set[str]:
    """Every keyword of a schema, nested ones too."""
    out: set[str] = set()
    if isinstance(s, dict):
        out |= set(s)
        for k, v in s.items():
            if k == "properties":
                for p in v.values():
                    out |= keywords(p)
            elif k == "items":
                out |= keywords(v)
    return out


class TestDefinitions(unittest.TestCase):
    def test_the_file(self) -> None:
        f = resources.files("sandboxd").joinpath("tools.json")
        doc = json.loads(f.read_text("utf-8"))
        self.assertIsInstance(doc["$comment"], str)
        self.assertEqual(doc["version"], TOOLS_VERSION)
        self.assertEqual(TOOL_NAMES, ("run_python", "run_shell", "write_file", "read_file", "install_packages"))
        self.assertEqual([t["name"] for t in doc["tools"]], list(TOOL_NAMES))

    def test_schemas(self) -> None:
        required = {
            "run_python": ["code"],
            "run_shell": ["command"],
            "write_file": ["path", "content"],
            "read_file": ["path"],
            "install_packages": ["packages"],
        }
        for t in definitions():
            with self.subTest(tool=t["name"]):
                self.assertEqual(set(t), {"name", "description", "input_schema"})
                self.assertRegex(t["name"], NAME)
                self.assertTrue(20 < len(t["description"]) < 1024)
                s = t["input_schema"]
                self.assertEqual((s["type"], s["additionalProperties"], s["required"]), ("object", False, required[t["name"]]))
                for k, p in s["properties"].items():
                    self.assertTrue(p.get("type") and p.get("description"), k)
                # The check of arguments knows every keyword the file uses,
                # all of them JSON Schema's (draft 2020-12).
                self.assertLessEqual(keywords(s), SCHEMA_KEYWORDS)
                json.dumps(s)
        text = " ".join(t["description"] for t in definitions())
        for said in ("persistent interpreter", "between run_python calls", "no network access unless the session allows it", "/workspace"):
            self.assertIn(said, text)

    def test_formats(self) -> None:
        canon = {t["name"]: t for t in definitions()}
        for t in openai_tools():
            self.assertEqual(set(t), {"type", "function"})
            self.assertEqual(t["type"], "function")
            f = t["function"]
            self.assertEqual(set(f), {"name", "description", "parameters"})
            self.assertEqual((f["description"], f["parameters"]), (canon[f["name"]]["description"], canon[f["name"]]["input_schema"]))
        for t in openai_responses_tools():
            self.assertEqual(set(t), {"type", "name", "description", "parameters"})
            self.assertEqual((t["type"], t["parameters"]), ("function", canon[t["name"]]["input_schema"]))
        for t in anthropic_tools():
            self.assertEqual(set(t), {"name", "description", "input_schema"})
            self.assertEqual(t, canon[t["name"]])

    def test_subset(self) -> None:
        cases: list[tuple[Any, list[str]]] = [
            # (names, the tools given, in that order)
            (None, list(TOOL_NAMES)),
            (["read_file", "run_shell"], ["read_file", "run_shell"]),
            ("run_python", ["run_python"]),
            ((n for n in ["write_file"]), ["write_file"]),
        ]
        for names, want in cases:
            with self.subTest(names=names):
                self.assertEqual([t["function"]["name"] for t in openai_tools(names)], want)
        self.assertEqual([t["name"] for t in anthropic_tools(["install_packages"])], ["install_packages"])
        self.assertEqual([t["name"] for t in openai_responses_tools(["read_file"])], ["read_file"])
        with self.assertRaises(ValueError):
            anthropic_tools(["run_python", "browse"])
        with self.assertRaises(ValueError):
            Toolbox(names=["rm_rf"])

    def test_copies(self) -> None:
        openai_tools()[0]["function"]["parameters"]["properties"].clear()
        anthropic_tools()[0]["input_schema"]["required"].append("x")
        self.assertEqual(definitions(["run_python"])[0]["input_schema"]["required"], ["code"])
        self.assertIn("code", openai_tools()[0]["function"]["parameters"]["properties"])


class TestArguments(ToolsTestCase):
    def test_refused(self) -> None:
        cases: list[tuple[str, Any, str, str]] = [
            # (tool, arguments, error code, in the message)
            ("browse", {"url": "x"}, "unknown_tool", "the tools are run_python, run_shell"),
            ("", None, "unknown_tool", "there is no tool ''"),
            ("run_python", '{"code": "1"', "invalid_argument", "not valid JSON"),
            ("run_python", "[1]", "invalid_argument", "must be a JSON object"),
            ("run_python", None, "invalid_argument", "missing argument `code`"),
            ("run_python", "", "invalid_argument", "missing argument `code`"),
            ("run_python", {"code": 1}, "invalid_argument", "`code` must be a string, not an integer"),
            ("run_python", {"code": "1", "timeout": 5}, "invalid_argument", "unknown argument `timeout`"),
            ("run_shell", {"command": ""}, "invalid_argument", "`command` must not be empty"),
            ("install_packages", {"packages": "numpy"}, "invalid_argument", "`packages` must be an array, not a string"),
            ("install_packages", {"packages": []}, "invalid_argument", "at least 1"),
            ("install_packages", {"packages": ["numpy", True]}, "invalid_argument", "`packages`[1] must be a string, not true or false"),
            ("write_file", {"path": "a", "content": "x", "encoding": "hex"}, "invalid_argument", 'one of "utf-8", "base64"'),
            ("write_file", {"path": "a", "content": "%%%", "encoding": "base64"}, "invalid_argument", "not valid base64"),
            ("write_file", {"path": "a"}, "invalid_argument", "missing argument `content`"),
            ("write_file", {"path": "a", "content": "\ud800"}, "invalid_argument", "not valid UTF-8 text"),
        ]
        tb = Toolbox(self.sbx)
        for name, args, code, said in cases:
            with self.subTest(tool=name, args=args):
                r = tb.run(name, args)
                self.assertTrue(r.is_error)
                self.assertEqual((r.error_code, r.data["error"]["code"]), (code, code))
                self.assertIn(said, r.data["error"]["message"])
                self.assertEqual(json.loads(r.text), r.data)
        self.assertEqual(self.fake.seen, [], "a refused call reached the daemon")

    def test_subset_runs_only_its_tools(self) -> None:
        tb = Toolbox(self.sbx, names=["read_file"])
        self.assertEqual([t["name"] for t in tb.anthropic_tools()], ["read_file"])
        r = tb.run("run_shell", {"command": "rm -rf ."})
        self.assertEqual((r.error_code, r.data["error"]["message"]), ("unknown_tool", "there is no tool 'run_shell': the tools are read_file"))

    def test_daemon_errors(self) -> None:
        self.answer(error(409, "conflict", f"session {SID} is stopped: start it first"))
        r = Toolbox(self.sbx).run("run_python", {"code": "1"})
        self.assertEqual((r.is_error, r.error_code), (True, "conflict"))
        self.assertEqual(r.data, {"error": {"code": "conflict", "message": f"session {SID} is stopped: start it first"}})
        self.assertEqual(r.exception.status if r.exception else 0, 409)  # type: ignore[attr-defined]
        r = dispatch(self.sbx, "read_file", {"path": "nothing.txt"})
        self.assertEqual((r.is_error, r.error_code), (True, "not_found"))


class TestCalls(ToolsTestCase):
    def test_run_python(self) -> None:
        self.answer(Reply(200, execution(result="42", stdout="hi\n", outputs=[{"mime": "image/png", "data": PNG}])))
        r = Toolbox(self.sbx, timeout=7).run("run_python", '{"code": "print(\'hi\')\\n6 * 7"}', call_id="call_1")
        self.assertEqual(self.fake.seen[0].json(), {"language": "python", "code": "print('hi')\n6 * 7", "timeout_s": 7})
        self.assertFalse(r.is_error)
        self.assertEqual(r.data, {"status": "ok", "result": "42", "stdout": "hi\n", "stderr": "", "images": ["image/png"]})
        self.assertEqual(json.loads(r.text), r.data)
        self.assertEqual([(o.mime, o.data) for o in r.images], [("image/png", PNG)])
        self.assertEqual(r.to_openai(), {"role": "tool", "tool_call_id": "call_1", "content": r.text})
        self.assertEqual(
            r.to_openai_responses(),
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": [{"type": "input_text", "text": r.text}, {"type": "input_image", "image_url": "data:image/png;base64," + PNG, "detail": "auto"}],
            },
        )
        self.assertEqual(
            r.to_anthropic(),
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "content": [{"type": "text", "text": r.text}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}],
                "is_error": False,
            },
        )
        m = r.openai_images_message()
        assert m is not None
        self.assertEqual((m["role"], m["content"][1]), ("user", {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}))

    def test_python_error(self) -> None:
        tb = "Traceback (most recent call last):\n  File \"<cell>\", line 1\nZeroDivisionError: division by zero\n"
        self.answer(
            Reply(200, execution(status="error", exit_code=1, stderr=tb, error={"name": "ZeroDivisionError", "value": "division by zero", "traceback": tb})),
            Reply(200, execution(status="error", exit_code=1, error={"name": "E", "value": "v", "traceback": "Traceback: E"})),
        )
        r = Toolbox(self.sbx).run("run_python", {"code": "1/0"}, call_id="c")
        self.assertEqual(r.data, {"status": "error", "result": None, "stdout": "", "stderr": tb, "error": {"name": "ZeroDivisionError", "value": "division by zero"}})
        self.assertTrue(r.is_error and r.to_anthropic()["is_error"])
        self.assertIsNone(r.error_code)
        self.assertEqual(r.to_openai_responses()["output"], r.text)
        self.assertIsNone(r.openai_images_message())
        # A traceback that stderr lacks is given.
        r = Toolbox(self.sbx).run("run_python", {"code": "raise E"})
        self.assertEqual(r.data["traceback"], "Traceback: E")

    def test_statuses(self) -> None:
        cases: list[tuple[dict[str, Any], str]] = [
            # (execution, the message)
            ({"status": "timeout", "state_reset": True}, "stopped: it ran past its time limit; the interpreter was restarted: variables and imports are gone, files stay"),
            ({"status": "killed", "exit_code": 137}, "killed: it went over a limit of the sandbox (most often memory)"),
            ({"status": "lost", "error": {"name": "Lost", "value": "the sandbox was gone"}}, "its output is lost: the sandbox's daemon restarted while it ran; the sandbox was gone"),
            ({"status": "ok", "truncated": True}, "the sandbox cut the output at its own limit"),
        ]
        for fields, msg in cases:
            with self.subTest(fields=fields):
                self.answer(Reply(200, execution(**fields)))
                r = Toolbox(self.sbx).run("run_python", {"code": "x"})
                self.assertEqual(r.data["message"], msg)
                self.assertNotIn("error", r.data)
                self.assertEqual(r.is_error, fields["status"] != "ok")

    def test_run_shell(self) -> None:
        self.answer(Reply(200, execution(language="shell", status="error", exit_code=3, stdout="out\n")))
        r = Toolbox(self.sbx).run("run_shell", {"command": "echo out; exit 3"})
        self.assertEqual(self.fake.seen[0].json(), {"language": "shell", "code": "echo out; exit 3"})
        self.assertEqual((r.data, r.is_error), ({"status": "error", "exit_code": 3, "stdout": "out\n", "stderr": ""}, True))

    def test_install_packages(self) -> None:
        self.answer(Reply(200, execution(language="shell", stdout="Successfully installed sbxdemo-1.0\n")))
        r = Toolbox(self.sbx, index_url="http://index.test/simple").run("install_packages", {"packages": ["sbxdemo==1.0"]})
        self.assertEqual((self.fake.seen[0].path, self.fake.seen[0].json()), (f"/v1/sessions/{SID}/packages", {"packages": ["sbxdemo==1.0"], "index_url": "http://index.test/simple"}))
        self.assertEqual((r.data["status"], r.data["exit_code"], r.is_error), ("ok", 0, False))

    def test_files(self) -> None:
        tb = Toolbox(self.sbx)
        r = tb.run("write_file", {"path": "notes/a.txt", "content": "héllo\n"})
        self.assertEqual((r.data, self.d.files["notes/a.txt"]), ({"path": "/workspace/notes/a.txt", "size": 7}, "héllo\n".encode()))
        blob = bytes(range(256))
        b64 = base64.b64encode(blob).decode()
        # Models wrap long base64 in lines.
        r = tb.run("write_file", {"path": "b.bin", "content": b64[:40] + "\n" + b64[40:], "encoding": "base64"})
        self.assertEqual((r.data["size"], self.d.files["b.bin"]), (256, blob))

        r = tb.run("read_file", {"path": "notes/a.txt"})
        self.assertEqual(r.data, {"path": "/workspace/notes/a.txt", "size": 7, "encoding": "utf-8", "content": "héllo\n"})
        r = tb.run("read_file", {"path": "b.bin"})
        self.assertEqual((r.data["encoding"], base64.b64decode(r.data["content"])), ("base64", blob))
        self.d.files["nul.txt"] = b"a\x00b"
        self.assertEqual(tb.run("read_file", {"path": "nul.txt"}).data["encoding"], "base64")
        r = tb.run("read_file", {"path": "dir"})
        self.assertEqual(r.data, {"path": "/workspace/dir", "type": "folder", "entries": [{"name": "a.txt", "type": "file", "size": 3}]})
        r = tb.run("read_file", {"path": "/tmp/../tmp/x"})
        self.assertEqual((r.error_code, r.is_error), ("not_found", True))


class TestHandle(ToolsTestCase):
    def test_shapes(self) -> None:
        tb = Toolbox(self.sbx)
        self.answer(*[Reply(200, execution(result="2"))] * 8)
        chat = {"id": "call_a", "type": "function", "function": {"name": "run_python", "arguments": '{"code": "1 + 1"}'}}
        self.assertEqual(tb.handle_openai(chat), {"role": "tool", "tool_call_id": "call_a", "content": '{"status": "ok", "result": "2", "stdout": "", "stderr": ""}'})
        # The openai and anthropic packages give objects with these attributes.
        obj = types.SimpleNamespace(id="call_b", type="function", function=types.SimpleNamespace(name="run_python", arguments='{"code": "1 + 1"}'))
        self.assertEqual(tb.handle_openai(obj)["tool_call_id"], "call_b")

        resp = {"type": "function_call", "id": "fc_1", "call_id": "call_c", "name": "run_python", "arguments": '{"code": "1 + 1"}'}
        self.assertEqual(tb.handle_openai_responses(resp), {"type": "function_call_output", "call_id": "call_c", "output": json.dumps({"status": "ok", "result": "2", "stdout": "", "stderr": ""})})

        use = {"type": "tool_use", "id": "toolu_d", "name": "run_python", "input": {"code": "1 + 1"}}
        got = tb.handle_anthropic(use)
        self.assertEqual((got["type"], got["tool_use_id"], got["is_error"], got["content"][0]["type"]), ("tool_result", "toolu_d", False, "text"))
        blk = types.SimpleNamespace(type="tool_use", id="toolu_e", name="run_shell", input={})
        got = tb.handle_anthropic(blk)
        self.assertEqual((got["tool_use_id"], got["is_error"]), ("toolu_e", True))
        self.assertIn("missing argument `command`", got["content"][0]["text"])

        # handle tells the three apart.
        for call, cid in ((chat, "call_a"), (resp, "call_c"), (use, "toolu_d")):
            with self.subTest(call=call):
                r = tb.handle(call)
                self.assertEqual((r.call_id, r.data.get("result")), (cid, "2"))
        r = tb.handle({"what": "ever"})
        self.assertEqual(r.error_code, "invalid_argument")
        with self.assertRaises(ValueError):
            r.to_openai()


class TestBound(ToolsTestCase):
    def test_cut(self) -> None:
        cases: list[tuple[str, dict[str, Any], list[str]]] = [
            # (tool, execution, fields cut)
            ("run_shell", {"stdout": "".join(f"line {i}\n" for i in range(20000)), "stderr": "warn\n"}, ["stdout"]),
            ("run_shell", {"stdout": "o" * 30000, "stderr": "e" * 30000}, ["stdout", "stderr"]),
            # Control characters take six characters each in JSON.
            ("run_shell", {"stdout": "\x01" * 30000}, ["stdout"]),
            ("run_python", {"result": "'" + "r" * 50000 + "'", "stdout": "small"}, ["result"]),
        ]
        for tool, fields, cut in cases:
            with self.subTest(tool=tool, cut=cut):
                self.answer(Reply(200, execution(**fields)))
                r = Toolbox(self.sbx, max_chars=3000).run(tool, {"code": "x"} if tool == "run_python" else {"command": "x"})
                self.assertLessEqual(len(r.text), 3000)
                self.assertGreater(len(r.text), 2000, "cut far more than needed")
                self.assertEqual(r.cut, cut)
                shown = json.loads(r.text)
                self.assertIn("cut to fit the 3000 characters", shown["note"])
                for k in cut:
                    self.assertIn("characters cut …]", shown[k])
                    # Both ends of an output are kept.
                    self.assertTrue(shown[k].startswith(fields[k][:20]) and shown[k].endswith(fields[k][-5:]))
                # data keeps it all.
                self.assertEqual(r.data["stdout"], fields.get("stdout", ""))

    def test_file_keeps_its_start(self) -> None:
        self.d.files["big.txt"] = b"".join(b"row %d\n" % i for i in range(10000))
        r = Toolbox(self.sbx, max_chars=2000).run("read_file", {"path": "big.txt"})
        shown = json.loads(r.text)
        self.assertLessEqual(len(r.text), 2000)
        self.assertTrue(shown["content"].startswith("row 0\nrow 1\n"))
        self.assertRegex(shown["content"], r"\n\[… \d+ more characters cut\]$")
        self.assertEqual((shown["size"], r.cut), (len(self.d.files["big.txt"]), ["content"]))

    def test_small_is_whole(self) -> None:
        self.answer(Reply(200, execution(stdout="x" * 19000)))
        r = Toolbox(self.sbx).run("run_shell", {"command": "x"})
        self.assertEqual((r.cut, json.loads(r.text)["stdout"]), ([], "x" * 19000))
        with self.assertRaises(ValueError):
            Toolbox(self.sbx, max_chars=10)


class TestLazy(FakeTestCase):
    def test_made_on_first_use(self) -> None:
        d = Daemon()
        fake = self.serve(d.route)
        with Toolbox(socket=fake.socket, memory_mb=256, labels={"agent": "a1"}) as tb:
            self.assertEqual(fake.seen, [])
            self.assertEqual(len(tb.openai_tools()), 5)
            self.assertEqual(fake.seen, [], "offering the tools made a session")
            tb.run("run_shell", {"command": "ls"})
            tb.run("run_shell", {"command": "ls"})
            self.assertEqual([(s.method, s.path) for s in fake.seen][0], ("POST", "/v1/sessions"))
            self.assertEqual(fake.seen[0].json(), {"memory_mb": 256, "labels": {"agent": "a1"}})
            self.assertEqual(sum(s.path == "/v1/sessions" for s in fake.seen), 1)
            self.assertEqual(tb.sandbox.id, SID)
        self.assertEqual((fake.seen[-1].method, fake.seen[-1].path), ("DELETE", f"/v1/sessions/{SID}"))
        n = len(fake.seen)
        tb.close()
        self.assertEqual(len(fake.seen), n)

    def test_given_is_kept(self) -> None:
        fake = self.serve(Daemon().route)
        sbx = Sandbox(socket=fake.socket)
        with Toolbox(sbx) as tb:
            tb.run("run_python", {"code": "1"})
        self.assertNotIn("DELETE", [s.method for s in fake.seen])
        with self.assertRaises(TypeError):
            Toolbox(sbx, memory_mb=1)
        with self.assertRaises(TypeError):
            Toolbox(memroy_mb=1)

    def test_no_daemon(self) -> None:
        with tempfile.TemporaryDirectory() as dir:
            tb = Toolbox(socket=os.path.join(dir, "none.sock"))
            r = tb.run("run_python", {"code": "1"}, call_id="c1")
            self.assertEqual((r.is_error, r.error_code, r.call_id), (True, "unavailable", "c1"))
            self.assertIn("is it running?", r.data["error"]["message"])
            tb.close()


if __name__ == "__main__":
    unittest.main()
