"""The harness estimates' one pass (inspector.tokens.harness): the same figures as the plain
algorithm the module's docstring describes, on real and on odd transcripts, at a cost per request
that does not grow with the session."""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.formats.detect import load
from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    Request,
    Role,
    Segment,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    Transcript,
    Usage,
)
from inspector.tokens import harness
from inspector.tokens.harness import (
    ESTIMATORS,
    HarnessEstimate,
    bytes4,
    chars4,
    claude_code_rough,
    harness_estimates,
    segment_end_estimates,
)
from tests.conftest import ROOT, real_transcripts

# --- the plain algorithm, written out the slow way: the oracle ---------------------------------------


def _json(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, separators=(",", ":"), ensure_ascii=False)


def _r4(n: int) -> int:
    return (n + 2) // 4


def plain_claude_code(m: Message) -> int:
    total = 0
    for b in m.blocks:
        if isinstance(b, TextBlock):
            total += _r4(len(b.text))
        elif isinstance(b, ReasoningBlock):
            total += _r4(b.signature_chars) if b.redacted else _r4(len(b.text))
        elif isinstance(b, ToolCallBlock):
            total += _r4(len(b.name) + len(_json(b.arguments)))
        elif isinstance(b, ToolResultBlock):
            total += _r4(len(b.content)) + 2_000 * b.media
        elif isinstance(b, MediaBlock):
            total += 2_000
    return total


def plain_chars4(m: Message) -> int:
    total = 0
    for b in m.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            total += _r4(len(b.text))
        elif isinstance(b, ToolCallBlock):
            total += _r4(len(b.name) + len(_json(b.arguments)))
        elif isinstance(b, ToolResultBlock):
            total += _r4(len(b.content))
    return total


