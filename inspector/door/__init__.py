"""The door: where a user's own files come in (a policy file, a what-if lab's saved policy, the
settings file), validated by pydantic models and turned into the structs the core uses.

Nothing here is imported until such a file is read: `report --json` without `--policy FILE`
never loads pydantic (a test holds it). This module itself is pydantic-free: it only turns a
validation's errors into the one line a user reads, every problem with its location
("policy.toml: tool_result_budget: must be at least 256 (got 5); layers[2]: unknown layer
'foo' (known: ...)").

- `inspector.door.settings_file`: the model of `settings.toml` (`inspector.settings` reads it);
- `inspector.shaping.policy_file`: the model of a policy file (`inspector.shaping.policy` reads it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Problem", "location", "one_line", "problem_text"]

Problem = tuple[tuple[str | int, ...], str]
"""Where (the keys and indexes from the file's top) and what is wrong there."""

_EXPECTED = {
    "int": "int",
    "float": "float",
    "string": "str",
    "bool": "bool",
    "list": "array",
    "tuple": "array",
    "dict": "table",
    "model": "table",
    "model_attributes": "table",
    "literal": "one of",
}
"""The first word of a pydantic error type (`int_parsing`, `string_type`...) -> the type it wanted."""


def location(loc: Sequence[str | int]) -> str:
    """`("layers", 2)` -> "layers[2]"; `("context", "eager_keep")` -> "context.eager_keep"."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _type_name(value: Any) -> str:
    return (
        "table"
        if isinstance(value, Mapping)
        else "array"
        if isinstance(value, list | tuple)
        else type(value).__name__
    )


def _shows(words: str, value: str) -> bool:
    """`value` stands in `words` as a whole (the 5 of "got 5", not the 5 of "256")."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", words) is not None


def problem_text(error: Mapping[str, Any], allowed: Mapping[tuple[str | int, ...], Sequence[str]]) -> Problem:
    """One pydantic error (an item of `ValidationError.errors()`) as (location, what is wrong).

    A value check's own words are kept ("must be at least 256"), followed by the value given
    where the words do not show it; a value of the wrong type reads "expected int, got str"; an
    unknown key is reported at its table ("unknown key 'x' (allowed: ...)", `allowed` by table).
    """
    loc = tuple(error.get("loc", ()))
    kind = str(error.get("type", ""))
    value = error.get("input")
    if kind == "extra_forbidden":
        where, key = loc[:-1], loc[-1]
        known = allowed.get(where)
        said = f"unknown key {key!r}" + (f" (allowed: {', '.join(known)})" if known else "")
        return where, said
    if kind == "value_error":
        cause = (error.get("ctx") or {}).get("error")
        said = str(cause) if cause is not None else str(error.get("msg", "")).removeprefix("Value error, ")
        shown = repr(value) if isinstance(value, str) else str(value)
        if not isinstance(value, Mapping | list | tuple) and not _shows(said, shown):
            said += f" (got {shown})"
        return loc, said
    if kind == "missing":
        return loc, "missing"
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        return loc, f"must be one of {expected} (got {value!r})"
    if kind == "int_from_float":
        return loc, "expected int, got float"
    head = kind.split("_", 1)[0]
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        head = "dict"
    if head in _EXPECTED and kind.endswith(("_type", "_parsing")):
        return loc, f"expected {_EXPECTED[head]}, got {_type_name(value)}"
    return loc, str(error.get("msg", kind))


def one_line(where: str, problems: Iterable[Problem]) -> str:
    """`where: loc: what; loc: what` (a problem of the whole file: `where: what`), one line."""
    parts = []
    for loc, said in problems:
        text = " ".join(said.split())  # one line, whatever a message held
        parts.append(f"{location(loc)}: {text}" if loc else text)
    return f"{where}: " + "; ".join(parts)
