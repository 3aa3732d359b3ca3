"""The fuller file calls against a real sandboxd ($SANDBOXD_SOCKET): stat,
mkdir, move, a listing to a depth, and a watch that sees what the
sandbox's code makes."""

from __future__ import annotations

import contextlib
import os
import unittest
import uuid

from sandboxd import Conflict, InvalidArgument, Sandbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestFileOps(unittest.TestCase):
    def test_stat_mkdir_move_list(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            made = sbx.files.mkdir("a/b")
            self.assertTrue(made.created)
            self.assertFalse(sbx.files.mkdir("a/b").created)
            sbx.commands.run("printf hi > a/b/f.txt")
            st = sbx.files.stat("a/b/f.txt")
            self.assertEqual((st.type, st.size, st.owner, st.path), ("file", 2, "sandbox", "/workspace/a/b/f.txt"))
            self.assertTrue(st.permissions.startswith("-rw"))
            moved = sbx.files.move("a/b/f.txt", "a/g.txt")
            self.assertEqual(moved.path, "/workspace/a/g.txt")
            sbx.files.write("a/h.txt", "x")
            with self.assertRaises(Conflict):
                sbx.files.move("a/g.txt", "a/h.txt")
            with self.assertRaises(InvalidArgument):
                sbx.files.stat("/etc/passwd")
            paths = sorted(e.path for e in sbx.files.list("a", depth=2))
            self.assertEqual(paths, ["/workspace/a/b", "/workspace/a/g.txt", "/workspace/a/h.txt"])
            self.assertEqual(sorted(e.name for e in sbx.files.list("a")), ["b", "g.txt", "h.txt"])

    def test_watch(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            # The call returns once the daemon set the watch.
            with contextlib.closing(sbx.files.watch(".", recursive=True)) as it:
                sbx.commands.run("echo one > made.txt; echo two >> made.txt")
                seen = set()
                for ev in it:
                    seen.add((ev.type, ev.path))
                    if ("write", "/workspace/made.txt") in seen:
                        break
                self.assertIn(("create", "/workspace/made.txt"), seen)