def plain_bytes4(m: Message) -> int:
    size = 0
    for b in m.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            size += len(b.text.encode())
        elif isinstance(b, ToolCallBlock):
            size += len(b.name.encode()) + len(_json(b.arguments).encode())
        elif isinstance(b, ToolResultBlock):
            size += len(b.content.encode())
    return -(-size // 4)


def plain_opencollab(m: Message) -> int:
    """OpenCollab's estimate with json writing every message (the module writes it with orjson)."""
    total = 0
    for d in harness._chat_messages(m):
        text = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        n = len(text)
        wide = min(n, len(text.encode("utf-8", "surrogatepass")) - n)
        total += 64 + max(1, (n - wide) // 3 + wide)
    return total + sum(b.signature_chars for b in m.blocks if isinstance(b, ReasoningBlock) and b.signed) // 3


def plain_estimates(tr: Transcript, name: str) -> tuple[list[HarnessEstimate], list[HarnessEstimate]]:
    """Every request's estimate and every segment's end, request by request, summing each span."""
    sizer = {
        "claude_code": plain_claude_code,
        "claude_code_usage": plain_claude_code,
        "opencode": plain_chars4,
        "codex": plain_bytes4,
        "heuristic": harness.opencollab_message_tokens,
    }[name]
    by_id = {m.id: m for m in tr.messages}

    def size(mid: str) -> int:
        m = by_id.get(mid)
        return sizer(m) if m is not None else 0

    def compaction_call(k: int) -> bool:
        req = tr.request(k)
        if req.response_id is None:
            return req.usage is not None
        resp = by_id.get(req.response_id) if req.response_id else None
        return resp is not None and resp.is_summary

    offsets: list[int] = []

    def median() -> int:
        n = len(offsets)
        if n < 3:
            return 0
        mid = n // 2
        return offsets[mid] if n % 2 else math.floor((offsets[mid - 1] + offsets[mid]) / 2)

    def estimate(k: int, ids: Sequence[str], end: int, reports: list[int]) -> HarnessEstimate:
        end = max(0, min(end, len(ids)))
        if name == "heuristic" or not reports:
            return HarnessEstimate(k, name, sum(size(i) for i in ids[:end]), "rough")
        j = reports[-1]
        req = tr.request(j)
        assert req.usage is not None
        recorded = out = req.usage.output
        stale = False
        claude = name in ("claude_code", "claude_code_usage")
        if claude and req.response_id is not None:
            rough = size(req.response_id)
            if recorded < rough:
                out, stale = max(recorded, rough + median()), True
        appended = 0
        if name not in ("opencode", "claude_code_usage"):
            pos = None
            if req.response_id is not None:
                pos = ids.index(req.response_id) if req.response_id in ids else None
                if req.ledger_len < len(ids) and ids[req.ledger_len] == req.response_id:
                    pos = req.ledger_len
            start = max(0, min(pos + 1 if pos is not None else req.ledger_len, end))
            appended = sum(size(i) for i in ids[start:end])
        return HarnessEstimate(
            k,
            name,
            req.usage.context + out + appended,
            "report",
            j,
            req.usage.context,
            out,
            recorded,
            stale,
            appended,
        )

    out: list[HarnessEstimate] = []
    ends: list[HarnessEstimate] = []
    seg = -1
    reports: list[int] = []
    for req in tr.requests:
        k = req.index
        before = None
        if req.segment != seg:
            for done in range(len(ends), req.segment):
                old = tr.segments[done].message_ids
                ends.append(estimate(k, old, len(old), reports if done == seg else []))
                if done == seg and not compaction_call(k - 1):
                    before = ends[-1].tokens
            seg = req.segment
            reports = []
        est = estimate(k, tr.segments[seg].message_ids, req.ledger_len, reports)
        out.append(msgspec.structs.replace(est, before_compaction=before) if before is not None else est)
        if req.usage is not None and (req.response_id is not None or name == "opencode"):
            reports.append(k)
        own = tr.request(k)
        learns = name in ("claude_code", "claude_code_usage") and own.usage is not None and own.response_id is not None
        if learns and own.usage is not None and own.response_id is not None and not compaction_call(k):
            rough = size(own.response_id)
            if rough > 0 and own.usage.output >= rough:
                bisect.insort(offsets, own.usage.output - rough)
    while len(ends) < len(tr.segments):
        done = len(ends)
        ids = tr.segments[done].message_ids
        ends.append(estimate(len(tr.requests) + 1, ids, len(ids), reports if done == seg else []))
    return out, ends


def assert_same_as_plain(tr: Transcript) -> None:
    for name in ESTIMATORS:
        harness._CACHE.clear()
        want, want_ends = plain_estimates(tr, name)
        got, got_ends = harness_estimates(tr, name), segment_end_estimates(tr, name)
        assert list(got) == want, name
        assert list(got_ends) == want_ends, name


# --- real transcripts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: p.name)
def test_the_pass_gives_the_plain_figures_on_real_transcripts(path: Path) -> None:
    tr = load(path)
    assert_same_as_plain(tr)
    for m in tr.messages:
        assert claude_code_rough(m) == plain_claude_code(m)
        assert chars4(m) == plain_chars4(m)
        assert bytes4(m) == plain_bytes4(m)
        assert harness.opencollab_message_tokens(m) == plain_opencollab(m)


# --- odd transcripts ------------------------------------------------------------------------------------

JSON_LEAF = (
    st.text(max_size=6)
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.text(max_size=4), JSON_VALUE, max_size=4) | st.text(max_size=8)


@st.composite
def blocks(draw: st.DrawFn) -> tuple[Any, ...]:
    kinds = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3))
    out: list[Any] = []
    for kind in kinds:
        text = draw(st.text(max_size=40))
        if kind == 0:
            out.append(TextBlock(text=text))
        elif kind == 1:
            out.append(
                ReasoningBlock(
                    text=text, redacted=draw(st.booleans()), signature_chars=draw(st.integers(0, 99))
                )
            )
        elif kind == 2:
            out.append(
                ToolCallBlock(
                    id="c", name=draw(st.sampled_from(["Read", "Bash", "é"])), arguments=draw(ARGUMENTS)
                )
            )
        elif kind == 3:
            out.append(ToolResultBlock(call_id="c", content=text, media=draw(st.integers(0, 2))))
        elif kind == 4:
            out.append(MediaBlock())
        else:
            out.append(TextBlock(text=text * 5))
    return tuple(out)


