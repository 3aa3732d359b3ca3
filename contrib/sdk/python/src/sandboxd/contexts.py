"""sbx.contexts: code contexts, interpreters of their own in one sandbox.

    a = sbx.contexts.create()                     # an empty interpreter
    sbx.run_code("x = 1", context=a)
    b = sbx.contexts.create(from_="default")      # a copy of default's, globals and all
    sbx.run_code("x", context=b.id)
    sbx.contexts.restart(a)                       # its variables gone
    sbx.contexts.delete(b)

Files, processes, network and limits stay the session's; executions still
run one at a time, in whichever context (docs/API.md, Code contexts).
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from .models import CodeContext

if TYPE_CHECKING:
    from .sandbox import Sandbox


def context_id(c: str | CodeContext | None) -> str | None:
    """The id the wire takes, from an id or a CodeContext."""
    if c is None or isinstance(c, str):
        return c or None
    if isinstance(c, CodeContext):
        return c.id
    raise TypeError(f"context must be an id (str) or a CodeContext, not {type(c).__name__}")


class Contexts:
    """The code contexts of its sandbox's session."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sbx = sandbox

    def create(self, language: str | None = None, *, cwd: str | None = None, from_: str | CodeContext | None = None) -> CodeContext:
        """A new context: a Python interpreter (the default ``language``)
        or, for "shell", a working folder; started in ``cwd`` (default
        /workspace). ``from_`` makes it a copy of that Python context's
        interpreter at this moment (its globals, imports and folder);
        from then on the two diverge."""
        return self._sbx.client.create_context(self._sbx.id, language=language, cwd=cwd, from_=context_id(from_))

    def list(self) -> builtins.list[CodeContext]:
        """The session's contexts, "default" first."""
        return self._sbx.client.contexts(self._sbx.id)

    def delete(self, context: str | CodeContext) -> None:
        """Stops a context's interpreter and forgets it ("default" is never deleted)."""
        self._sbx.client.delete_context(self._sbx.id, _required(context))

    def restart(self, context: str | CodeContext) -> CodeContext:
        """Starts a context's interpreter afresh: its variables are gone."""
        return self._sbx.client.restart_context(self._sbx.id, _required(context))


def _required(c: str | CodeContext) -> str:
    cid = context_id(c)
    if not cid:
        raise ValueError("a context id is required")
    return cid
