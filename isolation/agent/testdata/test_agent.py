# Unit tests of the agent's pure parts, run by agent_test.go with the
# agent's modules and the generated _sandboxd_consts on PYTHONPATH.
import ast
import glob
import os
import subprocess
import sys
import unittest
from unittest import mock

import _sandboxd_agent as agent
import _sandboxd_answer as answer
import _sandboxd_cells as cells
import _sandboxd_consts as consts
import _sandboxd_display as rich
import _sandboxd_procs as procs
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
        self.assertTrue(r.get("truncated"))
        self.assertFalse(self.run_cell("'a'").get("truncated"))

    def test_figures_are_bounded(self):
        # User code can fake matplotlib.pyplot: ten 3 MB figures once made
        # a 40 MB answer.
        fake = (
            "import sys, types\n"
            "m = types.ModuleType('matplotlib.pyplot')\n"
            "class F:\n"
            "    def savefig(self, b, format): b.write(b'x' * 3000)\n"
            "m.get_fignums = lambda: list(range(10))\n"
            "m.figure = lambda n: F()\n"
            "m.close = lambda what: None\n"
            "sys.modules['matplotlib.pyplot'] = m\n")
        try:
            r = self.run_cell(fake, max_answer=14000)
            self.assertEqual(len(r["outputs"]), 3)  # 4000 bytes of base64 each
            self.assertTrue(r["truncated"])
            r = self.run_cell(fake, max_answer=1 << 20)
            self.assertEqual(len(r["outputs"]), 10)
            self.assertFalse(r.get("truncated"))
        finally:
            import sys
            sys.modules.pop("matplotlib.pyplot", None)

    def test_env_and_cwd_are_restored(self):
        cwd = os.getcwd()
        r = self.run_cell("import os\n(os.environ['ZZ'], os.getcwd())", env={"ZZ": "1"}, cwd="/")
        self.assertEqual(r["result"], "('1', '/')")
        self.assertNotIn("ZZ", os.environ)
        self.assertEqual(os.getcwd(), cwd)


# Objects with Jupyter's rich representations, defined in the cells.
RICH = (
    "class H:\n"
    "    def _repr_html_(self): return '<b>h</b>'\n"
    "    def __repr__(self): return 'H()'\n"
    "class M:\n"
    "    def _repr_markdown_(self): return '# m'\n"
    "class S:\n"
    "    def _repr_svg_(self): return '<svg/>'\n"
    "class J:\n"
    "    def _repr_json_(self): return {'a': [1, 2]}\n"
    "class P:\n"
    "    def _repr_png_(self): return b'\\x89PNG'\n"
    "    def _repr_html_(self): return '<img>'\n"
    "class B:\n"
    "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
    "        return {'text/html': '<i>b</i>', 'text/plain': 'b!', 'application/x-junk': 1}\n"
    "class Bad:\n"
    "    def _repr_html_(self): raise ValueError('no')\n"
    "    def _repr_markdown_(self): return 42\n"
    "    def _repr_png_(self): return 'not base64 !'\n"
    "    def _repr_json_(self): return '{not json'\n"
    "    def __repr__(self): return 'Bad()'\n"
    "class Any:\n"
    "    def __getattr__(self, name): return lambda *a, **k: '<any>'\n"
    "    def __repr__(self): return 'Any()'\n")


# Run in an interpreter of its own: this one (unittest) has linecache.
LAZY_LINECACHE = """
import sys
import _sandboxd_worker as worker
sys.meta_path.insert(0, worker.LinecacheFinder)
ns = {"__name__": "__main__", "__builtins__": __builtins__}
worker.run_cell(ns, {"code": "def f():\\n    return 42\\n"}, 1)
print(worker.run_cell(ns, {"code": "import sys\\n[m in sys.modules for m in ('linecache', 'tokenize', 're')]"}, 2)["result"])
print(worker.run_cell(ns, {"code": "import inspect\\ninspect.getsource(f)"}, 3)["result"])
print(worker.run_cell(ns, {"code": "1/0"}, 4)["error"]["traceback"])
import linecache
print(linecache.__loader__ is linecache.__spec__.loader, type(linecache.__loader__).__name__)
print(worker.LinecacheFinder in sys.meta_path, sorted(worker.SOURCES))
"""


class CellSources(unittest.TestCase):
    def test_linecache_is_imported_when_needed_and_gets_them(self):
        out = subprocess.run([sys.executable, "-S", "-c", LAZY_LINECACHE], capture_output=True, text=True,
                             check=True).stdout
        self.assertIn("[False, False, False]", out)  # an idle worker has none of them
        self.assertIn("return 42", out)  # inspect reads a cell's source
        self.assertIn('"<cell-4>", line 1', out)
        self.assertIn("1/0", out)  # and tracebacks show its lines
        self.assertIn("True SourceFileLoader", out)
        self.assertIn("False []", out)