@st.composite
def transcripts(draw: st.DrawFn) -> Transcript:
    """Sessions with what a real one rarely has: stale output snapshots, requests with no report
    or no response, responses away from the end of the ledger or outside it, summaries as
    responses, ids the messages do not have, segments with no requests."""
    fmt = draw(st.sampled_from(["claude-code", "codex", "opencode"]))
    messages: list[Message] = []
    segments: list[list[str]] = [[]]
    requests: list[Request] = []
    for step in range(draw(st.integers(1, 14))):
        if draw(st.integers(0, 9)) == 0:
            kept = segments[-1][-draw(st.integers(0, 2)) :] if segments[-1] else []
            segments.extend([[] for _ in range(draw(st.integers(0, 1)))])  # one with no requests
            segments.append(list(kept))
        for i in range(draw(st.integers(0, 2))):
            m = Message(id=f"u{step}.{i}", role=Role.USER, blocks=draw(blocks()))
            messages.append(m)
            segments[-1].append(m.id)
        if draw(st.integers(0, 12)) == 0:
            segments[-1].append(f"missing{step}")  # an id no message has
        resp = Message(
            id=f"a{step}", role=Role.ASSISTANT, blocks=draw(blocks()), is_summary=draw(st.integers(0, 8)) == 0
        )
        messages.append(resp)
        ledger_len = len(segments[-1])
        where = draw(st.integers(0, 9))
        if where == 0:  # the response is not in the ledger
            pass
        elif where == 1 and segments[-1]:  # ... or earlier in it
            segments[-1].insert(draw(st.integers(0, len(segments[-1]) - 1)), resp.id)
            ledger_len += 1
        else:
            segments[-1].append(resp.id)
        usage = None
        if draw(st.integers(0, 6)):
            context = draw(st.integers(0, 50_000))
            usage = Usage(input=context, output=draw(st.integers(0, 60) | st.integers(0, 3_000)))
        requests.append(
            Request(
                index=len(requests) + 1,
                response_id=resp.id if draw(st.integers(0, 8)) else None,
                usage=usage,
                segment=len(segments) - 1,
                ledger_len=max(0, ledger_len + draw(st.integers(-1, 1)) * (draw(st.integers(0, 5)) == 0)),
            )
        )
    return Transcript(
        format=fmt,
        path="synthetic",
        messages=messages,
        segments=[Segment(index=i, message_ids=tuple(ids)) for i, ids in enumerate(segments)],
        requests=requests,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.slow
@given(transcripts())
def test_the_pass_gives_the_plain_figures_on_odd_transcripts(tr: Transcript) -> None:
    assert_same_as_plain(tr)


def test_stale_snapshots_are_corrected_by_the_running_median() -> None:
    """A long session whose recorded outputs are streaming snapshots (below chars/4 of the
    response) half the time: the correction uses the median of the final counts before it."""
    messages: list[Message] = []
    ids: list[str] = []
    requests: list[Request] = []
    for k in range(1, 400):
        m = Message(id=f"a{k}", role=Role.ASSISTANT, blocks=(TextBlock(text="x" * (40 + (k * 37) % 400)),))
        messages.append(m)
        output = 1 if k % 2 else 40 + (k * 53) % 900  # a snapshot, or a final count
        requests.append(
            Request(
                index=k, response_id=m.id, usage=Usage(input=1_000 * k, output=output), ledger_len=len(ids)
            )
        )
        ids.append(m.id)
    tr = Transcript(
        format="claude-code",
        path="synthetic",
        messages=messages,
        segments=[Segment(index=0, message_ids=tuple(ids))],
        requests=requests,
    )
    got = harness_estimates(tr, "claude_code")
    assert sum(e.output_stale for e in got) > 150
    assert list(got) == plain_estimates(tr, "claude_code")[0]


# --- the parts ------------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(ARGUMENTS)
def test_tool_call_sizes_are_the_json_dumps_sizes(arguments: dict[str, Any] | str) -> None:
    block = ToolCallBlock(id="c", name="Edit", arguments=arguments)
    text = _json(block.arguments)
    assert harness._call_json(block) == text
    assert harness._call_chars(block) == len(text)
    assert harness._call_bytes(block) == len(text.encode("utf-8"))


def test_tool_call_sizes_of_what_orjson_writes_differently() -> None:
    for arguments in (
        {"timeout": 1e-05},  # orjson: 0.00001
        {"x": float("nan"), "y": float("inf")},  # orjson: null
        {"big": 2**64, "small": -(2**63) - 1},  # orjson refuses
        {"s": "\ud800"},  # a lone surrogate: orjson refuses
        {"nested": [{"a": [1, 2.5e20, None]}]},
        {"deep": json.loads("[" * 300 + "]" * 300)},  # past orjson's nesting limit
        {"ctl": '\x00\x1f\x7f\u2028"\\/é😀'},
    ):
        block = ToolCallBlock(id="c", name="Edit", arguments=arguments)
        text = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
        assert harness._call_chars(block) == len(text), arguments
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: Codex's byte count fails as json's would
            with pytest.raises(UnicodeEncodeError):
                harness._call_bytes(block)
        else:
            assert harness._call_bytes(block) == size, arguments


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), ARGUMENTS, st.booleans())
def test_opencollab_estimate_is_what_json_writes(
    text: str, result: str, arguments: dict[str, Any] | str, reasoning: bool
) -> None:
    """orjson writes the message where it can: the sizes are json's, for any text (control
    characters, quotes, wide characters, lone surrogates) and any arguments."""
    blocks: list[TextBlock | ReasoningBlock | ToolCallBlock] = [TextBlock(text=text)]
    if reasoning:
        blocks.append(ReasoningBlock(text=result, signed=True, signature_chars=len(text)))
    blocks.append(ToolCallBlock(id="c1", name="grep", arguments=arguments))
    for m in (
        Message(id="a", role=Role.ASSISTANT, blocks=tuple(blocks)),
        Message(
            id="t", role=Role.TOOL, blocks=(ToolResultBlock(call_id="c1", tool_name="grep", content=result),)
        ),
        Message(id="u", role=Role.USER, blocks=(TextBlock(text=text),)),
    ):
        assert harness.opencollab_message_tokens(m) == plain_opencollab(m)


