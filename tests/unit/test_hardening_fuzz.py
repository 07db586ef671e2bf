"""Fuzzing every reader and the pipeline behind it (docs/DESIGN.md §8).

Inputs: random bytes, and mutations of real records (the shared corpus when it is there, and this
project's own generated sessions always): values replaced by hostile JSON (wrong types, absurd and
huge numbers, deep nesting, control characters, markup), keys dropped or added, lines cut, bytes
flipped or inserted. Whatever comes in, a reader returns a transcript that is consistent and can be
serialized, replayed request by request with the pipeline's invariants holding on every layer
(no new orphans, pinned messages kept, estimates never rising), reported and exported; `load()`
raises nothing but LoaderError.

The pipeline is also fuzzed directly with the ledger strategies of test_shaping_properties, their
text replaced by hostile content: every invariant holds and every export stays inert.

Modes: by default a few hundred examples per reader (CI); `INSPECTOR_FUZZ=full` runs 10,000 per
test (so at least 10,000 per reader); `INSPECTOR_FUZZ=<n>` runs n per test.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from inspector.formats import LoaderError, load
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.formats.codex import CodexReader
from inspector.formats.detect import HEAD_BYTES, _readers
from inspector.formats.generic import load_chat_json
from inspector.formats.opencode import load_opencode
from inspector.model import Message, Request, Segment, Transcript
from inspector.replay import Replay
from inspector.report.export import FORMATS, export
from inspector.report.summary import replay_report
from inspector.shaping import unpaired
from tests.support.typed import untyped
from tests.unit.test_hardening_inputs import (
    DEEP,
    NEAR,
    cc_valid,
    chat_valid,
    cx_valid,
    oc_records,
    write_db,
    write_storage,
)
from tests.unit.test_shaping_properties import ledgers

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

_MODE = os.environ.get("INSPECTOR_FUZZ", "").strip().lower()
EXAMPLES = 10_000 if _MODE == "full" else int(_MODE) if _MODE.isdigit() else 150
"""Examples per test; each reader has two tests (random bytes, mutated records)."""
PIPELINE_EXAMPLES = EXAMPLES if _MODE else 100

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written into the project
    suppress_health_check=list(HealthCheck),
)

HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\x1b]52;c;SGVsbG8=\x07",
    "\x07\x08\x00\r\x9b2J\u202e\u2066\u200b\ufeff",
    "[bold red]x[/]",
    "[link=http://x]y[/link]",
    "</td><script>alert(1)</script>",
    "| a | b |\n# heading\n```",
    "sk-ant-api03-" + "A" * 40,
    "",
    " ",
    "x" * 5000,
    "数据处理结果" * 10,
    "\U0001f468\u200d\U0001f469",
]
KEYS = [
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "sessionId",
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "message",
    "role",
    "content",
    "id",
    "model",
    "usage",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "compactMetadata",
    "preservedMessages",
    "uuids",
    "tool_use_id",
    "name",
    "input",
    "text",
    "payload",
    "info",
    "last_token_usage",
    "model_context_window",
    "call_id",
    "arguments",
    "output",
    "replacement_history",
    "tool_calls",
    "tool_call_id",
    "function",
    "messages",
    "system",
    "state",
    "status",
    "tokens",
    "cache",
    "time",
    "callID",
    "tool",
    "sessionID",
    "messageID",
    "parentID",
    "summary",
    "finish",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 2**64 - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(HOSTILE),
    st.sampled_from(["user", "assistant", "tool", "system", "text", "tool_use", "tool_result", "message"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for n in range(levels):
        value = [value] if n % 2 else {"k": value}
    return value


hostile_values = json_values | st.builds(deep, st.integers(90, 400))


# -- mutation -----------------------------------------------------------------------------------
def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every dict and list inside `value` (the root included)."""
    out: list[tuple[Any, ...]] = []
    stack = [(value, path)]
    while stack and len(out) < 200:
        v, p = stack.pop()
        if isinstance(v, dict):
            out.append(p)
            stack.extend((x, (*p, k)) for k, x in v.items())
        elif isinstance(v, list):
            out.append(p)
            stack.extend((x, (*p, i)) for i, x in enumerate(v))
    return out


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@st.composite
def mutated(draw: st.DrawFn, record: Any) -> Any:
    """A deep copy of a JSON record with 0-3 mutations: a value replaced, a key dropped or added."""
    value = json.loads(json.dumps(record))
    for _ in range(draw(st.integers(0, 3))):
        paths = _containers(value)
        if not paths:
            break
        target = _at(value, draw(st.sampled_from(paths)))
        op = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if isinstance(target, dict):
            if op == "add" or not target:
                target[draw(st.sampled_from(KEYS))] = draw(hostile_values)
            else:
                key = draw(st.sampled_from(sorted(target, key=str)))
                if op == "drop":
                    del target[key]
                else:
                    target[key] = draw(hostile_values)
        elif isinstance(target, list):
            if op == "add" or not target:
                target.append(draw(hostile_values))
            else:
                i = draw(st.integers(0, len(target) - 1))
                if op == "drop":
                    del target[i]
                else:
                    target[i] = draw(hostile_values)
    return value


