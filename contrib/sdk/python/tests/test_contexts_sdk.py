"""Code contexts against a real sandboxd ($SANDBOXD_SOCKET): two contexts
keep their own variables, a copy of default starts with default's and then
diverges, restart clears one, and a deleted one is NotFound; file metadata
written and read back; the same from asyncio."""

from __future__ import annotations

import asyncio
import os
import unittest
import uuid

from sandboxd import AsyncSandbox, NotFound, Sandbox

RUN = uuid.uuid4().hex[:12]


def setUpModule() -> None:
    if not os.environ.get("SANDBOXD_SOCKET"):
        raise unittest.SkipTest("SANDBOXD_SOCKET is not set: these tests need a running sandboxd (integration/sdk_python_test.go starts one)")


class TestContexts(unittest.TestCase):
    def test_separate_copy_restart_delete(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            self.assertEqual(sbx.run_code("x = 'default'").status, "ok")
            a = sbx.contexts.create()
            b = sbx.contexts.create()
            self.assertEqual((a.language, a.cwd), ("python", "/workspace"))
            sbx.run_code("x = 'a'", context=a)
            sbx.run_code("x = 'b'", context=b.id)
            self.assertEqual([sbx.run_code("x", context=c).result for c in (a, b)], ["'a'", "'b'"])
            self.assertEqual(sbx.run_code("x").result, "'default'")

            # A copy of default has default's variables, then its own.
            c = sbx.contexts.create(from_="default")
            self.assertEqual(sbx.run_code("x", context=c).result, "'default'")
            sbx.run_code("x = 'copy'", context=c)
            self.assertEqual((sbx.run_code("x", context=c).result, sbx.run_code("x").result), ("'copy'", "'default'"))

            ids = [x.id for x in sbx.contexts.list()]
            self.assertEqual(ids[0], "default")
            self.assertEqual(set(ids), {"default", a.id, b.id, c.id})

            self.assertEqual(sbx.contexts.restart(a).id, a.id)
            e = sbx.run_code("x", context=a)
            self.assertEqual((e.status, e.error.name if e.error else None), ("error", "NameError"))
            self.assertEqual(sbx.run_code("x", context=b).result, "'b'")

            sbx.contexts.delete(b)
            with self.assertRaises(NotFound):
                sbx.run_code("x", context=b)
            self.assertNotIn(b.id, [x.id for x in sbx.contexts.list()])

    def test_shell_context_folder(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.files.mkdir("sub")
            sh = sbx.contexts.create("shell", cwd="sub")
            self.assertEqual((sh.language, sh.cwd), ("shell", "/workspace/sub"))
            self.assertEqual(sbx.commands.run("pwd", context=sh).stdout.strip(), "/workspace/sub")

    def test_file_metadata(self) -> None:
        with Sandbox(labels={"run": RUN}) as sbx:
            sbx.files.write("m.txt", "hi", metadata={"author": "sdk"})
            st = sbx.files.stat("m.txt")
            self.assertEqual((st.metadata, st.permissions[:1]), ({"author": "sdk"}, "-"))
            (ent,) = [f for f in sbx.files.list(".") if f.name == "m.txt"]
            self.assertEqual(ent.metadata, {"author": "sdk"})
            self.assertTrue(ent.permissions.startswith("-rw"))

    def test_async(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create(labels={"run": RUN}) as sbx:
                await sbx.run_code("y = 1")
                c = await sbx.contexts.create(from_="default")
                await sbx.run_code("y = 2", context=c)
                self.assertEqual(((await sbx.run_code("y")).result, (await sbx.run_code("y", context=c)).result), ("1", "2"))
                await sbx.contexts.delete(c)
                with self.assertRaises(NotFound):
                    await sbx.run_code("y", context=c)

        asyncio.run(main())
