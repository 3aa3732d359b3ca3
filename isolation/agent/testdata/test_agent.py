# Unit tests of agent.py's pure parts, run by agent_test.go.
import importlib.util
import os
import sys
import unittest

spec = importlib.util.spec_from_file_location(
    "agent", os.path.join(os.path.dirname(__file__), "..", "agent.py"))
agent = importlib.util.module_from_spec(spec)
spec.loader.exec_module(agent)


class RunCell(unittest.TestCase):
    def setUp(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def run_cell(self, code, **kw):
        req = {"code": code}
        req.update(kw)
        return agent.run_cell(self.ns, req, 1)

    def test_last_expression_is_the_result(self):
        self.assertIsNone(self.run_cell("x = 2")["result"])
        self.assertEqual(self.run_cell("x * 21")["result"], "42")
        self.assertIsNone(self.run_cell("None")["result"])

    def test_exception(self):
        r = self.run_cell("def f():\n    return 1/0\nf()")
        self.assertEqual(r["error"]["name"], "ZeroDivisionError")
        self.assertIn("<cell-1>", r["error"]["traceback"])
        self.assertNotIn("agent.py", r["error"]["traceback"])

    def test_result_is_capped(self):
        r = self.run_cell("'a' * 100", max_output=10)
        self.assertEqual(len(r["result"]), 10)

    def test_env_and_cwd_are_restored(self):
        cwd = os.getcwd()
        r = self.run_cell("import os\n(os.environ['ZZ'], os.getcwd())", env={"ZZ": "1"}, cwd="/")
        self.assertEqual(r["result"], "('1', '/')")
        self.assertNotIn("ZZ", os.environ)
        self.assertEqual(os.getcwd(), cwd)


class CaptureCap(unittest.TestCase):
    def test_cap_and_utf8_split(self):
        sent = []
        c = agent.Capture("stdout", sent.append, 5)
        data = "héllo wörld".encode()
        c.feed(data[:2])  # splits the é
        c.feed(data[2:])
        c.finish()
        text = "".join(m["data"] for m in sent)
        self.assertEqual(text, "héll")
        self.assertTrue(c.truncated)


class Protocol(unittest.TestCase):
    def test_json_round_trip(self):
        msg = {"type": "done", "data": "héllo \u2028 \x00\n\"", "n": 1, "f": 1.5, "ok": True,
               "none": None, "list": [1, {"a": []}]}
        line = agent.json_dumps(msg)
        self.assertNotIn("\n", line)
        self.assertEqual(agent.json_loads(line.encode()), msg)
        import json
        self.assertEqual(json.loads(line), msg)
        self.assertEqual(agent.json_loads(json.dumps(msg)), msg)

    def test_bad_json_is_a_value_error(self):
        for bad in [b"", b"{", b"{} x", b"\xff", b"nul"]:
            with self.assertRaises(ValueError, msg=bad):
                agent.json_loads(bad)

    def test_read_lines(self):
        class Conn:
            def __init__(self, chunks):
                self.chunks = list(chunks)

            def recv(self, n):
                return self.chunks.pop(0) if self.chunks else b""

        got = list(agent.read_lines(Conn([b"a\nb", b"c\n", b"", b"d"])))
        self.assertEqual(got, [b"a", b"bc"])
        big = b"x" * 300000
        got = list(agent.read_lines(Conn([big[:100000], big[100000:], b"\nz\n"])))
        self.assertEqual(got, [big, b"z"])


if __name__ == "__main__":
    unittest.main()
