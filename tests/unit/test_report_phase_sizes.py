"""The report phase's shortcuts give what the plain ways give: tool calls measured from orjson's
text, messages sized as the delta pass reaches them, weights filed when first read, models
stepped forward, harness figures without their estimates, a median filed when asked for."""

from __future__ import annotations

import bisect
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.formats import load
from inspector.model import Message, Role, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.tokens import OVERHEAD_ID, HeuristicEstimator, calibrate, get_estimator, heuristic_tokens
from inspector.tokens import harness as harness_module
from inspector.tokens.calibration import (
    MATURE,
    NOISE_SD,
    NOISE_SHARE,
    ROBUST_C,
    UNSEEN_MEAN,
    UNSEEN_SHARE,
    CostModel,
    block_text,
)
from inspector.tokens.calibration.features import _ascii_call, _parts
from inspector.tokens.calibration.priors import _SQRT_2PI, _clamp
from inspector.tokens.harness import harness_estimates, harness_tokens, segment_end_estimates
from tests.conftest import FA812, real_transcripts
from tests.unit.test_calibration_model import long_session
from tests.unit.test_harness_pass import ARGUMENTS

NAMES = st.sampled_from(["Bash", "Edit", "a\\nb", "x\ny", "é", "", "mcp__srv__do it"])


def _plain_shape(block: ToolCallBlock) -> tuple[int, int] | None:
    text = block_text(block)
    if not text.isascii():
        return None
    return len(text), text.count("\\n") + text.count("\n")


@settings(max_examples=400, deadline=None)
@given(ARGUMENTS, NAMES)
def test_tool_call_shape_is_the_written_texts(arguments: dict[str, Any] | str, name: str) -> None:
    """Where `_ascii_call` measures a call, it gives the characters and line breaks of its text."""
    block = ToolCallBlock(id="c", name=name, arguments=arguments)
    got = _ascii_call(block)
    if got is not None:
        assert got == _plain_shape(block), (name, arguments)


WRITTEN_DIFFERENTLY: tuple[dict[str, Any], ...] = (
    {"timeout": 1e-05},  # orjson: 0.00001
    {"x": float("nan"), "y": float("inf")},  # orjson: null
    {"big": 2**64, "small": -(2**63) - 1},  # orjson refuses
    {"s": "\ud800"},  # a lone surrogate: orjson refuses
    {"nested": [{"a": [1, 2.5e20, None]}]},
    {"deep": [[[[[[[[[[[]]]]]]]]]]]},
    {"wide": "é😀"},  # not ASCII
)
WRITTEN_ALIKE: tuple[dict[str, Any], ...] = (
    {"ctl": '\x00\x1f\x7f"\\/'},
    {"line\\n": "a\nb\\nc", "list": [1, "x", True, None, {}, []]},
    {"pattern": "src/**/*.py", "n": 3, "all": False},
    {},
)


def test_tool_call_shapes_of_odd_arguments() -> None:
    for arguments in WRITTEN_DIFFERENTLY:
        block = ToolCallBlock(id="c", name="Edit", arguments=arguments)
        got = _ascii_call(block)
        assert got is None or got == _plain_shape(block), arguments
    for arguments in WRITTEN_ALIKE:
        block = ToolCallBlock(id="c", name="Edit", arguments=arguments)
        assert _ascii_call(block) == _plain_shape(block) is not None, arguments
    # a name that is not ASCII: the text is written
    assert _ascii_call(ToolCallBlock(id="c", name="é", arguments={})) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ARGUMENTS, NAMES), min_size=1, max_size=3), st.booleans(), st.text(max_size=20))
def test_parts_by_thirds_are_the_parts_by_the_estimator(
    calls: list[tuple[dict[str, Any] | str, str]], response: bool, text: str
) -> None:
    """The heuristic's own path through `_parts` (ASCII texts by thirds, calls by orjson) gives the
    features the estimator's `text` gives, in the same order."""
    blocks: list[Any] = [TextBlock(text=text)]
    for i, (arguments, name) in enumerate(calls):
        blocks.append(ToolCallBlock(id=f"c{i}", name=name, arguments=arguments))
    blocks.append(ToolResultBlock(call_id="c0", tool_name="Bash", content=text + "\nok"))
    m = Message(id="m", role=Role.ASSISTANT if response else Role.USER, blocks=tuple(blocks))
    fast = _parts(m, heuristic_tokens, None, True)
    plain = _parts(m, HeuristicEstimator().text)
    assert list(fast.x.items()) == list(plain.x.items())
    assert (fast.human, fast.thinking, fast.response) == (plain.human, plain.thinking, plain.response)


