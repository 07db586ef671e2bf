"""The ledger's structs are made without checks: every reader's output must still hold values of
the declared types (the walk in `typed`), on every bundled and corpus transcript."""

from __future__ import annotations

import typing
from pathlib import Path

import msgspec
import pytest

from inspector.formats import load
from inspector.model import (
    EventKind,
    MediaBlock,
    Message,
    Origin,
    ReasoningBlock,
    RecordedEvent,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
)
from tests.conftest import real_transcripts
from tests.support.typed import MADE_BY_HELPERS, MessageExtras, untyped


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: p.name)
def test_every_loaded_value_has_its_declared_type(path: Path) -> None:
    t = load(path)
    assert t.messages or t.load_issues
    assert untyped(t) is None, untyped(t)


def _message(**changes: object) -> Message:
    fields: dict[str, object] = {
        "id": "m1",
        "role": Role.USER,
        "blocks": (TextBlock(text="hi"), ToolCallBlock(id="c", name="Bash", arguments={"a": 1})),
        "origin": Origin(file="f", line=1),
    }
    fields.update(changes)
    return Message(**fields)  # type: ignore[arg-type]


def test_the_builders_keywords_are_the_other_message_fields() -> None:
    """The tests' ledger builders pass `MessageExtras` on to `Message`: its keys are the fields
    they do not set themselves, of the types `Message` declares, so a new field is typed there."""
    fields = Message.__struct_fields__
    assert set(MADE_BY_HELPERS) <= set(fields)
    assert list(MessageExtras.__annotations__) == [f for f in fields if f not in MADE_BY_HELPERS]
    hints = typing.get_type_hints(Message)
    assert typing.get_type_hints(MessageExtras) == {f: hints[f] for f in MessageExtras.__annotations__}


def test_the_walk_names_the_first_value_of_another_type() -> None:
    assert untyped(_message()) is None
    # what pydantic used to turn into the declared type without a word: each is named here
    assert untyped(_message(role="user")) == "Message.role: 'user' is not a Role"
    assert untyped(_message(blocks=[TextBlock(text="hi")])) == "Message.blocks: a list, not a tuple"
    assert untyped(_message(origin=Origin(file="f", line="1"))) == (  # type: ignore[arg-type]
        "Message.origin.line: '1' is a str, not a int"
    )
    assert untyped(_message(blocks=(ToolResultBlock(call_id="c", is_error=1),))) == (  # type: ignore[arg-type]
        "Message.blocks[0].is_error: 1 is a int, not a bool"
    )
    assert (untyped(_message(timestamp=3)) or "").startswith("Message.timestamp: 3 is none of")
    t = Transcript(format="x", path="p", messages=[_message()], skipped={"progress": True})
    assert untyped(t) == "Transcript.skipped['progress']: True is a bool, not a int"
    event = RecordedEvent(kind="compaction", after_request=1)  # type: ignore[arg-type]
    assert untyped(event) == "RecordedEvent.kind: 'compaction' is not a EventKind"
    assert untyped(RecordedEvent(kind=EventKind.COMPACTION, after_request=1)) is None


def test_a_message_encodes_each_field_in_order_and_names_each_block_kind() -> None:
    """The JSON a summary's cache key and a folded summary's id are hashed from
    (`shaping.auto_compact.segment_key`): every field in declared order, each block's kind first,
    so two kinds of block never encode alike and the ids stay what they were under pydantic."""
    m = Message(
        id="m1",
        role=Role.ASSISTANT,
        blocks=(
            TextBlock(text="a\x1bé"),
            ReasoningBlock(text="t", signed=True),
            ToolCallBlock(id="c", name="Bash", arguments={"cmd": "ls"}),
            ToolResultBlock(call_id="c", content="x"),
            MediaBlock(type="document", size_bytes=3),
        ),
        origin=Origin(file="f", line=1),
    )
    assert (
        msgspec.json.encode(m)
        == (
            '{"id":"m1","role":"assistant","blocks":['
            '{"type":"text","text":"a\\u001bé"},'
            '{"type":"reasoning","text":"t","signed":true,"redacted":false,"signature_chars":0},'
            '{"type":"tool_call","id":"c","name":"Bash","arguments":{"cmd":"ls"}},'
            '{"type":"tool_result","call_id":"c","tool_name":null,"content":"x","is_error":false,"media":0},'
            '{"type":"document","media_type":"","size_bytes":3}],'
            '"timestamp":null,"source":{"kind":"conversation","priority":0,"name":""},"sidechain":false,'
            '"agent_id":null,"origin":{"file":"f","line":1},"response_id":null,"model":null,'
            '"is_meta":false,"is_summary":false,"stop_reason":null}'
        ).encode()
    )
