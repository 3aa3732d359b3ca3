"""sbx.commands: shell commands in a sandbox, as E2B's Sandbox.commands."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Mapping, Sequence

from ._api_exec import OnOutput
from .models import CodeContext, Execution
from .processes import shell_argv

if TYPE_CHECKING:
    from .sandbox import Sandbox


class Commands:
    """Runs shell commands in its sandbox's session (language "shell")."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    def run(
        self,
        cmd: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stdout: OnOutput | None = None,
        on_stderr: OnOutput | None = None,
        request_timeout: float | None = None,
        context: str | CodeContext | None = None,
    ) -> Execution:
        """Runs cmd with /bin/sh in /workspace (or ``cwd``, else the folder
        of ``context``, a code context). A non-zero exit is ``status ==
        "error"`` with its ``exit_code``, not an exception."""
        return self._sbx.run_code(
            cmd,
            language="shell",
            timeout=timeout,
            env=env,
            cwd=cwd,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            request_timeout=request_timeout,
            context=context,
        )

    def submit(
        self,
        cmd: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        context: str | CodeContext | None = None,
    ) -> str:
        """Starts cmd with /bin/sh without waiting for it, and answers the
        execution's id: ``sbx.wait_execution(eid)`` waits for its end,
        ``sbx.execution(eid)`` has its output so far (see Sandbox.submit)."""
        return self._sbx.submit(cmd, language="shell", timeout=timeout, env=env, cwd=cwd, context=context)

    def run_with_input(
        self,
        cmd: str | Sequence[str],
        input: bytes | str = b"",
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, bytes]:
        """Runs a command with ``input`` as its standard input (a str as
        UTF-8) and answers (exit code, stdout, stderr), over an attach: a
        list runs as it is, a string with /bin/sh. Unlike run, it is not an
        execution of the session (not in its history, beside one running,
        no timeout of its own): ``timeout`` bounds it, past it
        RequestTimeout and the command is ended. A command that exits
        before it read all its input is no error."""
        a = self._sbx.attach(shell_argv(cmd), env=env, cwd=cwd)
        data = input.encode() if isinstance(input, str) else bytes(input)

        def feed() -> None:
            # From a thread of its own: a command that writes while it
            # reads would otherwise wait for its output to be read while
            # this waited for its input to be taken.
            try:
                if data:
                    a.write(data)
                a.close_stdin()
            except Exception:
                pass  # it exited (or was ended) first: its status says how

        with a:
            t = threading.Thread(target=feed, name="sandboxd-attach-input", daemon=True)
            t.start()
            out, err = bytearray(), bytearray()
            for stream, chunk in a.read(timeout):
                (out if stream == "stdout" else err).extend(chunk)
            code = a.wait()
        t.join(5)
        return code, bytes(out), bytes(err)