class Display(unittest.TestCase):
    def setUp(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        import builtins
        builtins.display = worker.display
        self.addCleanup(delattr, builtins, "display")
        self.sent = []
        worker.run_cell(self.ns, {"code": RICH}, 1)

    def run_cell(self, code, stream=False, **kw):
        req = {"code": code}
        req.update(kw)
        return worker.run_cell(self.ns, req, 2, send_display=self.sent.append if stream else None)

    def test_bundles(self):
        import base64
        r = self.run_cell("display(H(), M(), S(), J(), P(), B(), 7)")
        self.assertIsNone(r["error"])
        outs = r["outputs"]
        self.assertEqual([o["mime"] for o in outs],
                         ["text/html", "text/markdown", "image/svg+xml", "application/json", "image/png", "text/html",
                          "text/plain"])
        self.assertEqual(outs[0]["bundle"], {"text/plain": "H()", "text/html": "<b>h</b>"})
        self.assertEqual(base64.b64decode(outs[0]["data"]), b"<b>h</b>")  # data stays base64
        self.assertEqual(outs[3]["bundle"]["application/json"], '{"a":[1,2]}')
        self.assertEqual(outs[4]["data"], base64.b64encode(b"\x89PNG").decode())
        self.assertEqual(outs[4]["bundle"]["text/html"], "<img>")
        self.assertEqual(outs[5]["bundle"], {"text/html": "<i>b</i>", "text/plain": "b!"})
        self.assertEqual(outs[6]["bundle"], {"text/plain": "7"})

    def test_junk_and_raising_reprs_are_skipped(self):
        r = self.run_cell("display(Bad(), Any(), H)\n'after'")
        self.assertIsNone(r["error"])
        self.assertEqual(r["result"], "'after'")
        self.assertEqual([o["bundle"] for o in r["outputs"]],
                         [{"text/plain": "Bad()"}, {"text/plain": "Any()"}, {"text/plain": repr(self.ns["H"])}])

    def test_last_expression(self):
        r = self.run_cell("H()")
        self.assertEqual(r["result"], "H()")
        self.assertEqual([o["mime"] for o in r["outputs"]], ["text/html"])
        r = self.run_cell("Bad()")  # nothing beyond its repr: no output
        self.assertEqual((r["result"], r["outputs"]), ("Bad()", []))
        r = self.run_cell("[1]")
        self.assertEqual(r["outputs"], [])

    def test_streamed_in_order(self):
        r = self.run_cell("display(M())\nprint('x')\ndisplay(S())\nH()", stream=True)
        self.assertEqual([o["mime"] for o in self.sent], ["text/markdown", "image/svg+xml"])
        self.assertEqual([o["mime"] for o in r["outputs"]], ["text/html"])  # the last expression's only

    def test_other_threads_display_with_the_reply(self):
        r = self.run_cell("import threading\nt = threading.Thread(target=lambda: display(M()))\nt.start()\nt.join()",
                          stream=True)
        self.assertEqual(self.sent, [])
        self.assertEqual([o["mime"] for o in r["outputs"]], ["text/markdown"])

    def test_bounded(self):
        r = self.run_cell("class Big:\n    def _repr_html_(self): return 'x' * (9 << 20)\ndisplay(Big())")
        self.assertEqual(list(r["outputs"][0]["bundle"]), ["text/plain"])  # the HTML is over MAX_BUNDLE
        r = self.run_cell("display(H(), H(), H())", max_answer=150)
        self.assertEqual(len(r["outputs"]), 2)
        self.assertTrue(r["truncated"])

    def test_figure_is_png_without_bundle(self):
        import sys
        import types
        mf = types.ModuleType("matplotlib.figure")

        class Figure:
            def savefig(self, b, format):
                b.write(b"png")
        mf.Figure = Figure
        sys.modules["matplotlib.figure"] = mf
        self.addCleanup(sys.modules.pop, "matplotlib.figure")
        self.ns["Figure"] = Figure
        r = self.run_cell("display(Figure())\nFigure()")
        self.assertEqual(r["outputs"], [{"mime": "image/png", "data": "cG5n"}] * 2)

    def test_sizes(self):
        self.assertEqual(rich.output_size({"mime": "a", "data": "bc", "bundle": {"d": "é"}}), 6)


class DisplayLines(unittest.TestCase):
    def test_displays_before_the_reply(self):
        w = cells.Worker()
        w.seq = 3
        shown = []
        w.ctrl_buf = (b'{"display":{"mime":"text/plain","data":"MQ=="},"seq":3,"token":"t"}\n'
                      b'{"display":{"mime":"forged","data":""},"seq":3,"token":"x"}\n'
                      b'{"result":"1","seq":3,"token":"t"}\n')
        with mock.patch.object(cells, "log"):
            self.assertEqual(cells.take_reply(w, "t", shown.append)["result"], "1")
        self.assertEqual(shown, [{"mime": "text/plain", "data": "MQ=="}])

    def test_budget_counts_bundles_and_cleans(self):
        b = answer.Budget(100)
        o = b.output({"mime": "text/html", "data": "PGI+", "bundle": {"text/html": "<b>", "bad": 1}, "x": 2})
        self.assertEqual(o, {"mime": "text/html", "data": "PGI+", "bundle": {"text/html": "<b>"}})
        self.assertEqual(b.left, 100 - 9 - 4 - 9 - 3)
        self.assertIsNone(b.output({"mime": "m", "data": 3}))
        self.assertIsNone(b.output({"mime": "m", "data": "x" * 100}))
        self.assertTrue(b.cut)


class CaptureCap(unittest.TestCase):
    def test_cap_and_utf8_split(self):
        sent = []
        c = answer.Capture(consts.TYPE_STDOUT, sent.append, 5)
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
    def test_reply_among_stray_lines(self):
        w = cells.Worker()
        w.seq = 3
        w.ctrl_buf = (b'junk\n{"result":"3","seq":2,"token":"t"}\n'
                      b'{"result":"2","seq":3,"token":"forged"}\n{"result":"1"')
        with mock.patch.object(cells, "log"):
            self.assertIsNone(cells.take_reply(w, "t"))
        self.assertEqual(w.stray, 3)
        w.ctrl_buf += b',"seq":3,"token":"t"}\n'
        self.assertEqual(cells.take_reply(w, "t")["result"], "1")


class Tokens(unittest.TestCase):
    def test_unique_and_sized(self):
        t = cells.Tokens()
        got = {t.next() for _ in range(200)}
        self.assertEqual(len(got), 200)
        self.assertTrue(all(len(x) == 32 for x in got))


class Interrupt(unittest.TestCase):
    # SIGINT outside a cell is kept for the next cell, which stops before
    # its code runs; a noop request clears it.
    def setUp(self):
        self.addCleanup(worker.PENDING.__setitem__, 0, False)
        self.addCleanup(worker.IN_CELL.__setitem__, 0, False)
        self.addCleanup(worker.STOPPED.__setitem__, 0, False)

    def test_pending_stops_the_next_cell(self):
        worker.on_sigint(2, None)
        self.assertTrue(worker.PENDING[0])
        with mock.patch.object(worker, "own_sigint"):
            r = worker.run_cell({}, {"code": "x = 1"}, 1, interruptible=True)
        self.assertEqual(r["error"]["name"], "KeyboardInterrupt")
        self.assertFalse(worker.PENDING[0])
        with mock.patch.object(worker, "own_sigint"):
            r = worker.run_cell({}, {"code": "x = 1"}, 2, interruptible=True)
        self.assertIsNone(r["error"])

    def test_traceback_ends_in_the_cell(self):
        # The handler raises where the cell was: its frame is not shown.
        self.addCleanup(worker.signal.signal, 2, worker.signal.getsignal(2))
        r = worker.run_cell({}, {"code": "import _signal\n_signal.raise_signal(2)\nx = 1"}, 3, interruptible=True)
        self.assertEqual(r["error"]["name"], "KeyboardInterrupt")
        tb = r["error"]["traceback"]
        self.assertIn('"<cell-3>", line 2', tb)
        self.assertNotIn("on_sigint", tb)

    def test_in_a_cell_it_interrupts(self):
        worker.IN_CELL[0] = True
        with self.assertRaises(KeyboardInterrupt):
            worker.on_sigint(2, None)
        self.assertFalse(worker.PENDING[0])

    def test_once_per_cell(self):
        # The supervisor repeats SIGINT until the cell ends: the repeats
        # must not interrupt the cell's own clean-up.
        self.addCleanup(worker.signal.signal, 2, worker.signal.getsignal(2))
        code = ("import _signal\ntry:\n    _signal.raise_signal(2)\nexcept KeyboardInterrupt:\n"
                "    _signal.raise_signal(2)\n    cleaned = True\n")
        ns = {}
        r = worker.run_cell(ns, {"code": code}, 4, interruptible=True)
        self.assertIsNone(r["error"])
        self.assertTrue(ns.get("cleaned"))
        # The next cell is interruptible again.
        r = worker.run_cell(ns, {"code": "import _signal\n_signal.raise_signal(2)"}, 5, interruptible=True)
        self.assertEqual(r["error"]["name"], "KeyboardInterrupt")
        # A pending signal is that cell's one interrupt, too.
        worker.on_sigint(2, None)
        r = worker.run_cell(ns, {"code": "x = 1"}, 6, interruptible=True)
        self.assertEqual(r["error"]["name"], "KeyboardInterrupt")
        self.assertTrue(worker.STOPPED[0])


class KillAll(unittest.TestCase):
    # os.kill is a mock in both: a real kill(-1) here would reach every
    # process of the user running the tests.
    def test_refused_unless_pid_1(self):
        with mock.patch.object(os, "kill") as kill, mock.patch.object(os, "getpid", return_value=4242):
            self.assertFalse(procs.kill_all())
        kill.assert_not_called()

    def test_pid_1_kills_every_process(self):
        with mock.patch.object(os, "kill") as kill, mock.patch.object(os, "getpid", return_value=1):
            self.assertTrue(procs.kill_all())
        kill.assert_called_once_with(-1, procs.signal.SIGKILL)


class KillNew(unittest.TestCase):
    # What an execution started is what was not there before it, by pid
    # and start time: a pid reused by a new process is new.
    def test_kills_only_what_is_new(self):
        procs_now = {1: (b"S", b"10"), 7: (b"S", b"20"), 8: (b"S", b"99"), 9: (b"Z", b"50"), 10: (b"R", b"60"), 11: (b"S", b"70")}
        before = {1: b"10", 7: b"20", 8: b"30"}
        killed = []

        def kill(pid, sig):
            killed.append(pid)
            procs_now.pop(pid, None)

        with mock.patch.object(os, "listdir", side_effect=lambda _: [str(p) for p in procs_now] + ["self", "sys"]), \
                mock.patch.object(procs, "stat", side_effect=lambda p: procs_now.get(p)), \
                mock.patch.object(os, "kill", side_effect=kill), \
                mock.patch.object(procs, "reap_zombies"):
            procs.kill_new(before, spare=(11,))
        self.assertEqual(sorted(killed), [8, 10])  # 8: reused pid; 9 a zombie, 11 spared

    def test_snapshot_reads_only_new_processes(self):
        procs_now = {1: (b"S", b"10"), 7: (b"S", b"20"), 8: (b"S", b"30")}
        with mock.patch.object(os, "listdir", side_effect=lambda _: [str(p) for p in procs_now] + ["self"]), \
                mock.patch.object(os, "getpid", return_value=1), \
                mock.patch.object(procs, "stat", side_effect=lambda p: procs_now.get(p)) as stat:
            first = procs.snapshot()
            self.assertEqual(first, {1: b"10", 7: b"20", 8: b"30"})
            self.assertEqual(stat.call_count, 3)
            del procs_now[8]
            procs_now[9] = (b"S", b"40")
            self.assertEqual(procs.snapshot(first), {1: b"10", 7: b"20", 9: b"40"})
            self.assertEqual(stat.call_count, 4)  # pid 9's only

    def test_nothing_unless_pid_1(self):
        with mock.patch.object(os, "getpid", return_value=4242):
            self.assertIsNone(procs.snapshot())
        with mock.patch.object(os, "kill") as kill:
            procs.kill_new(None)
        kill.assert_not_called()

    def test_stat_reads_past_the_command_name(self):
        st = procs.stat(os.getpid())
        self.assertEqual(st[0], b"R")
        self.assertTrue(st[1].isdigit())
        self.assertIsNone(procs.stat(1 << 30))


class Checkpoints(unittest.TestCase):
    # Parked copies (protocol 17) outlive what kills an execution's
    # leftovers and a worker's reset: they are spared by pid, and a reset
    # beside them kills the worker's group only.
    def fake(self, parked):
        a = mock.Mock(spec=["worker", "contexts", "parked"])
        a.worker = mock.Mock(pid=10)
        a.contexts = {"c": mock.Mock(pid=20)}
        a.parked = {"": [mock.Mock(pid=11), mock.Mock(pid=0)], "c": [mock.Mock(pid=21)]} if parked else {}
        return a

    def test_parked_copies_are_spared(self):
        self.assertEqual(sorted(agent.Agent.worker_pids(self.fake(True))), [10, 11, 20, 21])

    def test_no_sandbox_wide_reset_beside_parked_copies(self):
        a = self.fake(True)
        a.contexts = {}
        self.assertFalse(agent.Agent.alone(a))
        a.parked = {"": []}
        self.assertTrue(agent.Agent.alone(a))

    def test_checkpoints_bounded(self):
        for k, want in ((None, 0), (0, 0), (3, 3), (99, agent.MAX_CHECKPOINTS), (-1, 0), (True, 0), ("2", 0)):
            self.assertEqual(agent.checkpoints_of({"checkpoints": k}), want, k)


class Reaper(unittest.TestCase):
    def test_watched_status_is_kept(self):
        procs.spawning()
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        procs.watch(pid)
        self.assertEqual(os.waitstatus_to_exitcode(procs.reap(pid)), 3)
        procs.unwatch(pid)
        self.assertNotIn(pid, procs.EXITED)

    def test_reaper_keeps_the_status_of_a_child_it_took(self):
        procs.spawning()
        pid = os.fork()
        if pid == 0:
            os._exit(5)
        procs.watch(pid)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        procs.reap_zombies()  # as SIGCHLD would, before the owner looks
        self.assertEqual(os.waitstatus_to_exitcode(procs.child_status(pid)), 5)
        procs.unwatch(pid)

    def test_watch_survives_the_reaper_adding_a_status_meanwhile(self):
        # SIGCHLD's handler runs on the thread in watch() between two
        # bytecodes of its loop, through the reentrant lock (CI: "dictionary
        # changed size during iteration" ended a shell execution). The
        # set's membership test stands in for that moment.
        class Reaping(set):
            def __contains__(self, p):
                procs.EXITED[max(procs.EXITED) + 1] = 0
                return set.__contains__(self, p)

        watched = Reaping({101})
        with mock.patch.object(procs, "WATCHED", watched), mock.patch.object(procs, "EXITED", {101: 0, 102: 0, 103: 0}):
            procs.watch(104)
            self.assertNotIn(102, procs.EXITED)
            self.assertNotIn(103, procs.EXITED)
            self.assertIn(101, procs.EXITED)


class Budget(unittest.TestCase):
    def test_output_then_result_then_outputs(self):
        b = answer.Budget(9)
        self.assertEqual(b.take(4), 4)
        self.assertFalse(b.cut)
        self.assertEqual(b.text("héllo"), "héll")  # 5 of its 6 bytes fit: é is 2
        self.assertTrue(b.cut)
        self.assertEqual(b.outputs([{"mime": "a", "data": "b"}, "junk"]), [])

    def test_outputs_that_fit_whole(self):
        b = answer.Budget(20)
        outs = b.outputs([{"mime": "m", "data": "x" * 30}, {"mime": "m", "data": "y" * 5}])
        self.assertEqual(outs, [{"mime": "m", "data": "y" * 5}])
        self.assertTrue(b.cut)

    def test_error_keeps_its_name(self):
        b = answer.Budget(3)
        e = b.error({"name": "ValueError", "value": "v" * 10, "traceback": "t"})
        self.assertEqual(e, {"name": "ValueError", "value": "vvv", "traceback": ""})
        self.assertIsNone(b.error(None))

    def test_capture_shares_the_budget(self):
        sent = []
        b = answer.Budget(6)
        out = answer.Capture("stdout", sent.append, 100, b)
        err = answer.Capture("stderr", sent.append, 100, b)
        out.feed(b"abcd")
        err.feed(b"efgh")
        self.assertEqual([m["data"] for m in sent], ["abcd", "ef"])
        self.assertFalse(out.truncated)
        self.assertTrue(err.truncated)


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


class ShellExitCode(unittest.TestCase):
    # A command that exits at once may be reaped (SIGCHLD) before the
    # supervisor watches its pid: its status must be kept all the same,
    # or its wait finds none and the answer says exit code 0.
    def test_reaped_before_the_watch(self):
        import _sandboxd_shell as shell
        real_watch = procs.watch

        def late_watch(pid):
            # The command has exited; SIGCHLD's handler runs now, before
            # the watch, as it may under load.
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            procs.reap_zombies()
            real_watch(pid)

        sent = []
        daemon = mock.Mock()
        daemon.send.side_effect = sent.append
        daemon.read.return_value = None
        daemon.watched.return_value = []
        fake = mock.Mock(daemon=daemon, before={})
        with mock.patch.object(procs, "watch", side_effect=late_watch):
            done = shell.execute(fake, {"code": "echo out; exit 3", "cwd": "/", "timeout": 10}, "x")
        self.assertEqual((done["status"], done["exit_code"]), (consts.STATUS_ERROR, 3))
        self.assertIn("out", "".join(m.get("data", "") for m in sent))
