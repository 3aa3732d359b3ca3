"""ToolResult: the outcome of one tool call, and the tool-result message
each model API takes for it.

The model reads ``text``: the outcome as a JSON object, bounded to a number
of characters, since a model's context is what an agent runs out of first
(a `pip install` or a loop that prints can write megabytes). Images go
beside the text, in the form each API shows a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .models import Execution, Output

DEFAULT_MAX_CHARS = 20000
"""The default bound of the text a model is given for one call: about 5000
tokens, room for a traceback or a page of output."""

MIN_MAX_CHARS = 1000
"""Below this, the frame of an answer (status, path, an error) might not fit."""

# The fields that may be long, and which end of each to keep: both for
# output (a traceback ends it, a header starts it), the start for a file.
_CUTTABLE = {"stdout": "middle", "stderr": "middle", "result": "middle", "traceback": "middle", "content": "head"}

_NOTE = (
    "{fields} cut to fit the {max} characters of a tool result; for the rest, "
    "write it to a file and read parts of it (run_shell: head, tail, grep, sed -n)"
)

# What a folder's listing may hold in full; a larger one is cut to this.
MAX_ENTRIES = 500


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _enc_len(s: str) -> int:
    """The length of s inside a JSON text: escapes make it longer."""
    return len(_dumps(s)) - 2


def _cut(s: str, budget: int, mode: str) -> str:
    """s cut to about ``budget`` encoded characters, with a mark saying how
    much went."""
    ratio = len(s) / max(_enc_len(s), 1)
    keep = max(int(budget * ratio), 0)
    gone = len(s) - keep
    if mode == "head":
        return f"{s[:keep]}\n[… {gone} more characters cut]"
    head = keep * 3 // 5
    tail = keep - head
    return f"{s[:head]}\n[… {gone} characters cut …]\n{s[len(s) - tail:] if tail else ''}"


def bound(data: dict[str, Any], max_chars: int) -> tuple[str, list[str]]:
    """data as JSON text of at most max_chars characters, and the fields it
    cut. The long fields share what the rest leaves, each taking no more
    than it needs (a short stderr leaves its share to stdout)."""
    text = _dumps(data)
    if len(text) <= max_chars:
        return text, []
    fields = [k for k in _CUTTABLE if isinstance(data.get(k), str) and data[k]]
    frame = dict(data)
    for k in fields:
        frame[k] = ""
    frame["note"] = _NOTE.format(fields=", ".join(fields), max=max_chars)
    # Room for each field's mark of what was cut.
    budget = max_chars - len(_dumps(frame)) - 48 * len(fields)
    sizes = {k: _enc_len(data[k]) for k in fields}
    for _ in range(8):
        allot: dict[str, int] = {}
        left = max(budget, 0)
        order = sorted(fields, key=lambda k: sizes[k])
        for i, k in enumerate(order):
            allot[k] = min(sizes[k], left // (len(order) - i))
            left -= allot[k]
        out = dict(data)
        cut = [k for k in fields if allot[k] < sizes[k]]
        for k in cut:
            out[k] = _cut(data[k], allot[k], _CUTTABLE[k])
        out["note"] = _NOTE.format(fields=", ".join(cut) or "output", max=max_chars)
        text = _dumps(out)
        if len(text) <= max_chars:
            return text, cut
        if budget <= 0:
            break
        # Escapes are denser in some parts than the average the cut took.
        budget -= len(text) - max_chars + 16
    # Only what is never cut is left too long (a long path or message):
    # the text is cut as it is, no longer JSON, rather than sent whole.
    mark = f"\n[… cut to {max_chars} characters]"
    return text[: max_chars - len(mark)] + mark, ["text"]


@dataclass
class ToolResult:
    """The outcome of one tool call.

    ``data`` is the whole answer as the model is told it, uncut; ``text``
    is it as JSON, bounded for the model; ``images`` the images the call
    made (matplotlib figures, as base64 PNG). ``is_error`` is set when the
    tool failed: unknown tool or bad arguments (``error_code``
    ``unknown_tool``, ``invalid_argument``), a daemon error (its contract
    code, e.g. ``conflict``), or code that raised, exited non-zero, timed
    out or was killed. ``cut`` names the fields ``text`` had to cut.
    ``execution`` is the daemon's Execution, if one ran; ``exception`` what
    was raised, for a caller that wants to re-raise it. ``call_id`` is the
    id of the model's call, which the to_* messages answer.
    """

    name: str
    data: dict[str, Any]
    text: str
    is_error: bool = False
    images: list[Output] = field(default_factory=list)
    error_code: str | None = None
    call_id: str | None = None
    cut: list[str] = field(default_factory=list)
    execution: Execution | None = None
    exception: BaseException | None = None

    def _id(self, call_id: str | None) -> str:
        cid = call_id if call_id is not None else self.call_id
        if not cid:
            raise ValueError(f"no call id for the result of {self.name}: pass the id of the model's tool call")
        return cid

    def to_openai(self, call_id: str | None = None) -> dict[str, Any]:
        """The Chat Completions message answering the call. Its content is
        text only, as the API allows; openai_images_message carries the
        images."""
        return {"role": "tool", "tool_call_id": self._id(call_id), "content": self.text}

    def to_openai_responses(self, call_id: str | None = None) -> dict[str, Any]:
        """The Responses API's function_call_output item: the text, or with
        images a list of input_text and input_image parts."""
        cid = self._id(call_id)
        if not self.images:
            return {"type": "function_call_output", "call_id": cid, "output": self.text}
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": self.text}]
        parts += [{"type": "input_image", "image_url": _data_url(o), "detail": "auto"} for o in self.images]
        return {"type": "function_call_output", "call_id": cid, "output": parts}

    def to_anthropic(self, tool_use_id: str | None = None) -> dict[str, Any]:
        """The Messages API's tool_result block (all of one turn's go in one
        user message), images as image blocks."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        content += [{"type": "image", "source": {"type": "base64", "media_type": o.mime, "data": o.data}} for o in self.images]
        return {"type": "tool_result", "tool_use_id": self._id(tool_use_id), "content": content, "is_error": self.is_error}

    def openai_images_message(self) -> dict[str, Any] | None:
        """A Chat Completions user message showing the images, None without
        any. Tool messages hold text alone, and every tool message must
        follow its assistant message at once: append this after them."""
        if not self.images:
            return None
        parts: list[dict[str, Any]] = [{"type": "text", "text": f"The images made by the {self.name} call {self.call_id or ''}".rstrip() + ":"}]
        parts += [{"type": "image_url", "image_url": {"url": _data_url(o)}} for o in self.images]
        return {"role": "user", "content": parts}


def _data_url(o: Output) -> str:
    return f"data:{o.mime};base64,{o.data}"
