"""Volumes against a real sandboxd ($SANDBOXD_SOCKET): a 32 MB volume two
sessions mount at once (/data, and /mnt/v read-only), what one writes the
other reads; deleting it while they mount it is Conflict; the sessions
deleted, then the volume; the same from asyncio."""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid

from sandboxd import AsyncSandbox, Client, Conflict, NotFound, Sandbox, VolumeMount

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestVolumes(unittest.TestCase):
    def volume(self, suffix: str) -> str:
        """A volume of this run, deleted after the test even if it fails
        midway (its sessions are gone by then: each test's with blocks)."""
        c = Client()
        name = f"sdk-{RUN}-{suffix}"
        v = c.create_volume(name, 32)
        self.assertEqual((v.name, v.size_mb, v.mounted_by), (name, 32, []))

        def cleanup() -> None:
            try:
                c.delete_volume(name)
            except NotFound:
                pass

        self.addCleanup(cleanup)
        return name

    def test_shared_between_sessions(self) -> None:
        c = Client()
        name = self.volume("shared")
        self.assertIn(name, [v.name for v in c.volumes()])
        with Sandbox(labels={"run": RUN}, volumes=[{"name": name, "path": "/data"}]) as a, Sandbox(
            labels={"run": RUN}, volumes=[VolumeMount(name, "/mnt/v", read_only=True)]
        ) as b:
            self.assertEqual(a.session.volumes, [VolumeMount(name, "/data")])
            self.assertEqual(b.info().volumes, [VolumeMount(name, "/mnt/v", read_only=True)])

            w = a.commands.run("echo from-a > /data/f.txt")
            self.assertEqual((w.exit_code, w.stderr), (0, ""))
            self.assertEqual(b.run_code("open('/mnt/v/f.txt').read()").result, "'from-a\\n'")
            self.assertNotEqual(b.commands.run("touch /mnt/v/g").exit_code, 0, "a read-only mount took a write")

            self.assertEqual(sorted(c.volume(name).mounted_by), sorted([a.id, b.id]))
            with self.assertRaises(Conflict):
                c.delete_volume(name)
        # The with blocks deleted both sessions: nothing mounts it now.
        self.assertEqual(c.volume(name).mounted_by, [])
        c.delete_volume(name)
        with self.assertRaises(NotFound):
            c.volume(name)
        self.assertNotIn(name, [v.name for v in c.volumes()])

    def test_async(self) -> None:
        name = self.volume("async")

        async def main() -> None:
            async with await AsyncSandbox.create(labels={"run": RUN}, volumes=[{"name": name, "path": "/data"}]) as sbx:
                await sbx.commands.run("echo kept > /data/k")
            # A later session sees what an earlier one wrote.
            async with await AsyncSandbox.create(labels={"run": RUN}, volumes=[{"name": name, "path": "/data"}]) as sbx:
                self.assertEqual((await sbx.commands.run("cat /data/k")).stdout, "kept\n")

        asyncio.run(main())
