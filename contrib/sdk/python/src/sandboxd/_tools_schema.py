"""The tool definitions of tools.json, and the check of a model's arguments
against their input schemas.

tools.json is the one copy of the definitions (other SDKs copy the file), so
the check reads the schemas rather than restating them in code. It knows
the few JSON Schema keywords the file may use (its "$comment" lists them);
a test fails if the file uses another, which would go unchecked here.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any, Iterable

# What the check below understands; "description" and "default" say
# nothing to check.
SCHEMA_KEYWORDS = frozenset(
    {"type", "description", "properties", "required", "additionalProperties", "items", "enum", "default", "minItems", "minLength"}
)


def _load() -> dict[str, Any]:
    # importlib.resources reads it from the wheel as installed (a zip import
    # included), where a path beside __file__ may not exist.
    doc = json.loads(resources.files(__package__).joinpath("tools.json").read_text("utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), list):
        raise ImportError("sandboxd/tools.json has no list of tools: the package is damaged")
    return doc


DOCUMENT = _load()
VERSION: int = int(DOCUMENT.get("version") or 0)
TOOLS: dict[str, dict[str, Any]] = {t["name"]: t for t in DOCUMENT["tools"]}


def pick(names: Iterable[str] | str | None) -> list[dict[str, Any]]:
    """Copies of the definitions named (all, in the file's order, for None),
    so a caller that edits one leaves the canonical one as it is. A name
    that is no tool is the caller's mistake: ValueError."""
    if names is None:
        chosen = list(TOOLS)
    else:
        chosen = [names] if isinstance(names, str) else list(names)
    out = []
    for n in chosen:
        if n not in TOOLS:
            raise ValueError(f"no tool {n!r}: the tools are {', '.join(TOOLS)}")
        out.append(copy.deepcopy(TOOLS[n]))
    return out


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "array": (list,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}

_NAMES = {"object": "an object", "string": "a string", "array": "an array", "integer": "an integer", "number": "a number", "boolean": "true or false", "null": "null"}


def _is(value: Any, typ: str) -> bool:
    # JSON has no bool among its numbers, Python does.
    if isinstance(value, bool) and typ in ("integer", "number"):
        return False
    return isinstance(value, _TYPES.get(typ, ()))


def problem(schema: dict[str, Any], value: Any, where: str) -> str | None:
    """The first way value breaks schema, said for a model to fix it; None
    when it fits. ``where`` names the value in that sentence."""
    typ = schema.get("type")
    if isinstance(typ, str) and not _is(value, typ):
        return f"{where} must be {_NAMES.get(typ, typ)}, not {_json_type(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {', '.join(json.dumps(v) for v in schema['enum'])}"
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return f"{where} must not be empty"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"{where} must have at least {schema['minItems']} item(s)"
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                p = problem(items, v, f"{where}[{i}]")
                if p:
                    return p
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for k in schema.get("required") or []:
            if k not in value:
                return f"missing argument `{k}`" if where == "arguments" else f"{where} lacks `{k}`"
        if schema.get("additionalProperties") is False:
            for k in value:
                if k not in props:
                    return f"unknown argument `{k}` (the arguments are {', '.join(props)})"
        for k, v in value.items():
            if k in props:
                p = problem(props[k], v, f"`{k}`" if where == "arguments" else f"{where}.{k}")
                if p:
                    return p
    return None


def _json_type(v: Any) -> str:
    for name, _ in _TYPES.items():
        if _is(v, name):
            return _NAMES[name]
    return type(v).__name__
