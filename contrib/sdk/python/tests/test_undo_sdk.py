"""Undo and volume sharing against a real sandboxd ($SANDBOXD_SOCKET): a
session with checkpoints 3 sets x, then deletes it and writes a file in one
execution; undo brings x back and takes the file away; going back further
than it keeps, or in a session without checkpoints, is Conflict; the same
from asyncio. A volume's sharing replaced, then taken away."""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid

from sandboxd import AsyncSandbox, Client, Conflict, NotFound, Sandbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestUndo(unittest.TestCase):
    def test_undo(self) -> None:
        with Sandbox(checkpoints=3, labels={"run": RUN}) as sbx:
            self.assertEqual(sbx.session.checkpoints, 3)
            self.assertEqual(sbx.run_code("x = 1").status, "ok")
            r = sbx.run_code("del x\nopen('/workspace/undone.txt', 'w').write('gone after undo')")
            self.assertEqual(r.status, "ok")
            self.assertTrue(sbx.files.exists("undone.txt"))

            self.assertEqual(sbx.undo(), 1)
            self.assertEqual(sbx.run_code("x").result, "1", "x is back")
            self.assertFalse(sbx.files.exists("undone.txt"), "the file written since is gone")

            # Of the three it keeps, one was used, and the executions since
            # keep one each: four steps are more than it has.
            with self.assertRaises(Conflict):
                sbx.undo(4)
            self.assertEqual(sbx.run_code("x").result, "1", "a refused undo changes nothing")

        with Sandbox(labels={"run": RUN}) as plain:
            self.assertEqual(plain.session.checkpoints, 0)
            with self.assertRaises(Conflict):
                plain.undo()

    def test_async(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create(checkpoints=2, labels={"run": RUN}) as sbx:
                await sbx.run_code("y = 'kept'")
                await sbx.run_code("y = 'changed'")
                self.assertEqual(await sbx.undo(), 1)
                self.assertEqual((await sbx.run_code("y")).result, "'kept'")

        asyncio.run(main())


class TestVolumeSharing(unittest.TestCase):
    def test_update(self) -> None:
        c = Client()
        name = f"sdk-{RUN}-shared"
        v = c.create_volume(name, 32)

        def cleanup() -> None:
            try:
                c.delete_volume(name)
            except NotFound:
                pass

        self.addCleanup(cleanup)
        self.assertEqual(v.shared_with, [])
        other = 4000000 + os.getuid() % 1000  # a uid with no sessions
        self.assertEqual(c.update_volume(name, shared_with=[other]).shared_with, [other])
        self.assertEqual(c.volume(name).shared_with, [other])
        self.assertEqual(c.update_volume(v, shared_with=[]).shared_with, [])
        self.assertEqual(c.volume(name).shared_with, [])
