"""sandboxd: the Python SDK of sandboxd, code sandboxes over its Unix socket.

    from sandboxd import Sandbox, run

    with Sandbox(template="python", memory_mb=256, labels={"agent": "a1"}) as sbx:
        r = sbx.run_code("x = 6 * 7\\nx")    # r.result == "42"
        sbx.commands.run("ls -la").stdout
        sbx.files.write("data.csv", b"a,b\\n1,2\\n")
        sbx.files.upload_dir("project")         # a folder, as /workspace/project
        p = sbx.processes.start(["python3", "-m", "http.server"])   # in the background
        sbx.commands.run_with_input(["wc", "-c"], input=b"abc")      # (0, b"3\\n", b"")
    print(run("print(1)").stdout)

Standard library only. The daemon's socket is $SANDBOXD_SOCKET, else
/run/sandboxd/sandboxd.sock. Failed calls raise the SandboxdError subclass
of the contract's error code; executions that fail, time out or are killed
are not errors but Executions whose ``status`` says so. sandboxd.tools
gives a sandbox to a model as function-calling tools (OpenAI, Anthropic).
See README.md.
"""

from ._attach import Attached
from ._transport import DEFAULT_SOCKET, SOCKET_ENV, VERSION
from .aio import AsyncCommands, AsyncContexts, AsyncFiles, AsyncProcesses, AsyncSandbox, run_async
from .client import Client
from .commands import Commands
from .contexts import Contexts
from .errors import (
    BadGateway,
    Conflict,
    Internal,
    InvalidArgument,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    ProtocolError,
    RequestTimeout,
    ResourceExhausted,
    SandboxdError,
    Unavailable,
)
from .files import Files
from .models import (
    CodeContext,
    DataDirHealth,
    ErrorDetail,
    ExecMetrics,
    Execution,
    ExecutionError,
    ExecutionSummary,
    FileEvent,
    FileInfo,
    FileStat,
    FileWritten,
    Health,
    HealthCheck,
    Limits,
    Output,
    Process,
    ProcessChunk,
    ProcessLogs,
    Session,
    Snapshot,
    Stats,
    Volume,
    VolumeMount,
)
from .oneshot import run
from .processes import Processes
from .sandbox import Sandbox

__version__ = VERSION

__all__ = [
    "AsyncCommands",
    "AsyncContexts",
    "AsyncFiles",
    "AsyncProcesses",
    "AsyncSandbox",
    "Attached",
    "BadGateway",
    "Client",
    "CodeContext",
    "Commands",
    "Conflict",
    "Contexts",
    "DEFAULT_SOCKET",
    "DataDirHealth",
    "ErrorDetail",
    "ExecMetrics",
    "Execution",
    "ExecutionError",
    "ExecutionSummary",
    "FileEvent",
    "FileInfo",
    "FileStat",
    "FileWritten",
    "Files",
    "Health",
    "HealthCheck",
    "Internal",
    "InvalidArgument",
    "Limits",
    "NotFound",
    "Output",
    "PayloadTooLarge",
    "PermissionDenied",
    "Process",
    "ProcessChunk",
    "ProcessLogs",
    "Processes",
    "ProtocolError",
    "RequestTimeout",
    "ResourceExhausted",
    "SOCKET_ENV",
    "Sandbox",
    "SandboxdError",
    "Session",
    "Snapshot",
    "Stats",
    "Unavailable",
    "Volume",
    "VolumeMount",
    "run",
    "run_async",
]