@st.composite
def mangled(draw: st.DrawFn, line: bytes) -> bytes:
    """A line cut short, with bytes flipped or inserted, or left whole."""
    op = draw(st.sampled_from(["keep", "keep", "keep", "cut", "flip", "insert"]))
    if op == "cut" and line:
        return line[: draw(st.integers(0, len(line) - 1))]
    if op == "flip" and line:
        i = draw(st.integers(0, len(line) - 1))
        return line[:i] + bytes([draw(st.integers(0, 255))]) + line[i + 1 :]
    if op == "insert":
        i = draw(st.integers(0, len(line)))
        return line[:i] + draw(st.binary(min_size=1, max_size=8)) + line[i:]
    return line


def _corpus_sessions(pattern: str) -> list[list[dict[str, Any]]]:
    """The records of each shared corpus file matching `pattern` (none when the corpus is absent);
    read in place, never copied into the project."""
    if not CORPUS.exists():
        return []
    out: list[list[dict[str, Any]]] = []
    for path in sorted(CORPUS.glob(pattern)):
        records: list[dict[str, Any]] = []
        for raw in path.read_bytes().splitlines():
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict):
                records.append(rec)
        out.append(records)
    return out


CC_SESSIONS = [cc_valid(), *_corpus_sessions("claude-code/**/*.jsonl")]
CX_SESSIONS = [cx_valid(), *_corpus_sessions("codex/*.jsonl")]


@st.composite
def jsonl_files(draw: st.DrawFn, sessions: list[list[dict[str, Any]]]) -> bytes:
    """A JSONL file: a stretch of consecutive records of a real or generated session (so parent
    links, streamed responses and compactions stay as they were), about one record in four
    mutated, a few records of other sessions mixed in, some lines mangled."""
    session = draw(st.sampled_from(sessions))
    start = draw(st.integers(0, max(0, len(session) - 4)))
    records = list(session[start : start + draw(st.integers(1, 60))])
    for _ in range(draw(st.integers(0, 2))):
        other = draw(st.sampled_from(sessions))
        records.insert(draw(st.integers(0, len(records))), draw(st.sampled_from(other)))
    lines = []
    for r in records:
        rec = draw(mutated(r)) if draw(st.integers(0, 3)) == 0 else r
        line = json.dumps(rec).encode()
        lines.append(draw(mangled(line)) if draw(st.integers(0, 5)) == 0 else line)
    data = b"\n".join(lines)
    return data + b"\n" if draw(st.booleans()) else data


