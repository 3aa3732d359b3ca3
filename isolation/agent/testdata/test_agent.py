# Unit tests of the agent's pure parts, run by agent_test.go with the
# agent's modules and the generated _sandboxd_consts on PYTHONPATH.
import ast
import glob
import os
import unittest
from unittest import mock

import _sandboxd_agent as agent
import _sandboxd_consts as consts
import _sandboxd_wire as wire
import _sandboxd_worker as worker


class RunCell(unittest.TestCase):
    def setUp(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def run_cell(self, code, **kw):
        req = {"code": code}
        req.update(kw)
        return worker.run_cell(self.ns, req, 1)

    def test_last_expression_is_the_result(self):
        self.assertIsNone(self.run_cell("x = 2")["result"])
        self.assertEqual(self.run_cell("x * 21")["result"], "42")
        self.assertIsNone(self.run_cell("None")["result"])

    def test_exception(self):
        r = self.run_cell("def f():\n    return 1/0\nf()")
        self.assertEqual(r["error"]["name"], "ZeroDivisionError")
        self.assertIn("<cell-1>", r["error"]["traceback"])
        self.assertNotIn("_sandboxd_", r["error"]["traceback"])

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
        c = agent.Capture(consts.TYPE_STDOUT, sent.append, 5)
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
        line = wire.json_dumps(msg)
        self.assertNotIn("\n", line)
        self.assertEqual(wire.json_loads(line.encode()), msg)
        import json
        self.assertEqual(json.loads(line), msg)
        self.assertEqual(wire.json_loads(json.dumps(msg)), msg)

    def test_bad_json_is_a_value_error(self):
        for bad in [b"", b"{", b"{} x", b"\xff", b"nul"]:
            with self.assertRaises(ValueError, msg=bad):
                wire.json_loads(bad)

    def test_line_reader(self):
        class Conn:
            def __init__(self, chunks):
                self.chunks = list(chunks)

            def recv(self, n):
                return self.chunks.pop(0) if self.chunks else b""

        got = list(wire.LineReader(Conn([b"a\nb", b"c\n", b"", b"d"])))
        self.assertEqual(got, [b"a", b"bc"])
        big = b"x" * 300000
        got = list(wire.LineReader(Conn([big[:100000], big[100000:], b"\nz\n"])))
        self.assertEqual(got, [big, b"z"])
        # During an execution: fill once the socket is readable, take the
        # complete lines; iterating goes on from the same buffer.
        r = wire.LineReader(Conn([b'{"op":"interrupt"}\n{"op"', b':"ping"}\nrest\n', b""]))
        self.assertTrue(r.fill())
        self.assertEqual(r.take(), b'{"op":"interrupt"}')
        self.assertIsNone(r.take())
        self.assertTrue(r.fill())
        self.assertEqual(list(r), [b'{"op":"ping"}', b"rest"])
        self.assertFalse(r.fill())


class TakeReply(unittest.TestCase):
    def test_began_then_reply(self):
        w = agent.Worker()
        w.seq = 3
        w.ctrl_buf = (b'junk\n{"started":true,"seq":3,"token":"forged"}\n'
                      b'{"started":true,"seq":3,"token":"t"}\n{"result":"1"')
        self.assertIsNone(agent.Agent.take_reply(w, "t"))
        self.assertTrue(w.began)
        w.ctrl_buf += b',"seq":3,"token":"t"}\n'
        self.assertEqual(agent.Agent.take_reply(w, "t")["result"], "1")

    def test_forged_start_is_a_stray_line(self):
        w = agent.Worker()
        w.seq = 3
        w.ctrl_buf = b'{"started":true,"seq":2,"token":"t"}\n{"started":true,"seq":3,"token":"x"}\n'
        with mock.patch.object(agent, "log"):
            self.assertIsNone(agent.Agent.take_reply(w, "t"))
        self.assertFalse(w.began)


class KillAll(unittest.TestCase):
    # os.kill is a mock in both: a real kill(-1) here would reach every
    # process of the user running the tests.
    def test_refused_unless_pid_1(self):
        with mock.patch.object(os, "kill") as kill, mock.patch.object(os, "getpid", return_value=4242):
            self.assertFalse(agent.kill_all())
        kill.assert_not_called()

    def test_pid_1_kills_every_process(self):
        with mock.patch.object(os, "kill") as kill, mock.patch.object(os, "getpid", return_value=1):
            self.assertTrue(agent.kill_all())
        kill.assert_called_once_with(-1, agent.signal.SIGKILL)


class SharedConstants(unittest.TestCase):
    def test_no_module_redefines_a_constant_of_go(self):
        names = {n for n in vars(consts) if n.isupper()}
        self.assertIn("LISTEN_FD", names)
        here = os.path.dirname(agent.__file__)
        paths = sorted(glob.glob(os.path.join(here, "_sandboxd_*.py")))
        self.assertEqual([os.path.basename(p)[:-3] for p in paths],
                         sorted(m for m in consts.MODULES if m != consts.__name__))
        for path in paths:
            with open(path) as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                bound = []
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    bound.append(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.append(node.name)
                elif isinstance(node, ast.arg):
                    bound.append(node.arg)
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    bound.append(node.name)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    from_consts = isinstance(node, ast.ImportFrom) and node.module == consts.__name__
                    for a in node.names:
                        if not from_consts or (a.asname or a.name) != a.name:
                            bound.append(a.asname or a.name)
                for n in bound:
                    if n in names:
                        self.fail("%s:%d defines %s, a constant of %s (from Go): import it from there" % (
                            os.path.basename(path), getattr(node, "lineno", 0), n, consts.__name__))


if __name__ == "__main__":
    unittest.main()
