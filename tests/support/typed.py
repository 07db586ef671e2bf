"""Whether a ledger object holds values of its declared types, all the way down.

The ledger's structs are made without checks (`inspector.model`): whoever makes one has checked
its values. This walks an object as its annotations say it is and names the first field that
holds something else, so a reader that lets an unchecked value through fails a test, not a user.
"""

from __future__ import annotations

import enum
import types
import typing
from functools import cache
from typing import Any, Literal, TypedDict, Union, get_args, get_origin

import msgspec

from inspector.model import Origin

MADE_BY_HELPERS = ("id", "role", "blocks", "timestamp", "source")
"""The `Message` fields the tests' ledger builders set themselves."""


class MessageExtras(TypedDict, total=False):
    """The other `Message` fields, as keywords a test's ledger builder passes on to `Message`."""

    sidechain: bool
    agent_id: str | None
    origin: Origin | None
    response_id: str | None
    model: str | None
    is_meta: bool
    is_summary: bool
    stop_reason: str | None


@cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((name, hints[name]) for name in cls.__struct_fields__)  # type: ignore[attr-defined]


def _fits(value: Any, hint: Any, where: str) -> str | None:
    """None when `value` is of type `hint`; else where it is not, and what it is."""
    if hint is Any:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        found: list[str] = []
        for option in get_args(hint):
            bad = _fits(value, option, where)
            if bad is None:
                return None
            kind = get_origin(option) or option
            if isinstance(kind, type) and isinstance(value, kind):  # the right kind, wrong inside
                found.append(bad)
        return found[0] if found else f"{where}: {value!r:.80} is none of {hint}"
    if origin is Literal:
        return None if value in get_args(hint) else f"{where}: {value!r:.80} is not one of {get_args(hint)}"
    if hint is None or hint is type(None):
        return None if value is None else f"{where}: {value!r:.80} is not None"
    if origin in (tuple, list, dict):
        # a list subclass is a list (the readers' bounded `LoadIssues`); nothing decoded is one
        if type(value) is not origin and not (origin is list and isinstance(value, list)):
            return f"{where}: a {type(value).__name__}, not a {origin.__name__}"
        args = get_args(hint)
        if origin is dict:
            for k, v in value.items():
                bad = _fits(k, args[0], f"{where} key") or _fits(v, args[1], f"{where}[{k!r:.40}]")
                if bad:
                    return bad
            return None
        item = args[0]
        for i, v in enumerate(value):
            bad = _fits(v, item, f"{where}[{i}]")
            if bad:
                return bad
        return None
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return None if isinstance(value, hint) else f"{where}: {value!r:.80} is not a {hint.__name__}"
    if hint is int:
        ok = type(value) is int
    elif hint is float:
        ok = type(value) in (int, float)
    else:
        ok = isinstance(value, hint)
    if not ok:
        return f"{where}: {value!r:.80} is a {type(value).__name__}, not a {getattr(hint, '__name__', hint)}"
    if isinstance(value, msgspec.Struct):
        return untyped(value, where)
    return None


def untyped(obj: msgspec.Struct, where: str = "") -> str | None:
    """The first field of `obj` (or of what it holds) whose value is not of the field's declared
    type, as `where.field[i].field: what it holds`; None when every value is."""
    where = where or type(obj).__name__
    for name, hint in _fields(type(obj)):
        bad = _fits(getattr(obj, name), hint, f"{where}.{name}")
        if bad:
            return bad
    return None
