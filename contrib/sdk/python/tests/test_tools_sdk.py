"""Tests of sandboxd.tools against a real sandboxd, the one at
$SANDBOXD_SOCKET, as test_sdk.py runs (integration/sdk_python_test.go):
a model's turns, scripted, in the shapes of OpenAI's and Anthropic's APIs,
run by a Toolbox. $SANDBOXD_TEST_INDEX_URL is the package index of the
install test.

Every test deletes the sessions it makes: the Go test checks none is left.
"""

from __future__ import annotations

import base64
import json
import os
import unittest
import uuid
from typing import Any

from sandboxd import Sandbox
from sandboxd.tools import Toolbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


def openai_call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool call as a model sends it: arguments as JSON text."""
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def tool_use(i: int, name: str, args: Any) -> dict[str, Any]:
    """A Messages API tool_use block: input as an object."""
    return {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}


PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nNone"


class TestOpenAILoop(unittest.TestCase):
    def test_chat_completions(self) -> None:
        # The turns a model would take, each a list of parallel tool calls.
        turns = [
            [("run_python", {"code": "x = 6 * 7\nx"})],
            [("run_python", {"code": "x + 1"}), ("run_shell", {"command": "echo hi; pwd"})],
            [("write_file", {"path": "notes/a.txt", "content": "héllo\n"})],
            [("read_file", {"path": "notes/a.txt"}), ("run_shell", {"command": "cat notes/a.txt | wc -c"})],
            [("run_python", {"code": "1 / 0"})],
            [("run_python", {"code": PLOT})],
        ]
        messages: list[dict[str, Any]] = [{"role": "user", "content": "compute things"}]
        with Toolbox(labels={"run": RUN, "loop": "openai"}) as tb:
            self.assertEqual([t["function"]["name"] for t in tb.openai_tools()], list(tb.names))
            n = 0
            for turn in turns:
                calls = []
                for name, args in turn:
                    calls.append(openai_call(n, name, args))
                    n += 1
                messages.append({"role": "assistant", "content": None, "tool_calls": calls})
                for call in calls:
                    messages.append(tb.handle_openai(call))
            sid = tb.sandbox.id
            self.assertEqual(Sandbox.list(labels={"run": RUN, "loop": "openai"})[0].id, sid)

            answers = {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m["role"] == "tool"}
            self.assertEqual(len(answers), 8)
            self.assertEqual(answers["call_0"], {"status": "ok", "result": "42", "stdout": "", "stderr": ""})
            # The interpreter kept x between calls.
            self.assertEqual(answers["call_1"]["result"], "43")
            self.assertEqual((answers["call_2"]["exit_code"], answers["call_2"]["stdout"]), (0, "hi\n/workspace\n"))
            self.assertEqual(answers["call_3"], {"path": "/workspace/notes/a.txt", "size": 7})
            self.assertEqual(answers["call_4"], {"path": "/workspace/notes/a.txt", "size": 7, "encoding": "utf-8", "content": "héllo\n"})
            self.assertEqual(answers["call_5"]["stdout"].strip(), "7")
            err = answers["call_6"]
            self.assertEqual((err["status"], err["error"]), ("error", {"name": "ZeroDivisionError", "value": "division by zero"}))
            # The traceback is on stderr, and not given twice.
            self.assertIn("ZeroDivisionError: division by zero", err["stderr"])
            self.assertNotIn("traceback", err)
            self.assertEqual((answers["call_7"]["status"], answers["call_7"]["images"]), ("ok", ["image/png"]), answers["call_7"])

            # Chat tool messages are text: the figure comes in a user message.
            r = tb.handle(openai_call(99, "run_python", {"code": PLOT}))
            img = r.openai_images_message()
            assert img is not None
            url = img["content"][1]["image_url"]["url"]
            self.assertTrue(url.startswith("data:image/png;base64,"))
            self.assertTrue(base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n"))
        # Leaving the block deleted the session the Toolbox made.
        self.assertEqual(Sandbox.list(labels={"run": RUN, "loop": "openai"}), [])

    def test_responses_and_install(self) -> None:
        index = os.environ.get("SANDBOXD_TEST_INDEX_URL")
        if not index:
            self.skipTest("SANDBOXD_TEST_INDEX_URL is not set: no package index to install from")
        with Toolbox(index_url=index, labels={"run": RUN}) as tb:
            self.assertEqual({t["name"] for t in tb.openai_responses_tools()}, set(tb.names))

            def call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
                item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": name, "arguments": json.dumps(args)}
                out = tb.handle_openai_responses(item)
                self.assertEqual((out["type"], out["call_id"]), ("function_call_output", f"call_{i}"))
                return out

            out = call(0, "install_packages", {"packages": ["sbxdemo==1.0"]})
            got = json.loads(out["output"])
            self.assertEqual((got["status"], got["exit_code"]), ("ok", 0), got)
            self.assertIn("Successfully installed sbxdemo-1.0", got["stdout"])
            out = call(1, "run_python", {"code": "import sbxdemo\nsbxdemo.VALUE"})
            self.assertEqual(json.loads(out["output"])["result"], repr("installed by the python sdk test"))
            # What pip would take as an option is refused before pip runs.
            got = json.loads(call(2, "install_packages", {"packages": ["--index-url=http://evil/simple"]})["output"])
            self.assertEqual(got["error"]["code"], "invalid_argument")
            # A figure comes as an input_image beside the text.
            out = call(3, "run_python", {"code": PLOT})
            parts = out["output"]
            self.assertEqual([p["type"] for p in parts], ["input_text", "input_image"])
            self.assertTrue(parts[1]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo"))


class TestAnthropicLoop(unittest.TestCase):
    def test_messages(self) -> None:
        blob = bytes(range(256))
        turns = [
            [tool_use(0, "run_python", {"code": "import os\ndata = [1, 2, 3]\nos.getcwd()"})],
            [tool_use(1, "run_python", {"code": "sum(data)"}), tool_use(2, "run_shell", {"command": "ls /workspace; exit 2"})],
            [tool_use(3, "write_file", {"path": "/tmp/b.bin", "content": base64.b64encode(blob).decode(), "encoding": "base64"})],
            [tool_use(4, "read_file", {"path": "/tmp/b.bin"}), tool_use(5, "read_file", {"path": "/tmp"})],
            [tool_use(6, "run_python", {"code": PLOT})],
            [tool_use(7, "browse", {"url": "https://example.com"}), tool_use(8, "read_file", {"file": "a.txt"})],
            [tool_use(9, "read_file", {"path": "/etc/passwd"}), tool_use(10, "read_file", {"path": "missing.txt"})],
        ]
        with Sandbox(labels={"run": RUN, "loop": "anthropic"}) as sbx:
            tb = Toolbox(sbx)
            messages: list[dict[str, Any]] = [{"role": "user", "content": "compute things"}]
            for turn in turns:
                messages.append({"role": "assistant", "content": turn})
                # All of one turn's results go in one user message.
                messages.append({"role": "user", "content": [tb.handle_anthropic(b) for b in turn]})
            results = {b["tool_use_id"]: b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]}
            self.assertEqual(len(results), 11)
            for b in results.values():
                self.assertEqual(b["type"], "tool_result")

            def data(i: int) -> Any:
                return json.loads(results[f"toolu_{i}"]["content"][0]["text"])

            def is_error(i: int) -> Any:
                return results[f"toolu_{i}"]["is_error"]

            self.assertEqual((data(0)["result"], is_error(0)), ("'/workspace'", False))
            self.assertEqual(data(1)["result"], "6")
            self.assertEqual((data(2)["exit_code"], is_error(2)), (2, True))
            self.assertEqual(data(3), {"path": "/tmp/b.bin", "size": 256})
            self.assertEqual((data(4)["encoding"], base64.b64decode(data(4)["content"])), ("base64", blob))
            self.assertIn({"name": "b.bin", "type": "file", "size": 256}, data(5)["entries"])
            img = results["toolu_6"]["content"]
            self.assertEqual([c["type"] for c in img], ["text", "image"])
            self.assertEqual((img[1]["source"]["type"], img[1]["source"]["media_type"]), ("base64", "image/png"))
            self.assertTrue(base64.b64decode(img[1]["source"]["data"]).startswith(b"\x89PNG\r\n\x1a\n"))
            # Mistakes of the model and the daemon's refusals are results, not exceptions.
            cases = [
                # (call, error code)
                (7, "unknown_tool"),
                (8, "invalid_argument"),
                (9, "invalid_argument"),
                (10, "not_found"),
            ]
            for i, code in cases:
                with self.subTest(call=i):
                    self.assertTrue(is_error(i))
                    self.assertEqual(data(i)["error"]["code"], code)
            tb.close()
            # close() leaves a sandbox it was given.
            self.assertEqual(sbx.info().status, "running")


class TestSession(unittest.TestCase):
    def test_limits_and_state(self) -> None:
        with Toolbox(timeout=1, max_chars=4000, labels={"run": RUN}) as tb:
            r = tb.run("run_shell", {"command": "seq 1 100000"})
            self.assertLessEqual(len(r.text), 4000)
            shown = json.loads(r.text)
            self.assertTrue(shown["stdout"].startswith("1\n2\n3\n") and shown["stdout"].endswith("99999\n100000\n"))
            self.assertIn("cut to fit the 4000 characters", shown["note"])

            r = tb.run("run_python", {"code": "import time\ntime.sleep(30)"})
            self.assertEqual((r.data["status"], r.is_error), ("timeout", True))
            self.assertIn("ran past its time limit", r.data["message"])

            tb.sandbox.stop()
            r = tb.run("run_python", {"code": "1"})
            self.assertEqual((r.is_error, r.error_code), (True, "conflict"))
            self.assertTrue(r.data["error"]["message"])


if __name__ == "__main__":
    unittest.main()