def test_the_pass_sizes_only_the_messages_it_reaches() -> None:
    tr = long_session(MATURE + 40)
    cal = calibrate(tr, HeuristicEstimator())
    cal.predicted(30)
    req = tr.requests[29]
    held = set(tr.segments[req.segment].message_ids[: req.ledger_len])
    assert set(cal._parts) == held
    whole = calibrate(tr, HeuristicEstimator())
    whole._prefetch_sizes()  # every message, eagerly
    for mid, p in cal._parts.items():
        assert list(p.x.items()) == list(whole._parts[mid].x.items()), mid
    cal.predicted(len(tr.requests))
    last = tr.requests[-1]
    assert set(cal._parts) == set(tr.segments[last.segment].message_ids[: last.ledger_len])


def test_weights_and_models_read_between_pieces_of_the_pass() -> None:
    """Weights read while the pass has gone only part of the way (filed from its log then) and
    models stepped forward from where they were last asked give what one whole pass gives."""
    cases = [(long_session(MATURE + 120), "heuristic")]
    if FA812.exists():
        cases.append((load(FA812), "heuristic"))
    for tr, est in cases:
        n = len(tr.requests)
        whole = calibrate(tr, get_estimator(est))
        whole.predicted(n)
        lazy = calibrate(tr, get_estimator(est))
        for k in (5, 4, 60, 61, n // 2, n // 2 - 3, n - 1, n):
            if k < 1 or k > n:
                continue
            assert lazy.ratios(k) == whole.ratios(k), (est, k)
            assert lazy.ledger_total(k) == whole.ledger_total(k), (est, k)
            req = tr.requests[k - 1]
            ids = tr.segments[req.segment].message_ids[: req.ledger_len]
            if ids and lazy._lazy_positions(k) is not None:
                assert lazy.weight_of(k, ids[-1]) == whole.weight_of(k, ids[-1]), (est, k)
            assert lazy.weights(k) == whole.weights(k), (est, k)
        for k in range(1, n + 1):
            assert lazy.model_at(k).as_dict() == whole.model_at(k).as_dict(), (est, k)
            assert lazy.weights(k) == whole.weights(k), (est, k)


def test_harness_tokens_are_the_estimates_tokens() -> None:
    for path in real_transcripts()[:6]:
        tr = load(path)
        for name in harness_module.ESTIMATORS:
            harness_module._CACHE.clear()
            tokens = harness_tokens(tr, name)  # before the estimates are made
            estimates = harness_estimates(tr, name)
            assert tokens == tuple(e.tokens for e in estimates), (path.name, name)
            assert harness_tokens(tr, name) is tokens  # cached with the pass
            assert all(type(e) is harness_module.HarnessEstimate for e in estimates)
            assert len(segment_end_estimates(tr, name)) == len(tr.segments)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1_000, 1_000), st.booleans()), max_size=80))
