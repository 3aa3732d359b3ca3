"""The models checked against the OpenAPI spec (docs/openapi.yaml, as JSON).

Every property of a schema the SDK models is a dataclass field of its model,
and every key a model's from_json reads is a property of its schema, so a
field added to the API, or a typo here, fails. integration/sdk_python_test.go
writes the spec and names it in $SANDBOXD_TEST_OPENAPI; run alone, the test
reads the repository's docs/openapi.json if someone made one, else skips
saying why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import unittest
from typing import Any

from sandboxd.models import (
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
    Session,
    Snapshot,
    Stats,
    Volume,
    VolumeMount,
)

SPEC_PATH = pathlib.Path(
    os.environ.get("SANDBOXD_TEST_OPENAPI") or pathlib.Path(__file__).resolve().parents[4] / "docs" / "openapi.json"
)

# Schema -> the model that reads it. Info, Node, Template and the request
# bodies are not modelled: the SDK sends requests from plain dicts (and
# ExecStarted is its id, a str; ProcessList its processes, a list).
MODELS: dict[str, Any] = {
    "Limits": Limits,
    "Session": Session,
    "CodeContext": CodeContext,
    "Execution": Execution,
    "ExecutionSummary": ExecutionSummary,
    "ExecMetrics": ExecMetrics,
    "ExecError": ExecutionError,
    "Output": Output,
    "FileInfo": FileInfo,
    "FileWritten": FileWritten,
    # FileStat reads mkdir's created too: FolderMade is FileStat and it.
    "FolderMade": FileStat,
    "FileEvent": FileEvent,
    "Stats": Stats,
    "Process": Process,
    "ProcessOutput": ProcessChunk,
    "Health": Health,
    "HealthCheck": HealthCheck,
    "DataDirHealth": DataDirHealth,
    "ErrorDetail": ErrorDetail,
    "Volume": Volume,
    "VolumeMount": VolumeMount,
    "Snapshot": Snapshot,
}

# Wire properties a model keeps under another name (schema -> property ->
# field): a rename must be written here, on purpose.
RENAMED: dict[str, dict[str, str]] = {
    # ProcessChunk holds the bytes, decoded.
    "ProcessOutput": {"data_b64": "data"},
}


class _Recorder(dict):  # type: ignore[type-arg]
    """An empty wire object that records every key asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, k: Any, default: Any = None) -> Any:
        self.read.add(k)
        return default

    def __getitem__(self, k: Any) -> Any:
        self.read.add(k)
        raise KeyError(k)

    def __contains__(self, k: object) -> bool:
        self.read.add(str(k))
        return False


def _spec() -> dict[str, Any] | None:
    if not SPEC_PATH.is_file():
        return None
    return json.loads(SPEC_PATH.read_text("utf-8"))


SPEC = _spec()


@unittest.skipIf(
    SPEC is None,
    f"no OpenAPI spec as JSON: set SANDBOXD_TEST_OPENAPI (integration/sdk_python_test.go does) or write {SPEC_PATH}",
)
class ModelsMatchSpec(unittest.TestCase):
    def test_models(self) -> None:
        assert SPEC is not None
        schemas = SPEC["components"]["schemas"]
        for name, model in MODELS.items():
            with self.subTest(schema=name):
                self.assertIn(name, schemas)
                props = list(schemas[name].get("properties") or {})
                fields = {f.name for f in dataclasses.fields(model)}
                renamed = RENAMED.get(name, {})
                missing = [p for p in props if renamed.get(p, p) not in fields]
                self.assertEqual(missing, [], f"{name}'s properties the model {model.__name__} lacks")
                rec = _Recorder()
                model.from_json(rec)
                unknown = sorted(k for k in rec.read if k not in props)
                self.assertEqual(unknown, [], f"keys {model.__name__}.from_json reads that {name} does not have")

    def test_stream_events(self) -> None:
        # The client dispatches on these; one it lacks would be skipped silently.
        assert SPEC is not None
        import sandboxd._api_exec as api_exec

        src = pathlib.Path(api_exec.__file__).read_text("utf-8")
        for t in SPEC["components"]["schemas"]["Event"]["properties"]["type"]["enum"]:
            with self.subTest(type=t):
                self.assertIn(f'kind == "{t}"', src)


if __name__ == "__main__":
    unittest.main()
