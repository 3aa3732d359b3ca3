"""run: code run once in a fresh sandbox that is gone afterwards (POST /v1/run)."""

from __future__ import annotations

from typing import Iterable, Mapping

from ._api_exec import OnOutput
from .client import Client
from .models import Execution


def run(
    code: str,
    language: str = "python",
    *,
    template: str | None = None,
    runtime: str | None = None,
    memory_mb: int | None = None,
    cpus: float | None = None,
    pids: int | None = None,
    disk_mb: int | None = None,
    network: str | None = None,
    allow: Iterable[str] | None = None,
    env: Mapping[str, str] | None = None,
    mcp_servers: Iterable[str] | None = None,
    files: Mapping[str, bytes | str] | None = None,
    timeout: float | None = None,
    on_stdout: OnOutput | None = None,
    on_stderr: OnOutput | None = None,
    socket: str | None = None,
    request_timeout: float | None = None,
    client: Client | None = None,
) -> Execution:
    """Runs code ("python" or "shell") once in a fresh sandbox, with
    ``files`` (path: content) written into it first; the sandbox and its
    files are gone afterwards. ``timeout`` is the execution's, in whole
    seconds (a fraction is rounded up); the rest are the fields of a create.

        print(run("print(1)").stdout)
    """
    c = client or Client(socket)
    return c.run(
        code,
        language=language,
        timeout=timeout,
        files=files,
        on_stdout=on_stdout,
        on_stderr=on_stderr,
        request_timeout=request_timeout,
        template=template,
        runtime=runtime,
        memory_mb=memory_mb,
        cpus=cpus,
        pids=pids,
        disk_mb=disk_mb,
        network=network,
        allow=allow,
        env=env,
        mcp_servers=mcp_servers,
    )
