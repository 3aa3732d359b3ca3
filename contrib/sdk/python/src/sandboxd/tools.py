"""sandboxd.tools: a sandbox as function-calling tools, for any agent framework.

    from sandboxd.tools import Toolbox

    with Toolbox(labels={"agent": "a1"}) as tb:       # the session is made on first use
        resp = openai.chat.completions.create(model=..., messages=messages, tools=tb.openai_tools())
        for call in resp.choices[0].message.tool_calls or []:
            messages.append(tb.handle_openai(call))
    # leaving the block deleted the session it made

Five tools: run_python, run_shell, write_file, read_file and
install_packages. Their names, descriptions and input schemas are in
tools.json, beside this module, the one copy every SDK uses;
openai_tools, openai_responses_tools and anthropic_tools give them in each
API's form. A Toolbox runs a model's call against a Sandbox and answers the
tool-result message of the API the call came from. A call never raises:
an unknown tool, bad arguments, a daemon error or code that failed is an
error result the model reads, so an agent loop goes on.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import posixpath
import threading
from typing import Any, Callable, Iterable, Mapping, Optional, Union

from . import _tools_schema as schema
from ._tools_result import DEFAULT_MAX_CHARS, MAX_ENTRIES, MIN_MAX_CHARS, ToolResult, bound
from .errors import SandboxdError
from .models import STATUS_KILLED, STATUS_INTERRUPTED, STATUS_LOST, STATUS_OK, STATUS_TIMEOUT, Execution, FileInfo
from .sandbox import Sandbox

__all__ = [
    "DEFAULT_MAX_CHARS",
    "TOOL_NAMES",
    "TOOLS_VERSION",
    "ToolResult",
    "Toolbox",
    "anthropic_tools",
    "definitions",
    "dispatch",
    "openai_responses_tools",
    "openai_tools",
]

TOOL_NAMES: tuple[str, ...] = tuple(schema.TOOLS)
"""run_python, run_shell, write_file, read_file, install_packages."""

TOOLS_VERSION = schema.VERSION
"""The version of tools.json: it grows when a tool or its arguments change."""

Names = Optional[Union[Iterable[str], str]]
"""Tools by name: one, several, or None for all."""

_MODEL_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types the model APIs take."""


def definitions(names: Names = None) -> list[dict[str, Any]]:
    """The tools as tools.json has them: {name, description, input_schema},
    all or those named, in that order (ValueError for a name that is none)."""
    return schema.pick(names)


def openai_tools(names: Names = None) -> list[dict[str, Any]]:
    """The tools for OpenAI's Chat Completions (``tools=``):
    {"type": "function", "function": {name, description, parameters}}."""
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}} for t in schema.pick(names)]


def openai_responses_tools(names: Names = None) -> list[dict[str, Any]]:
    """The tools for OpenAI's Responses API, whose form is flat:
    {"type": "function", name, description, parameters}."""
    return [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["input_schema"]} for t in schema.pick(names)]


def anthropic_tools(names: Names = None) -> list[dict[str, Any]]:
    """The tools for Anthropic's Messages API: {name, description, input_schema}."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]} for t in schema.pick(names)]


def _get(obj: Any, key: str) -> Any:
    """A field of a call as the API's JSON has it (a dict) or as its SDK
    does (an object with attributes)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


