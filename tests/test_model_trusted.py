"""`trusted(cls)` makes the object validation makes, without validating."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from inspector.model import (
    MediaBlock,
    Message,
    Origin,
    ReasoningBlock,
    Request,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Usage,
)
from inspector.model.trusted import trusted

CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (TextBlock, {"text": "hello"}),
    (ReasoningBlock, {"text": "hm", "signed": True, "signature_chars": 12}),
    (ReasoningBlock, {"redacted": True, "signed": True, "signature_chars": 3}),
    (ToolCallBlock, {"id": "t1", "name": "Bash", "arguments": {"command": "ls", "n": [1, 2]}}),
    (ToolCallBlock, {"id": "t2", "name": "Bash"}),  # the default factory
    (
        ToolResultBlock,
        {"call_id": "t1", "tool_name": "Bash", "content": "out", "is_error": False, "media": 1},
    ),
    (ToolResultBlock, {"call_id": "t1"}),
    (MediaBlock, {"type": "document", "media_type": "application/pdf", "size_bytes": 30}),
    (Usage, {"input": 3, "cache_write": 10, "cache_read": 900, "output": 7}),
    (Origin, {"file": "s.jsonl", "line": 4}),
    (
        Request,
        {
            "index": 1,
            "response_id": "a",
            "model": "m",
            "usage": Usage(input=1),
            "segment": 0,
            "ledger_len": 2,
        },
    ),
    (
        Message,
        {
            "id": "a",
            "role": Role.ASSISTANT,
            "blocks": (TextBlock(text="x"), ToolCallBlock(id="t", name="B", arguments={})),
            "timestamp": "2026-01-01T00:00:00Z",
            "source": Source.of(SourceKind.CONVERSATION),
            "origin": Origin(file="f", line=3),
            "response_id": "r",
            "model": "m",
            "stop_reason": "tool_use",
        },
    ),
    (Message, {"id": "u", "role": Role.USER}),
]


@pytest.mark.parametrize(("cls", "values"), CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_trusted_makes_what_validation_makes(cls: type[BaseModel], values: dict[str, Any]) -> None:
    made = trusted(cls)(**values)
    valid = cls(**values)
    assert type(made) is cls
    assert made == valid
    assert made.model_dump() == valid.model_dump()
    assert made.model_dump_json() == valid.model_dump_json()
    assert list(made.__dict__) == list(valid.__dict__)  # the declared order (reprs, dumps)
    assert made.model_fields_set == valid.model_fields_set
    assert repr(made) == repr(valid)
    if cls is not ToolCallBlock and cls is not Message:  # (their dicts and blocks' arguments do not hash)
        assert hash(made) == hash(valid)
    copied = made.model_copy(update={next(iter(values)): values[next(iter(values))]})
    assert copied == valid


def test_default_factories_are_not_shared() -> None:
    make = trusted(ToolCallBlock)
    a, b = make(id="1", name="x"), make(id="2", name="y")
    assert a.arguments == {} and a.arguments is not b.arguments


def test_models_that_validate_are_refused() -> None:
    class Checked(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def positive(cls, v: int) -> int:
            assert v > 0
            return v

    with pytest.raises(TypeError, match="validates"):
        trusted(Checked)


def test_fields_are_the_only_parameters() -> None:
    make = trusted(TextBlock)
    with pytest.raises(TypeError, match="text"):
        make()  # a required field left out
    with pytest.raises(TypeError, match="txt"):
        make(text="a", txt="b")  # not a field
    with pytest.raises(TypeError):
        make("a")  # keywords only


def test_fields_named_like_the_constructors_own_names() -> None:
    class Odd(BaseModel):
        m: int
        given: str = "x"
        cls: int = 0

    made = trusted(Odd)(m=1, given="y")
    assert made == Odd(m=1, given="y") and made.model_fields_set == {"m", "given"}

    class Shadows(BaseModel):  # no required field: its set of given fields starts empty
        set: int = 0
        type: str = "t"

    shadowed = trusted(Shadows)(set=2)
    assert shadowed == Shadows(set=2) and shadowed.model_fields_set == {"set"}


def test_a_mutable_default_is_refused() -> None:
    class Shared(BaseModel):
        items: list[int] = []

    with pytest.raises(TypeError, match="mutable default"):
        trusted(Shared)