def chunks(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


# -- what every transcript must be -----------------------------------------------------------------
def check_transcript(
    t: Transcript, file: str | None = None, lines: int | None = None, steps: int = 3
) -> None:
    """Consistent, serializable, replayable with the pipeline invariants holding, exportable."""
    for issue in t.load_issues:
        assert isinstance(issue.reason, str) and issue.reason.strip()
        assert issue.line >= 0
        if lines is not None:
            assert issue.line <= lines + 1, (issue, lines)
        if file is not None:
            assert issue.file.startswith(file) or file.startswith(issue.file), (issue.file, file)
    ids = {m.id for m in t.messages}
    for seg in t.segments:
        assert set(seg.message_ids) <= ids
    for r in t.requests:
        assert 0 <= r.segment < len(t.segments)
        assert 0 <= r.ledger_len <= len(t.segments[r.segment].message_ids)
    assert untyped(t) is None, untyped(t)
    msgspec.json.encode(t)
    replay = Replay.open(t)
    n = len(replay)
    for k in sorted({*range(1, min(n, steps) + 1), n} - {0}):
        s = replay.step(k)
        view: tuple[Message, ...] = s.result.input
        for layer in s.result.layers:
            before, after = unpaired(view), unpaired(layer.view)
            assert set(after.calls) <= set(before.calls) and set(after.results) <= set(before.results), (
                layer.name
            )
            kept = {id(m) for m in layer.view}
            pins = s.result.budget.pins  # what the replay's policy pins (its harness's protections)
            assert all(id(m) in kept for m in view if pins(m)), layer.name
            assert layer.tokens_after <= layer.tokens_before, layer.name
            view = layer.view
    report = replay_report(replay, step=n or None)
    msgspec.json.encode(report)
    json.loads(export(replay, "json"))
    _inert(export(replay, "md", redact=True))


_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _inert(text: str) -> None:
    found = _RAW.search(text)
    assert found is None, repr(text[max(0, found.start() - 40) : found.end() + 40])


# -- Claude Code ----------------------------------------------------------------------------------
FAKE = "/nonexistent/fuzz/session.jsonl"
"""Readers fed bytes directly never touch this path (no subagent lookup)."""


def sniff_all(data: bytes) -> None:
    """Every reader's sniffer looks at `data` as a file's head: a yes or a no, never an exception."""
    for reader in _readers():
        assert reader.sniff(Path(FAKE), data[:HEAD_BYTES]) in (True, False)


def _feed(reader: ClaudeCodeReader | CodexReader, data: bytes, cuts: Sequence[int]) -> Transcript:
    sniff_all(data)
    for chunk in chunks(data, cuts):
        reader.feed(chunk)
    reader.finish()
    return reader.transcript()


@FUZZ
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=4))
def test_claude_code_random_bytes(data: bytes, cuts: list[int]) -> None:
    t = _feed(ClaudeCodeReader(FAKE, with_subagents=False), data, cuts)
    check_transcript(t, FAKE, data.count(b"\n") + 1)


@FUZZ
@pytest.mark.slow
@given(data=jsonl_files(CC_SESSIONS), cuts=st.lists(st.integers(0, 50_000), max_size=4))
def test_claude_code_mutated_records(data: bytes, cuts: list[int]) -> None:
    t = _feed(ClaudeCodeReader(FAKE, with_subagents=False), data, cuts)
    check_transcript(t, FAKE, data.count(b"\n") + 1)