class _Refused(Exception):
    """A call that cannot run as the model gave it; its text is for the model."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# What the model is told of an execution that did not simply end.
_STATUS_NOTES = {
    STATUS_TIMEOUT: "stopped: it ran past its time limit",
    STATUS_KILLED: "killed: it went over a limit of the sandbox (most often memory)",
    STATUS_INTERRUPTED: "interrupted on request",
    STATUS_LOST: "its output is lost: the sandbox's daemon restarted while it ran",
}

# An exception's message is one line for the model; its full text is in the traceback.
_MAX_ERROR_VALUE = 2000


class Toolbox:
    """Runs a model's tool calls against one sandbox.

    ``sandbox`` is the Sandbox to use; without one, the Toolbox makes one on
    its first call, from ``create`` (the arguments of Sandbox: template,
    memory_mb, network, labels, socket, ...), and close() or leaving a
    ``with`` block deletes it. A sandbox given is the caller's: close()
    leaves it. ``names`` limits the tools offered and run. ``max_chars``
    bounds the text of each result. ``timeout`` (seconds) is run_python's
    and run_shell's, else the session's timeout_s; ``index_url`` is where
    install_packages installs from, else the daemon's package index.

    Calls may come from several threads at once, as parallel tool calls do.
    """

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        *,
        names: Names = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        timeout: float | None = None,
        index_url: str | None = None,
        **create: Any,
    ) -> None:
        if sandbox is not None and create:
            raise TypeError(f"Toolbox: {', '.join(create)} would create a sandbox, and one was given")
        if create:
            # A misspelt option fails here, not at the model's first call.
            inspect.signature(Sandbox).bind(**create)
        if max_chars < MIN_MAX_CHARS:
            raise ValueError(f"Toolbox: max_chars {max_chars} is below {MIN_MAX_CHARS}, too little to hold a result")
        self._names = tuple(t["name"] for t in schema.pick(names))
        self.max_chars = max_chars
        self.timeout = timeout
        self.index_url = index_url
        self._create = create
        self._sandbox = sandbox
        self._owned: Sandbox | None = None
        self._lock = threading.Lock()
        self._tools: dict[str, Callable[[Sandbox, dict[str, Any]], ToolResult]] = {
            "run_python": self._run_python,
            "run_shell": self._run_shell,
            "write_file": self._write_file,
            "read_file": self._read_file,
            "install_packages": self._install_packages,
        }

    @property
    def names(self) -> tuple[str, ...]:
        """The tools this Toolbox offers and runs."""
        return self._names

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, made now if the Toolbox was given none and made none yet."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = self._owned = Sandbox(**self._create)
            return self._sandbox

    def definitions(self) -> list[dict[str, Any]]:
        return definitions(self._names)

    def openai_tools(self) -> list[dict[str, Any]]:
        return openai_tools(self._names)

    def openai_responses_tools(self) -> list[dict[str, Any]]:
        return openai_responses_tools(self._names)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        return anthropic_tools(self._names)

    def run(self, name: str, arguments: Mapping[str, Any] | str | None = None, *, call_id: str | None = None) -> ToolResult:
        """Runs one tool call: ``arguments`` as a dict or as the JSON text
        the model wrote. It raises no Exception: every failure is an error
        result whose text tells the model what went wrong."""
        try:
            if name not in self._names:
                raise _Refused("unknown_tool", f"there is no tool {name!r}: the tools are {', '.join(self._names)}")
            args = _arguments(arguments)
            p = schema.problem(schema.TOOLS[name]["input_schema"], args, "arguments")
            if p:
                raise _Refused("invalid_argument", f"{name}: {p}")
            r = self._tools[name](self.sandbox, args)
        except _Refused as e:
            # The model's mistake, not the SDK's: nothing for a caller to re-raise.
            r = self._error(name, e.code, str(e), None)
        except SandboxdError as e:
            r = self._error(name, e.code or "internal", e.message, e)
        except Exception as e:  # noqa: BLE001 - the agent loop must go on; the model reads what broke
            r = self._error(name, "internal", f"{type(e).__name__}: {e}", e)
        r.call_id = call_id
        return r

    __call__ = run

    def handle(self, call: Any) -> ToolResult:
        """Runs a tool call of any of the three APIs, told apart by its shape
        (see handle_openai, handle_openai_responses, handle_anthropic)."""
        if _get(call, "function") is not None:
            fn = _get(call, "function")
            return self.run(_get(fn, "name") or "", _get(fn, "arguments"), call_id=_get(call, "id"))
        if _get(call, "type") == "function_call" or _get(call, "call_id") is not None:
            return self.run(_get(call, "name") or "", _get(call, "arguments"), call_id=_get(call, "call_id"))
        if _get(call, "type") == "tool_use" or _get(call, "input") is not None:
            return self.run(_get(call, "name") or "", _get(call, "input"), call_id=_get(call, "id"))
        return self._error(str(_get(call, "name") or ""), "invalid_argument", "not a tool call of OpenAI or Anthropic", None)

    def handle_openai(self, call: Any) -> dict[str, Any]:
        """Runs a Chat Completions tool call ({id, type: "function", function:
        {name, arguments}}, a dict or the openai package's object) and
        answers its {"role": "tool", ...} message."""
        fn = _get(call, "function")
        r = self.run(_get(fn, "name") or "", _get(fn, "arguments"), call_id=_get(call, "id"))
        return r.to_openai()

    def handle_openai_responses(self, call: Any) -> dict[str, Any]:
        """Runs a Responses API function_call item ({type: "function_call",
        call_id, name, arguments}) and answers its function_call_output."""
        r = self.run(_get(call, "name") or "", _get(call, "arguments"), call_id=_get(call, "call_id"))
        return r.to_openai_responses()

    def handle_anthropic(self, block: Any) -> dict[str, Any]:
        """Runs a Messages API tool_use block ({type: "tool_use", id, name,
        input}) and answers its tool_result block; a turn's results all go
        in one user message."""
        r = self.run(_get(block, "name") or "", _get(block, "input"), call_id=_get(block, "id"))
        return r.to_anthropic()

    def close(self) -> None:
        """Deletes the sandbox the Toolbox made, if it made one; a later
        call makes another."""
        with self._lock:
            owned = self._owned
            if owned is None:
                return
            owned.kill()
            self._owned = self._sandbox = None

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Toolbox(sandbox={self._sandbox!r}, names={list(self._names)!r})"

    # The tools. Each answers what the model reads; the schema has checked
    # the arguments' shape already.

    def _result(self, name: str, data: dict[str, Any], *, is_error: bool = False, execution: Execution | None = None) -> ToolResult:
        # Raster images only: the model APIs take no SVG, which display()
        # can now output (its text is in the output's bundle).
        images = [o for o in execution.outputs if o.mime in _MODEL_IMAGES] if execution else []
        if images:
            data["images"] = [o.mime for o in images]
        text, cut = bound(data, self.max_chars)
        return ToolResult(name=name, data=data, text=text, is_error=is_error, images=images, cut=cut, execution=execution)

    def _error(self, name: str, code: str, message: str, exc: BaseException | None) -> ToolResult:
        r = self._result(name, {"error": {"code": code, "message": message}}, is_error=True)
        r.error_code, r.exception = code, exc
        return r

    def _execution(self, name: str, e: Execution, python: bool) -> ToolResult:
        d: dict[str, Any] = {"status": e.status}
        if python:
            d["result"] = e.result
        else:
            d["exit_code"] = e.exit_code
        d["stdout"], d["stderr"] = e.stdout, e.stderr
        if e.error is not None and e.status != STATUS_LOST:
            d["error"] = {"name": e.error.name, "value": e.error.value[:_MAX_ERROR_VALUE]}
            # The traceback is on stderr too, as Python prints it: not twice.
            if e.error.traceback and e.error.traceback.strip() not in e.stderr:
                d["traceback"] = e.error.traceback
        notes = []
        if e.status in _STATUS_NOTES:
            notes.append(_STATUS_NOTES[e.status])
        if e.status == STATUS_LOST and e.error is not None and e.error.value:
            notes.append(e.error.value[:_MAX_ERROR_VALUE])
        if e.state_reset:
            notes.append("the interpreter was restarted: variables and imports are gone, files stay")
        if e.truncated:
            notes.append("the sandbox cut the output at its own limit")
        if notes:
            d["message"] = "; ".join(notes)
        return self._result(name, d, is_error=e.status != STATUS_OK, execution=e)

    def _run_python(self, sbx: Sandbox, args: dict[str, Any]) -> ToolResult:
        return self._execution("run_python", sbx.run_code(args["code"], timeout=self.timeout), python=True)

    def _run_shell(self, sbx: Sandbox, args: dict[str, Any]) -> ToolResult:
        return self._execution("run_shell", sbx.commands.run(args["command"], timeout=self.timeout), python=False)

    def _install_packages(self, sbx: Sandbox, args: dict[str, Any]) -> ToolResult:
        return self._execution("install_packages", sbx.install(*args["packages"], index_url=self.index_url), python=False)

    def _write_file(self, sbx: Sandbox, args: dict[str, Any]) -> ToolResult:
        content: str = args["content"]
        data: bytes
        if args.get("encoding") == "base64":
            try:
                # Models wrap long base64 in lines.
                data = base64.b64decode("".join(content.split()), validate=True)
            except (binascii.Error, ValueError) as e:
                raise _Refused("invalid_argument", f"write_file: `content` is not valid base64 ({e})") from e
        else:
            try:
                data = content.encode("utf-8")
            except UnicodeEncodeError as e:
                # JSON can carry a lone surrogate ("\ud800"); no file can.
                raise _Refused("invalid_argument", f"write_file: `content` is not valid UTF-8 text ({e.reason} at {e.start})") from e
        w = sbx.files.write(args["path"], data)
        return self._result("write_file", {"path": w.path, "size": w.size})

    def _read_file(self, sbx: Sandbox, args: dict[str, Any]) -> ToolResult:
        path: str = args["path"]
        shown = posixpath.normpath(posixpath.join("/workspace", path))
        got = sbx.client.get_file(sbx.id, path)
        if not isinstance(got, bytes):
            return self._result("read_file", _listing(shown, got))
        d: dict[str, Any] = {"path": shown, "size": len(got)}
        try:
            if b"\x00" in got:
                raise UnicodeDecodeError("utf-8", got, 0, 1, "a NUL byte: binary")
            d["encoding"], d["content"] = "utf-8", got.decode("utf-8")
        except UnicodeDecodeError:
            d["encoding"], d["content"] = "base64", base64.b64encode(got).decode("ascii")
        return self._result("read_file", d)


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The arguments as a dict: models write JSON text (OpenAI), SDKs give
    dicts (Anthropic); an empty text is no arguments."""
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes)):
        if not arguments.strip():
            return {}
        try:
            v = json.loads(arguments)
        except ValueError as e:
            raise _Refused("invalid_argument", f"the arguments are not valid JSON: {e}") from e
    else:
        v = arguments
    if not isinstance(v, Mapping):
        raise _Refused("invalid_argument", "the arguments must be a JSON object")
    return dict(v)


def _listing(path: str, entries: list[FileInfo]) -> dict[str, Any]:
    d: dict[str, Any] = {"path": path, "type": "folder", "entries": [{"name": e.name, "type": e.type, "size": e.size} for e in entries[:MAX_ENTRIES]]}
    if len(entries) > MAX_ENTRIES:
        d["message"] = f"the first {MAX_ENTRIES} of {len(entries)} entries; list the rest with run_shell (ls, find)"
    return d


def dispatch(sandbox: Sandbox, name: str, arguments: Mapping[str, Any] | str | None = None, *, max_chars: int = DEFAULT_MAX_CHARS, **options: Any) -> ToolResult:
    """Runs one tool call against a sandbox: Toolbox(sandbox, ...).run(name,
    arguments), for a caller that keeps no Toolbox."""
    return Toolbox(sandbox, max_chars=max_chars, **options).run(name, arguments)
