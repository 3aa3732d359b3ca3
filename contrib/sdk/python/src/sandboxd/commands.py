"""sbx.commands: shell commands in a sandbox, as E2B's Sandbox.commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ._api_exec import OnOutput
from .models import Execution

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
    ) -> Execution:
        """Runs cmd with /bin/sh in /workspace (or ``cwd``). A non-zero exit
        is ``status == "error"`` with its ``exit_code``, not an exception."""
        return self._sbx.run_code(
            cmd,
            language="shell",
            timeout=timeout,
            env=env,
            cwd=cwd,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            request_timeout=request_timeout,
        )

    def submit(
        self,
        cmd: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> str:
        """Starts cmd with /bin/sh without waiting for it, and answers the
        execution's id: ``sbx.wait_execution(eid)`` waits for its end,
        ``sbx.execution(eid)`` has its output so far (see Sandbox.submit)."""
        return self._sbx.submit(cmd, language="shell", timeout=timeout, env=env, cwd=cwd)
