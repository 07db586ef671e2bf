"""The published JSON Schemas (`schemas/`): what the code generates, and what the reports and
policy files really are.

The `jsonschema` package would bring four more (one a compiled extension) for what these schemas
use: `$ref` into `$defs`, `type`, `properties`, `required`, `additionalProperties`, `items`,
`anyOf`, `enum`, `const`. `validate` below walks exactly those, and refuses a keyword it does not
know, so a schema that grows one cannot pass unchecked.
"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from inspector.formats import load
from inspector.model.sanitize import json_text
from inspector.replay import Replay
from inspector.report.summary import replay_report
from inspector.shaping import PRESETS
from inspector.tui.lab import policy_toml
from tests.conftest import CORPUS, ROOT, real_transcripts

SCHEMAS = ROOT / "schemas"

ANNOTATIONS = frozenset({"$schema", "title", "description", "default", "examples", "$defs"})
TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("schemas_generate", SCHEMAS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind])


def validate(value: Any, schema: dict[str, Any], root: dict[str, Any], at: str = "$") -> list[str]:
    """Every place where `value` breaks `schema` (its `$ref`s resolved in `root`), as "where: what"."""
    unknown = (
        set(schema)
        - ANNOTATIONS
        - {
            "$ref",
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "anyOf",
            "enum",
            "const",
        }
    )
    assert not unknown, f"the test's validator does not know {sorted(unknown)} (at {at})"
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return validate(value, root["$defs"][ref.removeprefix("#/$defs/")], root, at)
    if "anyOf" in schema:
        if any(not validate(value, option, root, at) for option in schema["anyOf"]):
            return []
        return [f"{at}: matches none of {len(schema['anyOf'])} choices"]
    problems: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return [f"{at}: expected {kind}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{at}: {value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{at}: {value!r} is not {schema['const']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        problems += [f"{at}: missing {key!r}" for key in schema.get("required", []) if key not in value]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                problems += validate(item, props[key], root, f"{at}.{key}")
            elif extra is False:
                problems.append(f"{at}: unknown key {key!r}")
            elif isinstance(extra, dict):
                problems += validate(item, extra, root, f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], root, f"{at}[{i}]")
    return problems


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


@pytest.mark.parametrize("name", ["report.schema.json", "policy-file.schema.json"])
def test_the_committed_schema_is_what_the_code_generates(name: str) -> None:
    generator = _generator()
    assert set(generator.SCHEMAS) == {p.name for p in SCHEMAS.glob("*.json")}
    made = generator.text(generator.SCHEMAS[name]())
    assert (SCHEMAS / name).read_text(encoding="utf-8") == made, (
        f"schemas/{name} is out of date: run python schemas/generate.py"
    )


def _report(path: Path) -> Any:
    return json.loads(json_text(replay_report(Replay.open(load(path)))))


def test_the_report_schema_requires_what_every_report_has() -> None:
    schema = _schema("report.schema.json")
    report = schema["$defs"]["Report"]
    assert {"format", "path", "requests", "budget", "recorded_events"} <= set(report["required"])
    assert schema["$ref"] == "#/$defs/Report"


@pytest.mark.parametrize(
    "path", real_transcripts(), ids=lambda p: str(p.relative_to(CORPUS if CORPUS in p.parents else ROOT))
)
def test_every_report_validates_against_the_report_schema(path: Path) -> None:
    schema = _schema("report.schema.json")
    data = _report(path)
    assert validate(data, schema, schema) == []
    assert data["requests"] or data["messages"] >= 0  # a report was made of it


def test_the_validator_finds_what_breaks_the_report_schema() -> None:
    schema = _schema("report.schema.json")
    data = _report(ROOT / "inspector" / "samples" / "short-session.jsonl")
    del data["budget"]
    data["requests"][0]["index"] = "one"
    data["segments"] = True
    problems = validate(data, schema, schema)
    assert problems == [
        "$: missing 'budget'",
        "$.requests[0].index: expected integer, got str",
        "$.segments: expected integer, got bool",
    ]


def _policy_files() -> list[tuple[str, Any]]:
    files: list[tuple[str, Any]] = []
    for path in sorted((ROOT / "inspector" / "samples" / "scenarios").glob("*.toml")):
        files.append((path.name, tomllib.loads(path.read_text(encoding="utf-8"))))
    for name, policy in sorted(PRESETS.items()):
        files.append((f"lab-{name}", tomllib.loads(policy_toml(policy))))
    files.append(("team-name", {"context": "no_history_compaction"}))
    files.append(("team-table", {"context": {"policy": "claude-code", "tool_result_budget": 20000}}))
    return files


@pytest.mark.parametrize(("name", "data"), _policy_files(), ids=[n for n, _ in _policy_files()])
def test_policy_files_validate_against_the_policy_schema(name: str, data: Any) -> None:
    schema = _schema("policy-file.schema.json")
    assert validate(data, schema, schema) == []


def test_the_policy_schema_refuses_what_the_door_refuses() -> None:
    schema = _schema("policy-file.schema.json")
    for bad in (
        {"layers": ["per_tool_budget", "magic"]},
        {"tool_budget": 5},
        {"context": {"policy": "opencollab", "history": True}},
        {"context": 5},
        {"eager_keep": "many"},
    ):
        assert validate(bad, schema, schema) != [], bad
