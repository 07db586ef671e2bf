"""compare(): two policies' final views of the same request, side by side."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from inspector.formats.detect import load
from inspector.model import Transcript
from inspector.replay import Replay, ReplayError
from inspector.replay.compare import compare
from inspector.shaping import CLAUDE_CODE_TOOLS, CLEARED_CONTENT, DEFAULT_COMPACTABLE_TOOLS, is_compactable
from inspector.shaping.tools import canonical_set
from tests.unit.test_policies_fidelity import Build, usage

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FA812 = "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"


@pytest.fixture(scope="module")
def fa812() -> Transcript:
    path = CORPUS / FA812
    if not path.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS}")
    return load(path)


def compactable_results(t: Transcript, k: int, tools: tuple[str, ...]) -> list[tuple[str, int]]:
    """(message id, content length) of every result of `tools` in request k's ledger, in the
    order the calls were made."""
    order = {c.id: (i, c.name) for i, c in enumerate(c for m in t.ledger(k) for c in m.tool_calls)}
    wanted = canonical_set(tools)
    found = [
        (order[b.call_id][0], m.id, len(b.content))
        for m in t.ledger(k)
        for b in m.tool_results
        if b.call_id in order and is_compactable(order[b.call_id][1], wanted)
    ]
    return [(mid, n) for _, mid, n in sorted(found)]


def clearable(results: list[tuple[str, int]], keep: int = 5) -> list[str]:
    """The messages tool output clear empties: older than the `keep` most recent results, and
    longer than the placeholder."""
    return list(dict.fromkeys(mid for mid, n in results[: len(results) - keep] if n > len(CLEARED_CONTENT)))


def test_claude_code_against_opencollab_at_request_126(fa812: Transcript) -> None:
    a = Replay.open(fa812, "claude-code", 150_000)
    b = a.with_settings("opencollab")
    c = compare(a, b, 126)
    assert (c.step, c.ledger_messages) == (126, len(fa812.ledger(126)) + 1)  # + the overhead pseudo-message
    # both sides start from the same calibrated ledger: the provider's report at 126
    assert c.a.input_tokens == c.b.input_tokens == 166_874
    assert (c.a.policy, c.a.trigger, c.a.blocking) == ("claude-code", 117_000, 127_000)
    assert (c.b.policy, c.b.trigger, c.b.blocking) == ("opencollab", 117_000, None)
    # Claude Code: microcompact clears every compactable result but the 5 most recent; that is
    # enough, so it does not compact
    cc = compactable_results(fa812, 126, CLAUDE_CODE_TOOLS)
    assert sorted(c.a.cleared) == sorted(clearable(cc))
    assert c.a.fired == ["microcompact"]
    assert c.a.counts == {"removed": 0, "summarized": 0, "cleared": 132, "truncated": 0, "added": 0}
    assert c.a.sent_tokens < c.a.trigger < c.a.input_tokens
    # OpenCollab: its 16,000-char budget truncates 4 results, then tool output clear clears its own
    # (narrower) set; edit and write results are never touched
    oc = compactable_results(fa812, 126, DEFAULT_COMPACTABLE_TOOLS)
    assert c.b.fired == ["per_tool_budget", "tool_output_clear"]
    assert sorted(c.b.cleared) == sorted(clearable(oc)) and len(c.b.cleared) == 74
    assert c.b.counts["truncated"] == 1  # the other 3 truncated results were then cleared
    # nothing left either view; what only one side kept intact
    assert c.only_in_a == [] and c.only_in_b == []
    assert set(c.kept_only_by_b) <= set(c.a.cleared)
    edits = clearable(compactable_results(fa812, 126, ("Edit", "Write")), keep=0)
    assert set(edits) & set(c.a.cleared) <= set(c.kept_only_by_b) and set(edits) & set(c.a.cleared)
    assert set(c.kept_only_by_a) <= set(c.b.cleared) | set(c.b.truncated)
    assert c.sent_difference == c.a.sent_tokens - c.b.sent_tokens
    dumped = json.loads(json.dumps(msgspec.to_builtins(c)))
    assert dumped["a"]["counts"]["cleared"] == 132 and dumped["b"]["reasons"]["old_history_snip"].endswith(
        "under trigger 117,000"
    )


def test_summarizing_policies_show_what_they_folded(fa812: Transcript) -> None:
    a = Replay.open(fa812, "codex", 150_000)
    b = a.with_settings("opencode")
    c = compare(a, b, 126)
    for side in (c.a, c.b):
        assert len(side.added) == 1 and side.counts["added"] == 1
        assert side.sent_tokens < side.input_tokens
    assert c.a.fired == ["middle_truncate", "codex_compact"] and c.b.fired == ["opencode_compact"]
    # Codex keeps only user messages and its summary; opencode keeps a tail of recent turns
    for side in (c.a, c.b):
        assert side.messages_sent == c.ledger_messages - side.counts["summarized"] + side.counts["added"]
    assert set(c.only_in_b) <= set(c.a.summarized)
    assert set(c.only_in_a) <= set(c.b.summarized)
    assert c.only_in_b  # opencode's tail holds tool exchanges Codex folded


_WORDS = ("def", "return", "value", "items", "self", "config", "for", "in", "if", "None", "result", "path")


def source(chars: int, seed: int) -> str:
    """A Read result of `chars` characters: numbered lines of code-like text. Real text matters:
    calibration also sizes a result by its BPE pieces, and a run of one letter is a single piece."""
    lines: list[str] = []
    i = 0
    while sum(len(line) + 1 for line in lines) < chars:
        i += 1
        w = _WORDS
        lines.append(f"{i:>6}\u2192    {w[(i * seed) % 12]} = {w[(i * 7 + seed) % 12]}({w[(i * 5) % 12]}, {i})")
    return "\n".join(lines)[:chars]


def small() -> Transcript:
    b = Build()
    b.user("task")
    b.reply(usage(9_000), call=("Read", source(30_000, 1)))
    for k in range(6):
        b.reply(usage(11_000 + 600 * k), call=("Read", source(2_000, k + 2)))
    b.reply(usage(15_000))
    return b.transcript()


def test_compare_on_a_small_session() -> None:
    t = small()
    assert [m.id for m in t.ledger(8)][:5] == ["u1", "a2", "r2", "a3", "r3"]
    a = Replay.open(t, "no_history_compaction", 200_000)
    b = a.with_settings("opencollab", 46_000)  # trigger 13,000, target 9,750, 2 results kept
    c = compare(a, b, 8)
    assert c.a.fired == ["per_tool_budget"] and c.a.truncated == ["r2"]
    assert c.a.counts == {"removed": 0, "summarized": 0, "cleared": 0, "truncated": 1, "added": 0}
    assert (c.b.trigger, c.b.target, b.budget.results_kept) == (13_000, 9_750, 2)
    assert c.b.fired == ["per_tool_budget", "tool_output_clear"]
    # clearing the 5 oldest results (all but the 2 most recent) is enough: a cleared placeholder
    # keeps only the framing this session's reports give each Read result (about 310 tokens: a
    # 2,000-character result costs ~490, the 30,000-character one 1,900), so the view drops
    # under the trigger and snip has nothing to do
    assert c.b.reasons["tool_output_clear"] == (
        "estimate 14,853 > trigger 13,000; cleared 5 older compactable results, kept the 2 most recent"
    )
    assert c.b.reasons["old_history_snip"] == "12,724 under trigger 13,000"
    # r2 was truncated by the budget and then cleared: the last change wins
    assert c.b.cleared == ["r2", "r3", "r4", "r5", "r6"] and c.b.removed == c.b.truncated == []
    assert c.b.counts == {"removed": 0, "summarized": 0, "cleared": 5, "truncated": 0, "added": 0}
    # both sides still send every message; a keeps r3-r6 as recorded (r2 it truncated)
    assert c.only_in_a == c.only_in_b == []
    assert c.kept_only_by_a == ["r3", "r4", "r5", "r6"] and c.kept_only_by_b == []
    assert c.a.input_tokens == c.b.input_tokens == 15_000
    assert (c.a.sent_tokens, c.b.sent_tokens) == (14_853, 12_724)
    assert c.sent_difference == c.a.sent_tokens - c.b.sent_tokens == 2_129
    # a slightly smaller window (trigger 12,000): clearing is not enough, snip then removes those
    # exchanges, keeping each assistant message's text; where a result was cleared and then
    # removed, removed wins
    d = compare(a, a.with_settings("opencollab", 45_000), 8)
    assert (d.b.trigger, d.b.target) == (12_000, 9_000)
    assert d.b.fired == ["per_tool_budget", "tool_output_clear", "old_history_snip"]
    assert d.b.removed == ["r2", "r3", "r4", "r5", "r6"] and d.b.cleared == []
    assert d.b.truncated == ["a2", "a3", "a4", "a5", "a6"]
    assert d.b.counts == {"removed": 5, "summarized": 0, "cleared": 0, "truncated": 5, "added": 0}
    assert d.only_in_a == ["r2", "r3", "r4", "r5", "r6"] and d.only_in_b == []
    assert d.kept_only_by_a == ["a2", "a3", "r3", "a4", "r4", "a5", "r5", "a6", "r6"]
    assert d.kept_only_by_b == []
    assert d.b.reasons["old_history_snip"] == (
        "estimate 12,724 > trigger 12,000; removed 5 tool exchanges, estimate 10,730 still over target 9,000"
    )


def test_compare_errors() -> None:
    t = small()
    a = Replay.open(t, "opencollab", 200_000)
    with pytest.raises(ReplayError, match="does not exist"):
        compare(a, a, 9)
    other = Replay.open(Build("codex").transcript(), "codex", 200_000)
    with pytest.raises(ReplayError, match="same transcript"):
        compare(a, other, 1)
