"""Teaching scenarios: their replays and their tour stops, narrated from the replays' numbers.

The scenario sessions are generated and registered by `inspector.samples` (`SCENARIOS`: file,
window, policy, the policy a lesson compares against). Everything a tour says about them is
computed here from their replays, so a stop cannot drift from the data: each scenario has a
function that finds its key requests (the first request where a layer fires, the request the
provider rejected, the first compaction of a storm...) and writes one paragraph per stop with
the numbers of that replay.

The analysis the stops narrate lives with the core, not here: overflow recovery and its single
retry in `inspector.findings.overflow`, a policy run by a harness that keeps what it compacted
(and its storms) in `inspector.replay.persisted`; layer names come from the layers themselves.

Pure core: no Textual. `tour(name)` is what an app or a `tour` command would list.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from msgspec import Struct

from inspector.findings.checks import call_text
from inspector.findings.overflow import overflow_incidents
from inspector.formats import load
from inspector.model import Message, SourceKind, Transcript
from inspector.replay import Replay, ReplayError
from inspector.replay.cache import cache_cost
from inspector.replay.persisted import STORM_SPAN, persisted_run
from inspector.samples import SCENARIOS, SampleInfo
from inspector.shaping import Action, ShapeResult, load_policy, pin_label
from inspector.shaping.auto_compact import AutoCompact
from inspector.shaping.base import plural
from inspector.shaping.eager_clear import EagerToolOutputClear
from inspector.shaping.history_snip import OldHistorySnip
from inspector.shaping.tool_budget import PerToolResultBudget
from inspector.shaping.tool_output_clear import ToolOutputClear

__all__ = ["Stop", "Tour", "open_scenario", "scenario_info", "scenario_names", "stops", "tour"]

# the layers the stops are about, by the names the layers give themselves
BUDGET, CLEAR, SNIP = PerToolResultBudget.name, ToolOutputClear.name, OldHistorySnip.name
COMPACT, EAGER = AutoCompact.name, EagerToolOutputClear.name


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------


class Stop(Struct, frozen=True, kw_only=True):
    """A key request of a scenario and what a student should see there, in one paragraph."""

    request: int
    title: str
    narration: str
    policy: str
    """The policy whose replay the numbers come from (the scenario's own, or the one it compares)."""
    layer: str | None = None
    """The layer the stop is about, where there is one."""


class Tour(Struct, frozen=True, kw_only=True):
    """A scenario and its stops, in request order."""

    name: str
    title: str
    description: str
    file: str
    window: int
    policy: str
    compare_policy: str | None
    requests: int
    stops: list[Stop]


# --------------------------------------------------------------------------------------------
# Opening scenarios
# --------------------------------------------------------------------------------------------


def scenario_names() -> list[str]:
    """The registered scenarios, in registry order (the order of the lessons)."""
    return list(SCENARIOS)


def scenario_info(name: str) -> SampleInfo:
    """The registry entry of scenario `name` (KeyError naming the known ones)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}") from None


@cache
def _transcript(name: str) -> Transcript:
    return load(scenario_info(name).path)


def open_scenario(name: str, policy: str | None = None, window: int | None = None) -> Replay:
    """The scenario's transcript replayed with its registered policy and window (or those given)."""
    info = scenario_info(name)
    return Replay.open(
        _transcript(name), policy=load_policy(policy or info.policy), window=window or info.window
    )


def _compare(name: str, replay: Replay) -> Replay | None:
    other = scenario_info(name).compare_policy
    return replay.with_settings(load_policy(other)) if other is not None else None


# --------------------------------------------------------------------------------------------
# Stops, scenario by scenario
# --------------------------------------------------------------------------------------------


def _first(replay: Replay, test: Callable[[ShapeResult], bool], start: int = 1) -> int | None:
    for k in range(start, len(replay) + 1):
        if test(replay.step(k).result):
            return k
    return None


def _need(k: int | None, what: str) -> int:
    if k is None:
        raise ReplayError(f"the scenario never shows {what}: regenerate it")
    return k


def _layers_text(result: ShapeResult) -> str:
    """ "per-tool budget 34,535 -> 24,984, then tool output clear 28,087 -> 21,802"."""
    parts = [
        f"{layer.label} {layer.tokens_before:,} -> {layer.tokens_after:,}"
        for layer in result.layers
        if layer.fired
    ]
    return ", then ".join(parts) if parts else "no layer fired"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _stop(replay: Replay, k: int, title: str, narration: str, layer: str | None = None) -> Stop:
    return Stop(request=k, title=title, narration=narration, policy=replay.policy.name, layer=layer)


def _budget_line(replay: Replay) -> str:
    b = replay.budget
    return (
        f"the {b.window or 0:,}-token window puts the trigger at {b.trigger:,} and the target at {b.target:,}"
    )


def _stops_budget_alone(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    first = _need(_first(replay, lambda r: BUDGET in r.fired), "the per-tool budget firing")
    r1 = replay.step(first).result
    d = next(d for d in r1.layer(BUDGET).decisions)
    over = _need(
        _first(replay, lambda r: r.input_tokens > b.trigger >= r.sent_tokens), "a ledger over the trigger"
    )
    r2 = replay.step(over).result
    n = len(replay)
    reactive = [k for k in range(1, n + 1) if set(replay.step(k).result.fired) - {BUDGET}]
    peak = max(range(1, n + 1), key=lambda k: replay.step(k).result.input_tokens)
    r3 = replay.step(peak).result
    return [
        _stop(
            replay,
            first,
            "A tool result over the per-tool budget",
            f"The full read of a module came back as a tool result far longer than the {b.tool_result_budget:,}-"
            f"character per-tool budget. The budget is always on: it keeps the head and ends the result with a "
            f"marker telling the model to re-read a narrower range ({d.reason}). The estimate goes from "
            f"{r1.input_tokens:,} to {r1.sent_tokens:,} tokens; {_budget_line(replay)}, so nothing else runs.",
            BUDGET,
        ),
        _stop(
            replay,
            over,
            "The ledger crosses the trigger; the budget keeps the view under it",
            f"The ledger now holds {r2.input_tokens:,} tokens, over the trigger ({b.trigger:,}), but the "
            f"per-tool budget has already cut the long results: the view is {r2.sent_tokens:,} tokens, under the "
            f"trigger, so tool output clear, snip and auto compact all stay idle ({_layers_text(r2)}). A cheap "
            "layer that runs first makes the expensive ones unnecessary.",
            BUDGET,
        ),
        _stop(
            replay,
            peak,
            "The peak, and still no reactive layer",
            f"At the largest request the ledger holds {r3.input_tokens:,} tokens and {r3.sent_tokens:,} are sent. "
            f"Over the whole session, {plural(len(reactive), 'request')} needed a reactive layer: the per-tool "
            "budget alone was enough. Nothing was cleared, so the model never had to re-read anything.",
            BUDGET,
        ),
    ]


def _stops_clear_suffices(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    k = _need(_first(replay, lambda r: CLEAR in r.fired), "tool output clear firing")
    before = replay.step(k - 1).result
    r = replay.step(k).result
    clear = r.layer(CLEAR)
    n = len(replay)
    deeper = [
        x for x in range(1, n + 1) if {SNIP, COMPACT} & set(replay.step(x).result.fired)
    ]
    last = replay.step(n).result
    return [
        _stop(
            replay,
            k - 1,
            "Under the trigger",
            f"Every request so far read more code: {before.sent_tokens:,} tokens are sent, under the trigger "
            f"({b.trigger:,}; {_budget_line(replay)}). Nothing fires; every tool result is still verbatim.",
        ),
        _stop(
            replay,
            k,
            "Over the trigger: tool output clear",
            f"The next read takes the estimate to {clear.tokens_before:,}, over the trigger. Tool output clear "
            f"keeps the {b.results_kept} most recent results of re-runnable tools (reads, greps, test runs) and "
            f"replaces {plural(clear.cleared, 'older one')} with a short placeholder; the calls and their ids "
            f"stay, so nothing is orphaned. The estimate drops to {clear.tokens_after:,}, under the trigger, so "
            "snip and auto compact see nothing to do.",
            CLEAR,
        ),
        _stop(
            replay,
            n,
            "Clearing was enough for the whole session",
            f"At the last request {last.input_tokens:,} tokens of ledger become {last.sent_tokens:,} sent "
            f"({_layers_text(last)}). {plural(len(deeper), 'request')} needed snip or auto compact: old tool "
            "output was the bulk of the pressure, and it is the cheapest thing to drop, because the model can "
            "re-run the tool.",
            CLEAR,
        ),
    ]


def _stops_snip_needed(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    clear_k = _need(_first(replay, lambda r: CLEAR in r.fired), "tool output clear firing")
    snip_k = _need(_first(replay, lambda r: SNIP in r.fired), "old history snip firing")
    rc = replay.step(clear_k).result
    rs = replay.step(snip_k).result
    clear, snip = rs.layer(CLEAR), rs.layer(SNIP)
    return [
        _stop(
            replay,
            clear_k,
            "Clear is enough, for now",
            f"The estimate crosses the trigger ({b.trigger:,}): tool output clear empties the old reads "
            f"({_layers_text(rc)}) and the view is under the trigger again. But most of this session is new test "
            "modules written with Write: their content travels in the assistant's tool calls, which no clear "
            "touches.",
            CLEAR,
        ),
        _stop(
            replay,
            snip_k,
            "Clear is not enough: old history snip",
            f"Clearing takes {clear.tokens_before:,} only to {clear.tokens_after:,}, still over the trigger. Old "
            f"history snip walks the groups oldest first and removes whole tool exchanges (the call and its "
            f"result together, keeping any text the assistant wrote) until the estimate is at or under the target "
            f"({b.target:,}): {plural(snip.removed, 'message')} go, {snip.tokens_before:,} -> {snip.tokens_after:,}. "
            f"It never touches the first group, user turns, or the last {b.groups_kept} groups; auto compact is "
            "not needed.",
            SNIP,
        ),
    ]


def _task(replay: Replay) -> Message:
    return next(m for m in replay.transcript.messages if m.source.kind is SourceKind.TASK)


def _stops_compact(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    snip_k = _need(_first(replay, lambda r: SNIP in r.fired), "old history snip firing")
    k = _need(_first(replay, lambda r: COMPACT in r.fired), "auto compact firing")
    rs = replay.step(snip_k).result
    r = replay.step(k).result
    snip, compact = r.layer(SNIP), r.layer(COMPACT)
    task = _task(replay)
    kept = task.id in {m.id for m in r.final}
    summary = next(m for m in r.final if m.is_summary)
    return [
        _stop(
            replay,
            snip_k,
            "Snip removes what it may",
            f"Over the trigger ({b.trigger:,}), snip removes the few exchanges it is allowed to: "
            f"{_layers_text(rs)}. Most of this session's work is in assistant messages that carry reasoning "
            "and tool calls but no text; signed reasoning cannot be split from its calls, so snip skips them.",
            SNIP,
        ),
        _stop(
            replay,
            k,
            "The last resort: auto compact",
            f"Snip gets only from {snip.tokens_before:,} to {snip.tokens_after:,}, still over the trigger. Auto "
            f"compact replaces the longest stretch of groups holding no pinned message with one visible summary "
            f"({plural(compact.summarized, 'message')} folded into '{summary.text.splitlines()[0]}'): "
            f"{compact.tokens_before:,} -> {compact.tokens_after:,}, under the target ({b.target:,}). In a real "
            "harness this is a model call, which is why it runs last.",
            COMPACT,
        ),
        _stop(
            replay,
            k,
            "The pinned task survives",
            f"The task the user gave first is pinned ({pin_label(task.source)}): auto compact never folds a "
            f"pinned message, so it {'is still in the view, verbatim,' if kept else 'is missing'} after the "
            "compaction, with the project instructions and the skill body. What the agent was asked to do "
            "cannot be summarized away.",
            COMPACT,
        ),
    ]


def _stops_overflow(replay: Replay, _: Replay | None) -> list[Stop]:
    incidents = overflow_incidents(replay)
    if not incidents:
        raise ReplayError("the scenario records no overflow: regenerate it")
    inc = incidents[0]
    rec = inc.recovery
    k = _need(inc.after_request or None, "an overflow after a request")
    normal = rec.normal
    assert normal is not None
    limit = rec.limit or 0
    calm = replay.step(k).result
    paste = next(m for m in reversed(rec.view) if m.is_human)
    paste_tokens = replay.sizer(rec.request).message(paste)
    call = call_text(k)
    out = [
        _stop(
            replay,
            k,
            "Before the paste",
            f"The session is small: {calm.sent_tokens:,} tokens sent at request {k}, under the trigger "
            f"({replay.budget.trigger:,}; {_budget_line(replay)}). Then the user pastes a whole nightly CI log "
            f"into one message: {len(paste.text):,} characters, {paste_tokens:,} tokens.",
        ),
        _stop(
            replay,
            k,
            f"The provider rejects {call}",
            f'The next call carries the paste, and the provider answers "{inc.error}": it never becomes a '
            f"request (the transcript records it as an API error after request {k}, with no usage). Its "
            f"ledger holds {rec.ledger_tokens:,} tokens; the pipeline fired ({_layers_text(normal)}) and the view "
            f"is still {rec.tokens_before:,}, over the {limit:,}-token window. The harness answers an overflow "
            "with forced mode: every reactive layer compacts to its target unconditionally. Here that sends "
            f"{rec.tokens_after:,} tokens: the layers had already done what they may, because the estimate was "
            "far over the trigger (forced mode frees more only when the estimate said 'under the trigger' and "
            "the provider disagreed).",
        ),
    ]
    if inc.retry_overflowed or inc.retry is not None:
        retry = f"request {inc.retry}" if inc.retry is not None else "the next call"
        out.append(
            _stop(
                replay,
                inc.retry if inc.retry is not None else k,
                "One retry, then a graceful stop" if inc.stopped else "One retry, and it went through",
                f"The harness retries once with the forced view ({retry}). "
                + (
                    "It is rejected again, a second API error with no request between, and a second overflow "
                    f'stops the run, with this reason: "{inc.reason}". The largest message alone, the pasted '
                    f"log, weighs {rec.largest_tokens:,} tokens; pinned sources stay protected even in forced "
                    "mode. Retrying again would only fail again."
                    if inc.stopped
                    else inc.reason + "."
                ),
            )
        )
    return out


def _stops_small_window(replay: Replay, _: Replay | None) -> list[Stop]:
    b = replay.budget
    big = replay.policy.budget(200_000)
    k = _need(_first(replay, lambda r: CLEAR in r.fired), "tool output clear firing")
    r = replay.step(k).result
    clear = r.layer(CLEAR)
    kept_results = sum(1 for d in clear.decisions if d.action is Action.KEPT_RECENT)
    snips = [x for x in range(1, len(replay) + 1) if SNIP in replay.step(x).result.fired]
    s = _need(snips[-1] if snips else None, "old history snip firing")
    snip = replay.step(s).result.layer(SNIP)
    kept_ids = {d.message_id for d in snip.decisions if d.action is Action.KEPT_RECENT}
    overhead = replay.step(1).weights.get("overhead", 0)
    return [
        _stop(
            replay,
            1,
            "A small window scales the kept counts down",
            f"{_sentence(_budget_line(replay))}. One maximum-size tool exchange costs 4,000 tokens (16,000 "
            f"characters), so the target affords max(2, {b.target:,} // 4,000) = {b.affordable_groups}: snip and "
            f"auto compact keep the last {b.groups_kept} groups and tool output clear keeps {b.results_kept} "
            f"results (a 200,000 window keeps {big.groups_kept} and {big.results_kept}). The fixed overhead of the "
            f"system prompt and tool schemas alone, {overhead:,} tokens, is over this trigger: every layer will "
            "work at every request.",
        ),
        _stop(
            replay,
            k,
            f"Tool output clear keeps {b.results_kept} results",
            f"{_sentence(clear.reason)}: {clear.tokens_before:,} -> {clear.tokens_after:,}. Only the {kept_results} most "
            "recent results of re-runnable tools stay verbatim.",
            CLEAR,
        ),
        _stop(
            replay,
            s,
            f"Snip keeps the last {b.groups_kept} groups",
            f"{_sentence(snip.reason)}. The last {b.groups_kept} groups ({plural(len(kept_ids), 'message')}) are never "
            "removed; everything removable before them is. With a window this small the agent keeps only its "
            "latest location and evidence.",
            SNIP,
        ),
    ]


def _stops_storm(replay: Replay, compare: Replay | None) -> list[Stop]:
    assert compare is not None
    hot, calm = persisted_run(replay), persisted_run(compare)
    if not hot.compactions:
        raise ReplayError("the scenario never compacts: regenerate it")
    first = hot.compactions[0]
    h1, c1 = hot.step(first), calm.step(first)
    second = hot.compactions[1] if len(hot.compactions) > 1 else first
    h2, c2 = hot.step(second), calm.step(second)
    hot_storms, calm_storms = hot.storms(), calm.storms()
    last = len(replay)
    return [
        _stop(
            replay,
            first,
            "The first compaction, two targets",
            f"This replay keeps what it compacted, as a harness that rewrites its history does. At request "
            f"{first} the view reaches {h1.input_tokens:,} tokens, over the trigger ({hot.trigger:,}). With the "
            f"target at the trigger ({hot.target:,}, policy {hot.policy}) snip removes just enough: "
            f"{h1.sent_tokens:,}. With the default target, 75% of the trigger ({calm.target:,}, {calm.policy}), "
            f"it removes more: {c1.sent_tokens:,}.",
            SNIP,
        ),
        _stop(
            replay,
            second,
            "It triggers again",
            f"{plural(second - first, 'request')} later the view has grown back to {h2.input_tokens:,}, over the "
            f"trigger again, so it compacts again ({h2.input_tokens:,} -> {h2.sent_tokens:,}); from here on it "
            f"compacts at requests {', '.join(map(str, hot.compactions[1:]))}. With the 75% target the same "
            f"request starts from {c2.input_tokens:,}, well under the trigger: "
            f"{'it compacts too' if c2.compacted else 'nothing fires'}. Each compaction rewrites the prompt "
            "prefix (the provider's cache misses) and, with a summarizer, costs a model call.",
            SNIP,
        ),
        _stop(
            replay,
            last,
            "A storm against a calm",
            f"Target at the trigger: {plural(len(hot.compactions), 'compaction')} in {last} requests "
            f"({_storm_text(hot_storms)}). Target at 75%: {plural(len(calm.compactions), 'compaction')} "
            f"(requests {', '.join(map(str, calm.compactions))}; {_storm_text(calm_storms)}). The gap between "
            "trigger and target is what lets the session run for a while before the next compaction.",
        ),
    ]


def _storm_text(found: list[list[int]]) -> str:
    if not found:
        return f"no storm: no two compactions within {STORM_SPAN} requests"
    longest = max(found, key=len)
    return f"{plural(len(found), 'storm')}, the longest {len(longest)} compactions in requests {longest[0]}-{longest[-1]}"


def _stops_eager(replay: Replay, compare: Replay | None) -> list[Stop]:
    assert compare is not None
    base, eager = cache_cost(replay), cache_cost(compare)
    if not eager.rewrite_requests:
        raise ReplayError("the eager clear never rewrites the prefix in this scenario: regenerate it")
    first = eager.rewrite_requests[0]
    row = eager.requests[first - 1]
    n = len(replay)
    e_last = compare.step(n).result
    b_last = replay.step(n).result
    e_sent = sum(r.sent_tokens for r in (compare.step(k).result for k in range(1, n + 1)))
    b_sent = sum(r.sent_tokens for r in (replay.step(k).result for k in range(1, n + 1)))
    return [
        _stop(
            compare,
            first,
            "Eager clear rewrites the prefix",
            f"The session is far under the trigger ({replay.budget.trigger:,}): no reactive layer fires and "
            f"{base.policy} only appends, so every request reads the whole previous prompt from the provider's "
            f"cache. With the eager clear in front ({eager.policy}), request {first} brings one more re-runnable "
            f"result than the {compare.policy.eager_keep} it keeps, so an old result is replaced by a stub: the "
            f"prompt now differs from the previous one after {plural(row.common_prefix_messages, 'message')} "
            f"({row.prefix_tokens:,} tokens), and the {row.rebilled_tokens:,} cached tokens after that point are "
            "billed again.",
            EAGER,
        ),
        _stop(
            compare,
            n,
            "The cache cost over the session",
            f"{eager.policy}: {plural(eager.rewrites, 'prefix rewrite')}, {eager.rebilled_tokens:,} tokens "
            f"billed again; {base.policy}: {plural(base.rewrites, 'rewrite')}, {base.rebilled_tokens:,}. The eager "
            f"clear trims the prompt ({e_last.sent_tokens:,} against {b_last.sent_tokens:,} tokens at the last "
            f"request; {b_sent - e_sent:,} fewer tokens sent over the session), but cached tokens are cheap "
            f"(a tenth of the price on Anthropic's API) and re-billed ones dear (written to the cache again, at "
            f"1.25x): priced that way the session's input costs {eager.billed():,.0f} base-price tokens with the "
            f"eager clear and {base.billed():,.0f} without. {_rereads_text(compare)} That is why OpenCollab took "
            "the eager clear out of its default pipeline.",
            EAGER,
        ),
    ]


def _rereads_text(replay: Replay) -> str:
    from inspector.findings import find_all

    found = [f for f in find_all(replay, ["reread"]) if f.layer == EAGER]
    if not found:
        return "No file was read again after being cleared here."
    return (
        f"And the model read {plural(len(found), 'file')} again after the eager clear had cleared its "
        f"earlier read (request {', '.join(str(f.request) for f in found)})."
    )


_STOPS: dict[str, Callable[[Replay, Replay | None], list[Stop]]] = {
    "budget-alone": _stops_budget_alone,
    "clear-suffices": _stops_clear_suffices,
    "snip-needed": _stops_snip_needed,
    "compact-last-resort": _stops_compact,
    "overflow-stop": _stops_overflow,
    "small-window": _stops_small_window,
    "compaction-storm": _stops_storm,
    "eager-clear-cache": _stops_eager,
}


def stops(name: str, replay: Replay | None = None) -> list[Stop]:
    """The tour stops of scenario `name`, computed from its replay (opened with its registry settings)."""
    scenario_info(name)
    main = replay if replay is not None else open_scenario(name)
    found = _STOPS[name](main, _compare(name, main))
    return sorted(found, key=lambda s: s.request)


def tour(name: str) -> Tour:
    """Scenario `name` with its registry entry and its stops."""
    info = scenario_info(name)
    replay = open_scenario(name)
    return Tour(
        name=info.name,
        title=info.title,
        description=info.description,
        file=info.file,
        window=info.window,
        policy=replay.policy.name,
        compare_policy=load_policy(info.compare_policy).name if info.compare_policy else None,
        requests=len(replay),
        stops=stops(name, replay),
    )