@FUZZ
@pytest.mark.slow
@given(
    main=jsonl_files(CC_SESSIONS),
    call=jsonl_files(CC_SESSIONS),
    sub=jsonl_files(CC_SESSIONS),
    meta=hostile_values.map(lambda v: json.dumps(v).encode()) | st.sampled_from([DEEP, NEAR, b"\xff", b""]),
)
def test_claude_code_session_folder(main: bytes, call: bytes, sub: bytes, meta: bytes) -> None:
    """A session with a compaction call and a subagent beside it (both mutated), through load()."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.jsonl"
        path.write_bytes(main)
        agents = Path(folder) / "session" / "subagents"
        agents.mkdir(parents=True)
        (agents / "agent-acompact-1.jsonl").write_bytes(call)
        (agents / "agent-a1.jsonl").write_bytes(sub)
        (agents / "agent-a1.meta.json").write_bytes(meta)
        try:
            t = load(path)
        except LoaderError:
            return
        check_transcript(t, folder)


# -- Codex ------------------------------------------------------------------------------------------
@FUZZ
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=4))
def test_codex_random_bytes(data: bytes, cuts: list[int]) -> None:
    t = _feed(CodexReader(FAKE), data, cuts)
    check_transcript(t, FAKE, data.count(b"\n") + 1)


@FUZZ
@pytest.mark.slow
@given(data=jsonl_files(CX_SESSIONS), cuts=st.lists(st.integers(0, 50_000), max_size=4))
def test_codex_mutated_records(data: bytes, cuts: list[int]) -> None:
    t = _feed(CodexReader(FAKE), data, cuts)
    check_transcript(t, FAKE, data.count(b"\n") + 1)


# -- generic chat JSON ------------------------------------------------------------------------------
def _load_file(name: str, data: bytes, loader: Callable[[Path], Transcript]) -> Transcript | None:
    sniff_all(data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            t = loader(path)
        except LoaderError:
            return None
        check_transcript(t, str(path))
        return t


@FUZZ
@given(
    data=st.binary(max_size=3000)
    | st.builds(lambda b: b'[{"role": "user", "content": "' + b, st.binary(max_size=200))
)
def test_generic_random_bytes(data: bytes) -> None:
    _load_file("chat.json", data, load_chat_json)
    _load_file("chat.json", data, load)


@st.composite
def chat_files(draw: st.DrawFn) -> bytes:
    messages = [draw(mutated(m)) for m in chat_valid()]
    messages += draw(st.lists(hostile_values, max_size=2))
    value: Any = messages
    if draw(st.booleans()):
        value = draw(
            mutated({"model": "claude-x", "system": [{"type": "text", "text": "sys"}], "messages": messages})
        )
    return draw(mangled(json.dumps(value).encode()))


@FUZZ
@pytest.mark.slow
@given(data=chat_files())
def test_generic_mutated_records(data: bytes) -> None:
    _load_file("chat.json", data, load_chat_json)


# -- opencode ---------------------------------------------------------------------------------------
@st.composite
def opencode_records(draw: st.DrawFn) -> list[tuple[str, Any, list[tuple[str, Any]]]]:
    out: list[tuple[str, Any, list[tuple[str, Any]]]] = []
    for mid, data, parts in oc_records():
        out.append((mid, draw(mutated(data)), [(pid, draw(mutated(p))) for pid, p in parts]))
    if draw(st.booleans()):
        out.append(("msg_99", draw(hostile_values), [("prt_99", draw(hostile_values))]))
    return out


def _load_store(
    records: list[tuple[str, Any, list[tuple[str, Any]]]], db: bool, raw: dict[str, bytes]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        if db:
            blobs = [
                (m, raw.get(f"{m}.json", d), [(p, raw.get(f"{p}.json", x)) for p, x in ps])
                for m, d, ps in records
            ]
            path = write_db(Path(folder) / "opencode.db", blobs, fast=True)
        else:
            path = write_storage(Path(folder), records, raw=raw)
        try:
            t = load_opencode(path)
        except LoaderError:
            return
        check_transcript(t, folder)


@FUZZ
@pytest.mark.slow
@given(
    db=st.booleans(),
    name=st.sampled_from(["msg_01.json", "msg_02.json", "prt_02b.json", "prt_02c.json", "prt_02e.json"]),
    data=st.binary(max_size=1500),
)
def test_opencode_random_bytes(db: bool, name: str, data: bytes) -> None:
    _load_store(oc_records(), db, {name: data})


@FUZZ
@pytest.mark.slow
@given(
    db=st.booleans(),
    records=opencode_records(),
    junk=st.dictionaries(
        st.sampled_from(["msg_02.json", "prt_02b.json"]), st.binary(max_size=40), max_size=1
    ),
)
def test_opencode_mutated_records(
    db: bool, records: list[tuple[str, Any, list[tuple[str, Any]]]], junk: dict[str, bytes]
) -> None:
    _load_store(records, db, junk)


# -- the pipeline, directly -------------------------------------------------------------------------
PIPELINE = settings(FUZZ, max_examples=PIPELINE_EXAMPLES)


def _hostile(message: Message, text: str) -> Message:
    from inspector.model import TextBlock, ToolResultBlock

    blocks = tuple(
        replace(b, text=b.text + text)
        if isinstance(b, TextBlock)
        else replace(b, content=text + b.content, tool_name=text if b.tool_name else None)
        if isinstance(b, ToolResultBlock)
        else b
        for b in message.blocks
    )
    return replace(message, blocks=blocks)


@PIPELINE
@given(
    ledger=ledgers(),
    texts=st.lists(st.sampled_from(HOSTILE) | st.text(max_size=30), min_size=1, max_size=5),
    window=st.sampled_from([None, 36_000, 45_000, 60_000, 200_000]),
    fmt=st.sampled_from(FORMATS),
)
def test_pipeline_on_hostile_ledgers(
    ledger: list[Message], texts: list[str], window: int | None, fmt: str
) -> None:
    msgs = [_hostile(m, texts[i % len(texts)]) for i, m in enumerate(ledger)]
    t = Transcript(
        format="generic",
        path="/fuzz/ledger.json",
        model=texts[0] or None,
        messages=msgs,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in msgs))],
        requests=[Request(index=1, segment=0, ledger_len=len(msgs), model=texts[-1] or None)],
    )
    replay = Replay.open(t, window=window)
    s = replay.step(1)
    view: tuple[Message, ...] = s.result.input
    for layer in s.result.layers:
        assert not unpaired(layer.view)  # generated ledgers are well paired: shaping keeps them so
        pins = s.result.budget.pins
        assert {m.id: m for m in layer.view if pins(m)} == {m.id: m for m in view if pins(m)}
        assert layer.tokens_after <= layer.tokens_before
        view = layer.view
    out = export(replay, fmt, redact=True)
    if fmt != "json":
        _inert(out)
    assert "sk-ant-api03-AAAA" not in out
