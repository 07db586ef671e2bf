"""Property tests: the invariants of docs/DESIGN.md §2.3 for every layer and both presets, over generated ledgers.

Invariants: the input is never mutated; every tool call in a view has its result and every result
its call; removals are whole groups; pinned messages are never removed, changed or folded; a
layer's output estimate is never higher than its input's; a reactive layer below its trigger
returns its input unchanged; running a layer twice equals running it once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import cast

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from inspector.model import (
    Message,
    ReasoningBlock,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from inspector.shaping import (
    AutoCompact,
    Budget,
    EagerToolOutputClear,
    ExtractiveSummarizer,
    Layer,
    Microcompact,
    MiddleTruncate,
    OldHistorySnip,
    OpencodePrune,
    PerToolResultBudget,
    Sizer,
    TokenMemo,
    ToolOutputClear,
    explain,
    group_spans,
    load_policy,
    unpaired,
)
from inspector.shaping.pinning import FLOOR, Pins
from inspector.shaping.tools import is_compactable
from inspector.tokens import HeuristicEstimator, serialize

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOOLS = (
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "file_read",
    "bash",
    "grep",
    "WebFetch",
    "Edit",
    "Write",
    "Task",
    "run_tests",
)
SIZES = (0, 12, 40, 300, 1_200, 3_000, 9_000)
WINDOWS = (None, 36_000, 38_000, 40_000, 42_000, 45_000, 50_000, 60_000, 200_000)
TOOL_BUDGETS = (300, 1_000, 2_500, 16_000)


class CharsOverFour:
    """A second estimator with other rounding: 4 chars per token, 3 per message."""

    name = "chars/4"

    def text(self, text: str) -> int:
        return len(text) // 4

    def message(self, message: Message) -> int:
        return 3 + len(serialize(message)) // 4


ESTIMATORS = (HeuristicEstimator(), CharsOverFour())


def filler(size: int, seed: int, wide: bool) -> str:
    if size == 0:
        return ""
    unit = "数据处理结果" if wide else f"line {seed}: the quick brown fox jumps over the lazy dog\n"
    return (unit * (size // len(unit) + 1))[:size]


@st.composite
def ledgers(draw: st.DrawFn) -> list[Message]:
    """Realistic ledgers: a system prompt, a task, then user turns, assistant text, tool exchanges
    (OpenAI-style tool messages or Claude-style user messages holding several results), pinned
    skill and memory messages, project maps, reasoning-only and text-plus-calls assistant messages,
    big results and errors."""
    counter = itertools.count()

    def nid(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    msgs: list[Message] = []
    if draw(st.integers(0, 9)) > 0:
        msgs.append(
            Message(
                id=nid("sys"),
                role=Role.SYSTEM,
                blocks=(TextBlock(text=filler(draw(st.sampled_from((50, 400, 2_000))), 0, False)),),
                source=Source.of(SourceKind.IDENTITY),
            )
        )
    task_pinned = draw(st.booleans())
    msgs.append(
        Message(
            id=nid("task"),
            role=Role.USER,
            blocks=(TextBlock(text="Fix the failing test in src/app.py"),),
            source=Source.of(SourceKind.TASK) if task_pinned else Source(),
        )
    )
    turns = draw(st.integers(0, 22))
    for _ in range(turns):
        kind = draw(
            st.sampled_from(
                (
                    "user",
                    "assistant",
                    "exchange",
                    "exchange",
                    "exchange",
                    "exchange",
                    "pinned",
                    "map",
                    "summary",
                )
            )
        )
        if kind == "user":
            msgs.append(
                Message(id=nid("u"), role=Role.USER, blocks=(TextBlock(text=f"please go on {len(msgs)}"),))
            )
        elif kind == "assistant":
            size = draw(st.sampled_from((20, 400, 3_000)))
            msgs.append(
                Message(id=nid("a"), role=Role.ASSISTANT, blocks=(TextBlock(text=filler(size, 1, False)),))
            )
        elif kind == "pinned":
            src = draw(st.sampled_from((SourceKind.SKILL, SourceKind.PROJECT_INSTRUCTIONS, SourceKind.TEAM)))
            msgs.append(
                Message(
                    id=nid("pin"),
                    role=Role.USER,
                    blocks=(TextBlock(text=filler(draw(st.sampled_from((100, 2_000))), 2, False)),),
                    source=Source.of(src),
                    is_meta=True,
                )
            )
        elif kind == "map":
            msgs.append(
                Message(
                    id=nid("map"),
                    role=Role.USER,
                    blocks=(TextBlock(text=filler(1_500, 3, False)),),
                    source=Source.of(SourceKind.PROJECT_MAP),
                    is_meta=True,
                )
            )
        elif kind == "summary":
            msgs.append(
                Message(
                    id=nid("sum"),
                    role=Role.USER,
                    blocks=(TextBlock(text="Earlier work: read the config, ran the tests."),),
                    source=Source.of(SourceKind.SUMMARY),
                    is_summary=True,
                )
            )
        else:
            n_calls = draw(st.integers(1, 3))
            style = draw(st.sampled_from(("plain", "text", "reasoning", "signed", "text+signed")))
            blocks: list[TextBlock | ReasoningBlock | ToolCallBlock] = []
            if style in ("reasoning", "signed", "text+signed"):
                blocks.append(ReasoningBlock(text="thinking about it", signed=style != "reasoning"))
            if style in ("text", "text+signed"):
                blocks.append(TextBlock(text=filler(draw(st.sampled_from((30, 600))), 4, False)))
            calls = []
            for _ in range(n_calls):
                tool = draw(st.sampled_from(TOOLS))
                call = ToolCallBlock(
                    id=nid("call"), name=tool, arguments={"file_path": f"src/f{len(msgs)}.py"}
                )
                calls.append(call)
                blocks.append(call)
            msgs.append(Message(id=nid("a"), role=Role.ASSISTANT, blocks=tuple(blocks)))
            results = [
                ToolResultBlock(
                    call_id=c.id,
                    tool_name=draw(st.sampled_from((None, c.name))),
                    content=filler(draw(st.sampled_from(SIZES)), k, draw(st.integers(0, 5)) == 0),
                    is_error=draw(st.integers(0, 7)) == 0,
                )
                for k, c in enumerate(calls)
            ]
            pinned_result = draw(st.integers(0, 15)) == 0
            source = Source.of(SourceKind.SKILL) if pinned_result else Source.of(SourceKind.TOOL_OUTPUT)
            if draw(st.booleans()):
                msgs.append(Message(id=nid("r"), role=Role.USER, blocks=tuple(results), source=source))
            else:
                msgs.extend(Message(id=nid("r"), role=Role.TOOL, blocks=(r,), source=source) for r in results)
    if draw(st.booleans()):
        msgs.append(Message(id=nid("u"), role=Role.USER, blocks=(TextBlock(text="and now?"),)))
    return msgs


budgets = st.builds(
    lambda w, tb: Budget.for_window(w, tool_result_budget=tb),
    st.sampled_from(WINDOWS),
    st.sampled_from(TOOL_BUDGETS),
)
estimators = st.sampled_from(ESTIMATORS)


class BloatedSummarizer:
    """A summarizer whose summaries are bigger than what they replace."""

    name = "bloated"

    def summarize(self, messages: Sequence[Message]) -> str:
        return "x" * (20_000 + 100 * len(messages))


LAYERS: dict[str, Callable[[], Layer]] = {
    "per_tool_budget": PerToolResultBudget,
    "tool_output_clear": ToolOutputClear,
    "old_history_snip": OldHistorySnip,
    "auto_compact": lambda: AutoCompact(ExtractiveSummarizer()),
    "auto_compact_bloated": lambda: AutoCompact(BloatedSummarizer()),
    "eager_clear": lambda: EagerToolOutputClear(keep=3),
}


def total(view: Sequence[Message], estimator: Sizer) -> int:
    return sum(estimator.message(m) for m in view)


def check_view(before: Sequence[Message], after: Sequence[Message], pins: Pins = FLOOR) -> None:
    """Pairing, whole-group removal and pinned protection (by the policy's rule, `pins`) between a
    view and its shaped successor."""
    assert not unpaired(after), unpaired(after)
    out = {m.id: m for m in after}
    for m in before:
        if pins(m):
            assert out.get(m.id) == m, f"pinned {m.id} removed or changed"
    for g in group_spans(before, pins):
        members = g.messages(before)
        present = [m.id in out for m in members]
        if all(present) or not any(present):
            continue
        # Snip keeps an exchange's assistant text and drops the rest of the exchange.
        leader = out.get(members[0].id)
        assert present[0] and not any(present[1:]), f"group {g.index} split"
        assert leader is not None and leader.has_text and not leader.tool_calls
    ids = [m.id for m in after]
    assert len(ids) == len(set(ids))


@SETTINGS
@given(
    ledger=ledgers(),
    budget=budgets,
    estimator=estimators,
    layer_name=st.sampled_from(sorted(LAYERS)),
    forced=st.booleans(),
)
def test_layer_invariants(
    ledger: list[Message],
    budget: Budget,
    estimator: HeuristicEstimator | CharsOverFour,
    layer_name: str,
    forced: bool,
) -> None:
    layer = LAYERS[layer_name]()
    assert not unpaired(ledger)
    snapshot = [msgspec.to_builtins(m) for m in ledger]
    original = list(ledger)

    result = layer.apply(ledger, budget, estimator, forced=forced)

    # The input is never mutated.
    assert ledger == original and all(a is b for a, b in zip(ledger, original, strict=True))
    assert [msgspec.to_builtins(m) for m in ledger] == snapshot
    check_view(ledger, result.view)
    # Estimates: what the layer reports is what the estimator says, and never higher.
    assert result.tokens_before == total(ledger, estimator)
    assert result.tokens_after == total(result.view, estimator)
    assert result.tokens_after <= result.tokens_before
    assert result.fired == (tuple(result.view) != tuple(ledger))
    # A reactive layer below its trigger returns its input unchanged.
    if layer.reactive and not forced and result.tokens_before <= budget.trigger:
        assert tuple(result.view) == tuple(ledger)
        assert not result.fired
        assert "under trigger" in result.reason or "at trigger" in result.reason
    # Idempotent.
    again = layer.apply(result.view, budget, estimator, forced=forced)
    assert again.view == result.view
    assert not again.fired


@SETTINGS
@given(
    ledger=ledgers(),
    window=st.sampled_from(WINDOWS),
    tool_budget=st.sampled_from(TOOL_BUDGETS),
    estimator=estimators,
    policy_name=st.sampled_from(("opencollab", "no_history_compaction")),
    forced=st.booleans(),
)
def test_preset_invariants(
    ledger: list[Message],
    window: int | None,
    tool_budget: int,
    estimator: HeuristicEstimator | CharsOverFour,
    policy_name: str,
    forced: bool,
) -> None:
    base = load_policy(policy_name)
    policy = replace(base, tool_result_budget=tool_budget)
    budget = policy.budget(window)
    pipeline = policy.pipeline()
    snapshot = [msgspec.to_builtins(m) for m in ledger]

    result = pipeline.run(ledger, budget, estimator, forced=forced)

    assert [msgspec.to_builtins(m) for m in ledger] == snapshot
    assert result.input == tuple(ledger)
    check_view(ledger, result.final)
    assert result.sent_tokens == total(result.final, estimator) <= result.input_tokens
    # The chain is sequential: each layer starts where the previous one ended.
    for prev, nxt in itertools.pairwise(result.layers):
        assert prev.tokens_after == nxt.tokens_before
        check_view(prev.view, nxt.view)
    assert [layer.name for layer in result.layers] == list(policy.layers)
    # Below the trigger after the always-on budget, the reactive layers leave the view alone.
    first = result.layers[0]
    if not forced and first.tokens_after <= budget.trigger:
        assert result.final == first.view
        assert all(not layer.fired for layer in result.layers[1:])
    # Idempotent.
    again = pipeline.run(result.final, budget, estimator, forced=forced)
    assert again.final == result.final
    assert again.fired == ()
    # Every changed message has a decision that says so.
    changed_ids = {d.message_id for d in result.decisions if d.action.changed}
    before = {m.id: m for m in ledger}
    for m in result.final:
        if m.id in before and before[m.id] != m:
            assert m.id in changed_ids
    final_ids = {f.id for f in result.final}
    for m in ledger:
        if m.id not in final_ids:
            assert m.id in changed_ids
        # explain() has a sentence for every message, naming the change when there was one.
        sentence = explain(result, m.id)
        if m.id in changed_ids:
            assert sentence.split(" by ", 1)[0] in ("truncated", "cleared", "removed", "summarized"), sentence
        else:
            assert sentence.startswith(("kept", "unchanged")), sentence


@st.composite
def broken_ledgers(draw: st.DrawFn) -> list[Message]:
    """Generated ledgers with a few messages lost, as in damaged or interrupted transcripts."""
    msgs = draw(ledgers())
    if not msgs:
        return msgs
    lost = draw(st.sets(st.integers(0, len(msgs) - 1), max_size=3))
    return [m for k, m in enumerate(msgs) if k not in lost]


@SETTINGS
@given(
    ledger=broken_ledgers(),
    budget=budgets,
    layer_name=st.sampled_from(sorted(LAYERS)),
    forced=st.booleans(),
)
def test_broken_ledgers_gain_no_orphans(
    ledger: list[Message], budget: Budget, layer_name: str, forced: bool
) -> None:
    """On a ledger that already has orphans, a layer adds none and keeps every other invariant."""
    estimator = ESTIMATORS[0]
    layer = LAYERS[layer_name]()
    before = unpaired(ledger)
    result = layer.apply(ledger, budget, estimator, forced=forced)
    after = unpaired(result.view)
    assert set(after.calls) <= set(before.calls)
    assert set(after.results) <= set(before.results)
    out = {m.id: m for m in result.view}
    assert all(out.get(m.id) == m for m in ledger if m.pinned)
    assert result.tokens_after <= result.tokens_before
    assert layer.apply(result.view, budget, estimator, forced=forced).view == result.view


class ContraryChars:
    """An estimator under which clearing a result can make its message bigger (a result of 37 to
    65 characters sizes below the placeholder's 33), so the layers' "not sized higher" rule acts."""

    name = "chars mod 37"

    def text(self, text: str) -> int:
        return len(text) % 37

    def message(self, message: Message) -> int:
        return 3 + sum(len(b.content) % 37 for b in message.tool_results) + len(message.text) // 4


@st.composite
def growing_ledgers(draw: st.DrawFn) -> tuple[list[Message], list[int]]:
    """A session of tool exchanges (results around the placeholder's length, a few pinned, some
    messages lost or moved: a result may come before its call, long after it, or have none) and
    the lengths its ledger is sent at, request after request."""
    counter = itertools.count()
    msgs: list[Message] = [Message(id="task", role=Role.USER, blocks=(TextBlock(text="Fix the tests"),))]
    for _ in range(draw(st.integers(1, 40))):
        calls = [
            ToolCallBlock(id=f"call{next(counter)}", name=draw(st.sampled_from(TOOLS)), arguments={})
            for _ in range(draw(st.integers(1, 3)))
        ]
        msgs.append(Message(id=f"a{next(counter)}", role=Role.ASSISTANT, blocks=tuple(calls)))
        results = tuple(
            ToolResultBlock(
                call_id=c.id, content=filler(draw(st.sampled_from((0, 20, 40, 60, 300))), k, False)
            )
            for k, c in enumerate(calls)
        )
        pinned = draw(st.integers(0, 12)) == 0
        source = Source.of(SourceKind.SKILL) if pinned else Source.of(SourceKind.TOOL_OUTPUT)
        if draw(st.booleans()):
            msgs.append(Message(id=f"r{next(counter)}", role=Role.USER, blocks=results, source=source))
        else:
            msgs.extend(
                Message(id=f"r{next(counter)}", role=Role.TOOL, blocks=(r,), source=source) for r in results
            )
    lost = draw(st.sets(st.integers(1, len(msgs) - 1), max_size=2))
    msgs = [m for k, m in enumerate(msgs) if k not in lost]
    for _ in range(draw(st.integers(0, 4)) if len(msgs) > 2 else 0):
        k = draw(st.integers(1, len(msgs) - 1))
        to = min(len(msgs) - 1, max(1, k + draw(st.integers(-2, 10))))
        msgs.insert(to, msgs.pop(k))
    cuts = sorted(draw(st.sets(st.integers(1, len(msgs)), min_size=1, max_size=30)))
    return msgs, cuts


def compactable_rule(view: Sequence[Message], compactable: frozenset[str]) -> list[tuple[int, int, str]]:
    """The rule tool output clear keeps its slots by, written plainly: (message, block, tool) of
    each result whose call is in the view and names a compactable tool, in the order the calls
    were issued (the first call of an id counts), results of one call in view order."""
    order: dict[str, tuple[int, str]] = {}
    for m in view:
        for c in m.tool_calls:
            order.setdefault(c.id, (len(order), c.name))
    found: list[tuple[int, int, int, str]] = []
    for i, m in enumerate(view):
        for j, b in enumerate(m.blocks):
            if isinstance(b, ToolResultBlock) and b.call_id in order:
                rank, tool = order[b.call_id]
                if is_compactable(tool, compactable):
                    found.append((rank, i, j, tool))
    found.sort(key=lambda s: s[0])
    return [(i, j, tool) for _, i, j, tool in found]


@SETTINGS
@pytest.mark.slow
@given(
    grown=growing_ledgers(),
    budget=st.sampled_from((Budget.for_window(None), Budget.for_window(36_000), Budget.for_window(200_000))),
    estimator=st.sampled_from((*ESTIMATORS, ContraryChars())),
    layer_name=st.sampled_from(("tool_output_clear", "microcompact")),
    forced=st.lists(st.integers(0, 4).map(bool), min_size=30, max_size=30),
    one_memo=st.booleans(),
)
def test_clearing_goes_on_as_if_afresh(
    grown: tuple[list[Message], list[int]],
    budget: Budget,
    estimator: HeuristicEstimator | CharsOverFour | ContraryChars,
    layer_name: str,
    forced: list[bool],
    one_memo: bool,
) -> None:
    """One clearing layer shaping the growing ledger of request after request (it goes on from the
    view before) gives, at every request, what a fresh layer gives: the view, the figures, the
    reason and every decision."""
    make: Callable[[], Layer] = ToolOutputClear if layer_name == "tool_output_clear" else Microcompact
    msgs, cuts = grown
    going, quiet = make(), make()
    shared, quiet_memo = TokenMemo(estimator), TokenMemo(estimator)
    for n, force in zip(cuts, forced, strict=False):
        view = tuple(msgs[:n])
        sizer = shared if one_memo else TokenMemo(estimator)
        got = going.apply(view, budget, sizer, forced=force)
        want = make().apply(view, budget, TokenMemo(estimator), forced=force)
        # as a simulation runs it: no decisions written, the same view and figures
        hushed = quiet.apply(view, budget, quiet_memo, forced=force, explain=False)
        assert (hushed.view, hushed.tokens_after, hushed.reason, hushed.decisions) == (
            want.view,
            want.tokens_after,
            want.reason,
            (),
        )
        assert got.view == want.view
        assert (got.tokens_before, got.tokens_after, got.fired, got.cleared) == (
            want.tokens_before,
            want.tokens_after,
            want.fired,
            want.cleared,
        )
        assert got.reason == want.reason
        assert got.decisions == want.decisions
        assert got.tokens_after == total(got.view, estimator)
        if got.fired:
            # the slots it went on with are the rule's: compactable results in call order
            layer = cast(ToolOutputClear, going)
            rule = [s for s in compactable_rule(view, layer.compactable) if not view[s[0]].pinned]
            assert [(s.message, s.block, s.tool) for s in layer._found.free] == rule


def _with_turns(grown: tuple[list[Message], list[int]]) -> tuple[list[Message], list[int]]:
    """The growing ledger with a user prompt after every third message (opencode's prune skips
    the last two user turns, so a ledger of one turn never prunes), its cuts moved to match."""
    msgs, cuts = grown
    out: list[Message] = []
    at: list[int] = []  # original message count -> length of the new list
    for k, m in enumerate(msgs):
        out.append(m)
        if k % 3 == 2:
            out.append(Message(id=f"prompt{k}", role=Role.USER, blocks=(TextBlock(text=f"Go on ({k})"),)))
        at.append(len(out))
    return out, [at[n - 1] if n else 0 for n in cuts]


@SETTINGS
@given(
    grown=growing_ledgers(),
    estimator=st.sampled_from((*ESTIMATORS, ContraryChars())),
    layer_name=st.sampled_from(("middle_truncate", "opencode_prune")),
    limit=st.sampled_from((100, 250, 10_000)),
    one_memo=st.booleans(),
)
def test_carried_scans_go_on_as_if_afresh(
    grown: tuple[list[Message], list[int]],
    estimator: HeuristicEstimator | CharsOverFour | ContraryChars,
    layer_name: str,
    limit: int,
    one_memo: bool,
) -> None:
    """Codex's middle truncation and opencode's prune keep what they read of each message (and
    the copies they make) from one request to the next: at every request of a growing ledger they
    give what a fresh layer gives, the view, the figures, the reason and every decision."""

    def make() -> Layer:
        # (small thresholds, so that the short results of these ledgers are truncated and pruned)
        return MiddleTruncate() if layer_name == "middle_truncate" else OpencodePrune(minimum=limit // 5, protect=limit // 2)

    msgs, cuts = _with_turns(grown)
    budget = replace(Budget.for_window(None), tool_result_budget=limit)
    going = make()
    shared = TokenMemo(estimator)
    fired = 0
    for n in cuts:
        view = tuple(msgs[:n])
        got = going.apply(view, budget, shared if one_memo else TokenMemo(estimator))
        want = make().apply(view, budget, TokenMemo(estimator))
        assert got.view == want.view
        assert (got.tokens_before, got.tokens_after, got.fired, got.truncated, got.cleared) == (
            want.tokens_before,
            want.tokens_after,
            want.fired,
            want.truncated,
            want.cleared,
        )
        assert (got.reason, got.decisions) == (want.reason, want.decisions)
        assert got.tokens_after == total(got.view, estimator)
        fired += got.fired
    if layer_name == "opencode_prune" and limit == 100 and sum(
        -(-len(b.content) // 4)
        for m in msgs[: max(cuts, default=0)]
        for b in m.blocks
        if isinstance(b, ToolResultBlock) and not m.pinned
    ) > 2_000:
        assert fired  # (unpinned output far past what it protects: seen pruning, not only idle)


def test_middle_truncation_reads_each_message_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shaping the ledger of request after request, codex's middle truncation cuts each long
    result once (its copy is kept), not at every request whose ledger holds it: linear in the
    session, not quadratic."""
    import inspector.shaping.codex as codex

    cut: list[int] = []
    real = codex.truncate_middle

    def counted(text: str, limit: int) -> str:
        cut.append(len(text))
        return real(text, limit)

    monkeypatch.setattr(codex, "truncate_middle", counted)
    msgs: list[Message] = [Message(id="task", role=Role.USER, blocks=(TextBlock(text="Fix the tests"),))]
    for k in range(60):
        msgs.append(
            Message(
                id=f"a{k}",
                role=Role.ASSISTANT,
                blocks=(ToolCallBlock(id=f"c{k}", name="Bash", arguments={"command": "make"}),),
            )
        )
        msgs.append(
            Message(id=f"r{k}", role=Role.USER, blocks=(ToolResultBlock(call_id=f"c{k}", content="x" * (500 + k)),))
        )
    budget = replace(Budget.for_window(None), tool_result_budget=400)
    layer = MiddleTruncate()
    est = HeuristicEstimator()
    for n in range(3, len(msgs) + 1, 2):
        result = layer.apply(tuple(msgs[:n]), budget, TokenMemo(est))
        assert result.truncated == (n - 1) // 2
    assert sorted(cut) == [500 + k for k in range(60)]


QUIET_PRESETS = ("claude-code", "codex", "opencode", "opencollab", "no_history_compaction")


def _idle(ledger: list[Message], minutes: int | None) -> list[Message]:
    """The ledger with its last assistant message written `minutes` before the messages after it
    (no timestamps at all for None)."""
    if minutes is None:
        return ledger
    last = max((i for i, m in enumerate(ledger) if m.role is Role.ASSISTANT), default=None)
    if last is None:
        return ledger
    out = list(ledger)
    out[last] = replace(out[last], timestamp="2026-01-05T10:00:00Z")
    after = f"2026-01-05T{10 + minutes // 60:02d}:{minutes % 60:02d}:00Z"
    for i in range(last + 1, len(out)):
        out[i] = replace(out[i], timestamp=after)
    return out


@SETTINGS
@given(
    ledger=ledgers(),
    window=st.sampled_from((None, 60_000, 80_000, 100_000, 200_000)),
    tool_budget=st.sampled_from(TOOL_BUDGETS),
    estimator=estimators,
    policy_name=st.sampled_from(QUIET_PRESETS),
    clear_mode=st.sampled_from((None, "none", "legacy", "time")),
    idle=st.sampled_from((None, 5, 90)),
)
def test_a_quiet_pipeline_fires_no_layer(
    ledger: list[Message],
    window: int | None,
    tool_budget: int,
    estimator: HeuristicEstimator | CharsOverFour,
    policy_name: str,
    clear_mode: str | None,
    idle: int | None,
) -> None:
    # `Pipeline.quiet` (and each layer's `quiet`) is True only where running changes nothing
    policy = replace(load_policy(policy_name), tool_result_budget=tool_budget)
    budget = policy.budget(window)
    if policy_name == "claude-code":
        budget = replace(budget, clear_mode=clear_mode)
    view = tuple(_idle(ledger, idle))
    pipeline = policy.pipeline()
    quiet = pipeline.quiet(view, budget, estimator)
    result = pipeline.run(view, budget, estimator)
    if quiet:
        assert result.fired == ()
        assert result.final == view
        assert all(r.tokens_before == r.tokens_after == result.input_tokens for r in result.layers)
    for layer in policy.pipeline().layers:
        alone = getattr(layer, "quiet", None)
        if alone is not None and alone(view, budget, estimator):
            applied = layer.apply(view, budget, estimator)
            assert not applied.fired and applied.view == view, layer.name
