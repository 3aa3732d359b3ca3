"""Snapshots and fork against a real sandboxd ($SANDBOXD_SOCKET): a session
writes a file and is snapshotted; a session made from the snapshot has the
file and its first execution says state_reset (files only); two made at
once; a fork of two; the snapshot listed, got by name, deleted; the same
from asyncio."""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid

from sandboxd import AsyncSandbox, Client, NotFound, Sandbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestSnapshots(unittest.TestCase):
    def kill_after(self, *sandboxes: Sandbox) -> None:
        """Deletes the sandboxes after the test, even if it fails midway."""
        for s in sandboxes:
            self.addCleanup(s.kill)

    def delete_after(self, c: Client, ref: str) -> None:
        def cleanup() -> None:
            try:
                c.delete_snapshot(ref)
            except NotFound:
                pass

        self.addCleanup(cleanup)

    def test_snapshot_create_fork_delete(self) -> None:
        c = Client()
        name = f"sdk-{RUN}"
        with Sandbox(labels={"run": RUN}) as src:
            src.files.write("kept.txt", "from the source\n")
            snap = src.snapshot(name)
            self.delete_after(c, snap.id)
            self.assertEqual((snap.name, snap.session_id, snap.template, snap.memory), (name, src.id, src.session.template, False))
            self.assertTrue(snap.id)

            # One from the snapshot: the file, and a fresh interpreter said.
            with Sandbox(snapshot=name, labels={"copy": "1"}) as one:
                self.assertNotEqual(one.id, src.id)
                self.assertEqual(one.session.labels, {"run": RUN, "copy": "1"}, "labels are added to the snapshot's")
                first = one.run_code("open('/workspace/kept.txt').read()")
                self.assertEqual((first.status, first.result, first.state_reset), ("ok", "'from the source\\n'", True))
                self.assertFalse(one.run_code("1").state_reset, "only the first execution says state_reset")

            # Several at once, a list.
            many = Sandbox.from_snapshot(snap, 2)
            self.kill_after(*many)
            self.assertEqual(len({s.id for s in many}), 2)
            for s in many:
                self.assertEqual(s.files.read("kept.txt"), b"from the source\n")

            # A fork of the running source: where it is now.
            src.files.write("later.txt", "after the snapshot\n")
            forks = src.fork(2)
            self.kill_after(*forks)
            self.assertEqual(len({f.id for f in forks} | {src.id}), 3)
            for f in forks:
                r = f.commands.run("cat /workspace/kept.txt /workspace/later.txt")
                self.assertEqual((r.exit_code, r.stdout, r.state_reset), (0, "from the source\nafter the snapshot\n", True))
            self.assertEqual(src.run_code("1").result, "1", "the source runs on")

        self.assertIn(snap.id, [s.id for s in c.snapshots()])
        self.assertEqual(c.snapshot(name).id, snap.id, "a snapshot outlives its session")
        c.delete_snapshot(name)
        with self.assertRaises(NotFound):
            c.snapshot(snap.id)
        self.assertNotIn(snap.id, [s.id for s in c.snapshots()])

    def test_async(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create(labels={"run": RUN}) as src:
                await src.files.write("a.txt", "async\n")
                snap = await src.snapshot()
                self.delete_after(Client(), snap.id)
                made = await AsyncSandbox.from_snapshot(snap, 1)
                for s in made:
                    async with s:
                        self.assertEqual((await s.commands.run("cat /workspace/a.txt")).stdout, "async\n")
                for f in await src.fork():
                    async with f:
                        self.assertEqual(await f.files.read("a.txt"), b"async\n")
            Client().delete_snapshot(snap.id)

        asyncio.run(main())