def test_opencollab_estimate_of_mixed_messages() -> None:
    """Arguments sized without their text (quotes and backslashes escaped again inside the JSON
    string, wide characters counted once), arguments that must be written (a float), several
    results with an image beside them, and sealed reasoning: each as json's text gives it."""
    calls = Message(
        id="a",
        role=Role.ASSISTANT,
        blocks=(
            TextBlock(text="héllo"),
            ReasoningBlock(text="", signed=True, signature_chars=30),
            ToolCallBlock(id="c1", name="grep", arguments={"q": 'say "x" \\ é', "n": [1, None]}),
            ToolCallBlock(id="c2", name="read", arguments={"ratio": 1.5}),
        ),
    )
    results = Message(
        id="t",
        role=Role.TOOL,
        blocks=(
            ToolResultBlock(call_id="c1", tool_name="grep", content="found é"),
            MediaBlock(),
            ToolResultBlock(call_id="c2", content="x" * 40),
        ),
    )
    assert harness.opencollab_message_tokens(calls) == plain_opencollab(calls) == 64 + 89 + 10
    assert harness.opencollab_message_tokens(results) == plain_opencollab(results) == 87 + 93


class OddText(TextBlock, frozen=True):
    """A block subclass: sized as its base class is."""


def test_block_subclasses_are_sized_as_their_base() -> None:
    m = Message(id="a", role=Role.ASSISTANT, blocks=(OddText(text="x" * 10), TextBlock(text="y" * 6)))
    assert claude_code_rough(m) == plain_claude_code(m) == 3 + 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-1_000, 1_000), max_size=60))
def test_running_median_is_the_sorted_median(values: list[int]) -> None:
    running = harness._RunningMedian()
    seen: list[int] = []
    for v in values:
        running.add(v)
        bisect.insort(seen, v)
        n = len(seen)
        want = seen[n // 2] if n % 2 else math.floor((seen[n // 2 - 1] + seen[n // 2]) / 2)
        assert len(running) == n and running.median() == want


def test_estimates_are_plain_frozen_harness_estimates() -> None:
    tr = load(ROOT / "inspector" / "samples" / "short-session.jsonl")
    for name in ESTIMATORS:
        for e in (*harness_estimates(tr, name), *segment_end_estimates(tr, name)):
            assert type(e) is HarnessEstimate
            fields = msgspec.structs.asdict(e)
            assert e == HarnessEstimate(**fields) and hash(e) == hash(HarnessEstimate(**fields))
            assert repr(e) == repr(HarnessEstimate(**fields))
            assert msgspec.structs.replace(e, tokens=1).tokens == 1
            with pytest.raises(AttributeError):
                e.tokens = 0  # type: ignore[misc]