def test_running_median_filed_when_asked(steps: list[tuple[int, bool]]) -> None:
    """Values added between two medians are filed when the next is asked for: the same medians."""
    running = harness_module._RunningMedian()
    seen: list[int] = []
    for value, ask in steps:
        running.add(value)
        bisect.insort(seen, value)
        assert len(running) == len(seen)
        if ask:
            n = len(seen)
            want = seen[n // 2] if n % 2 else math.floor((seen[n // 2 - 1] + seen[n // 2]) / 2)
            assert running.median() == want


def _plain_update(model: CostModel, x: dict[str, float], y: float, robust: bool, unseen: bool) -> None:
    """`CostModel.update` as first written: every row and column of P, term by term."""
    nz = [(model._ensure(n), v) for n, v in x.items() if v]
    if not nz:
        return
    theta, P = model.theta, model.P
    err = y - sum(theta[i] * v for i, v in nz)
    px = [sum(row[i] * v for i, v in nz) for row in P]
    xpx = sum(v * px[i] for i, v in nz)
    noise = NOISE_SD + NOISE_SHARE * abs(y)
    spread = noise * math.sqrt(1.0 + xpx * (NOISE_SD / noise) ** 2)
    z = abs(err) / spread
    w = 1.0 / (1.0 + (z / ROBUST_C) ** 2) if robust else 1.0
    if unseen and robust and err > 0:
        log_model = -0.5 * z * z - math.log(spread * _SQRT_2PI)
        log_unseen = -err / UNSEEN_MEAN - math.log(UNSEEN_MEAN)
        odds = UNSEEN_SHARE / (1.0 - UNSEEN_SHARE) * math.exp(min(log_unseen - log_model, 700.0))
        w /= 1.0 + odds
        if w <= 0.0:
            model.n += 1
            return
    w *= (NOISE_SD / noise) ** 2
    denom = 1.0 / w + xpx
    for i, p in enumerate(px):
        ki = p / denom
        if ki:
            theta[i] += ki * err
            P[i] = [pij - ki * pj for pij, pj in zip(P[i], px, strict=True)]
            model._coef[model.names[i]] = _clamp(model.names[i], theta[i])
    model.n += 1


FEATURES = ["out_text", "out_calls", "final", "tool_result", "result:Bash", "results:Bash", "block", "media"]
OBSERVATION = st.tuples(
    st.dictionaries(
        st.sampled_from(FEATURES),
        st.floats(min_value=-50, max_value=5_000, allow_nan=False) | st.sampled_from([0.0, 1.0, -0.0]),
        max_size=5,
    ),
    st.floats(min_value=-1e4, max_value=1e5, allow_nan=False),
    st.booleans(),
    st.booleans(),
)


def _bits(model: CostModel) -> tuple[object, ...]:
    return (
        [repr(v) for v in model.theta],
        [[repr(v) for v in row] for row in model.P],
        {n: repr(v) for n, v in model._coef.items()},
        model.names,
        model.n,
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(OBSERVATION, max_size=25))
def test_cost_model_update_touches_only_what_changes(observations: list[Any]) -> None:
    """Rows and columns of P skipped where the update's vector is zero: bit for bit the update
    that goes over every one of them."""
    fast, plain = CostModel(0.9), CostModel(0.9)
    for x, y, robust, unseen in observations:
        fast.update(x, y, robust=robust, unseen=unseen)
        _plain_update(plain, x, y, robust, unseen)
        assert _bits(fast) == _bits(plain)


def test_one_weight_is_the_weight_in_the_whole_dict() -> None:
    """`Step.weight(mid)` (read one by one, as findings reads it request after request) is
    `Step.weights.get(mid)`: for every ledger message, the overhead, a message of another segment
    and an unknown id, in both modes, with the weights an OpenCollab trace's as-sent pass stands in."""
    from inspector.replay import Replay
    from inspector.samples import sample_path

    cases = [
        (load(sample_path("long-session")), "opencollab"),
        (load(Path(sample_path("long-session")).parent / "opencollab-run"), None),
        (long_session(MATURE + 40), None),
    ]
    if FA812.exists():
        cases.append((load(FA812), None))
    stood_in = 0
    for tr, policy in cases:
        for mode in ("delta", "proportional"):
            replay = Replay.open(tr, policy=policy, mode=mode)
            everyone = [m.id for m in tr.messages] + [OVERHEAD_ID, "no-such-message"]
            for k in range(1, len(tr.requests) + 1):
                step = replay.step(k)
                whole = step.weights
                stood_in += bool(step.raw)
                for mid in everyone:
                    assert step.weight(mid) == whole.get(mid), (tr.path, mode, k, mid)
    assert stood_in  # the as-sent weights were among those read


@given(ARGUMENTS)
@settings(max_examples=300, deadline=None)
def test_compact_json_is_what_json_writes(arguments: Any) -> None:
    """Where `compact_json` answers, it sizes json's compact text, and its spaces make json's
    default text."""
    import json

    from inspector.tokens.base import compact_json

    if not isinstance(arguments, dict):
        return
    got = compact_json(arguments)
    if got is None:
        return
    text = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
    assert (got.nbytes, got.chars, got.escaped_breaks) == (len(text.encode()), len(text), text.count("\\n"))
    spaced = json.dumps(arguments, ensure_ascii=False)
    assert got.chars + got.spaces == len(spaced)
    # written again as a JSON string (as OpenCollab sends a call's arguments), each escape adds one
    assert got.escapes == len(json.dumps(spaced, ensure_ascii=False)) - 2 - len(spaced)


def test_compact_json_answers_for_plain_arguments_only() -> None:
    from inspector.tokens.base import compact_json

    text = '{"a":[1,"é\\n",null,{"b":true}]}'
    # six quotes and the backslash of the escaped line break
    assert compact_json({"a": [1, "é\n", None, {"b": True}]}) == (len(text.encode()), len(text), 1, 5, 7)
    assert compact_json({}) == (2, 2, 0, 0, 0)
    assert compact_json({"x": 1.5}) is None  # a float may not be written as json writes it
    assert compact_json({"x": 1 << 70}) is None  # past 64 bits: orjson refuses it
    assert compact_json({"x": "\ud800"}) is None  # a lone surrogate
