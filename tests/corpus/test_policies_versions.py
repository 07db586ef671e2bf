"""Each harness as it was: the presets' rules by version (inspector.harness_rules), and every
recorded auto compaction of the corpus predicted at the recorded request by the default policy."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from inspector.cli import main
from inspector.formats import load
from inspector.harness_rules import (
    HARNESS_NAMES,
    RULES,
    parse_version,
    recorded_version,
    resolve,
    rule_for,
    rules_of,
)
from inspector.model import Message, Role, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.model.windows import MODELS, model_spec, model_window
from inspector.replay import Replay
from inspector.replay.fidelity import fidelity
from inspector.shaping import CLAUDE_CODE, CODEX, OPENCODE, Microcompact, load_policy
from inspector.tokens.harness import ESTIMATORS, estimator_for, harness_estimates
from tests.conftest import CORPUS, corpus_file

FACTS_PATH = CORPUS / "FACTS.json"
SPOTTER = "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
THOMAS = "claude-code/thomasjmcgovern-fb36f7a7.jsonl"
LROY = "claude-code-json-array/lroystack-24133cc4-chat.json"


def facts(relative: str) -> dict[str, object]:
    corpus_file(relative)
    data: dict[str, dict[str, object]] = json.loads(FACTS_PATH.read_text())
    return data[relative]


def as_jsonl(relative: str, tmp_path: Path) -> Path:
    """The JSON-array transcript as JSON lines, in tmp_path (what a Claude Code session file is)."""
    records = json.loads(corpus_file(relative).read_text())
    out = tmp_path / "lroystack-24133cc4.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


@dataclass(frozen=True)
class Expected:
    """One recorded auto compaction, and what the default policy must say of it."""

    after: int
    before: int
    """The harness estimate at the check before (under the line)."""
    estimate: int
    """The harness estimate when it compacted (at or over the line; the recorded preTokens beside)."""
    pre_tokens: int


EXPECTED: dict[str, tuple[str, str, int, list[Expected]]] = {
    # file: (version, estimator, line, compactions)
    SPOTTER: ("2.1.39", "claude_code", 167_000, [Expected(126, 166_742, 167_117, 167_117)]),
    THOMAS: ("2.0.22", "claude_code_usage", 155_000, [Expected(77, 154_834, 157_834, 157_932)]),
    LROY: (
        "1.0.113",
        "claude_code_usage",
        155_000,
        [Expected(46, 154_874, 155_409, 155_431), Expected(161, 154_541, 155_241, 155_241)],
    ),
}


def check_predicted(relative: str, path: Path) -> None:
    version, estimator, line, expected = EXPECTED[relative]
    fact = facts(relative)
    tr = load(path)
    assert tr.format == "claude-code"
    assert len(tr.requests) == fact["requests"]
    assert recorded_version(tr) == version == fact["version"]
    replay = Replay.open(tr)  # the default policy, no window given
    assert replay.policy.name == "claude-code" and replay.window == 200_000
    assert replay.budget.trigger == line
    assert replay.budget.rule is not None and replay.budget.rule.startswith(
        f"Claude Code {version} · auto compact at {line:,} (window 200,000 − "
    )
    f = fidelity(replay)
    assert (f.estimator, f.trigger, f.rule) == (estimator, line, replay.budget.rule)
    auto = [e for e in f.events if e.kind == "compaction" and e.trigger == "auto"]
    recorded = [c for c in fact["compactions"] if c["trigger"] == "auto"]  # type: ignore[attr-defined]
    assert [e.recorded_after_request for e in auto] == [c["after_request"] for c in recorded]
    assert [e.pre_tokens for e in auto] == [c["pre_tokens"] for c in recorded]
    got = [
        Expected(e.recorded_after_request or 0, e.previous_harness_estimate or 0, e.harness_estimate or 0, e.pre_tokens or 0)
        for e in auto
    ]
    assert got == expected
    for e, want in zip(auto, expected, strict=True):
        assert e.match and e.counted and e.simulated_after_request == want.after
        assert e.threshold == line
        assert want.before < line <= want.estimate  # the line on both sides
    assert (f.matches, f.misses) == (len(expected), 0)


@pytest.mark.parametrize("relative", [SPOTTER, THOMAS])
def test_every_recorded_auto_compaction_is_predicted_at_the_recorded_request(relative: str) -> None:
    check_predicted(relative, corpus_file(relative))


def test_the_1_0_113_compactions_are_predicted_at_the_recorded_requests(tmp_path: Path) -> None:
    """The JSON-array session, as the JSON lines it was copied from."""
    check_predicted(LROY, as_jsonl(LROY, tmp_path))


def test_the_json_array_file_itself_is_predicted() -> None:
    check_predicted(LROY, corpus_file(LROY))


def test_the_old_rule_would_have_missed_1_0_113_and_2_0_22(tmp_path: Path) -> None:
    """What the table changes: 2.1's 167,000 predicts neither; 0.92 x (200,000 - 32,000) compacts
    1.0.113 one request early (request 45 left 154,599 + its output, over 154,560)."""
    newest = rule_for("claude-code", None)[0]
    for tr in (load(corpus_file(THOMAS)), load(as_jsonl(LROY, tmp_path))):
        f = fidelity(Replay.open(tr, CLAUDE_CODE).with_settings(replace(CLAUDE_CODE, rules=None)))
        assert f.matches == 0 and f.trigger == 167_000 and newest.range == "2.1.92–2.1.240"
    era_a = replace(
        CLAUDE_CODE, rules=None, output_reserve=32_000, safety_buffer=13_440, trigger_estimator="claude_code_usage"
    )
    f = fidelity(load(as_jsonl(LROY, tmp_path)), era_a)
    assert f.trigger == 154_560
    first = next(e for e in f.events if e.recorded_after_request == 46)
    assert first.simulated_after_request == 45 and not first.match


def test_a_manual_compaction_is_shown_as_manual_and_not_counted() -> None:
    tr = load(corpus_file("claude-code/fasthooks-manual-compact.jsonl"))
    assert recorded_version(tr) == "2.0.76"
    f = fidelity(tr)
    (ev,) = [e for e in f.events if e.kind == "compaction"]
    assert ev.trigger == "manual" and not ev.counted and "a manual compaction, not counted" in ev.note
    assert (f.matches, f.misses) == (0, 0)
    assert f.trigger == 155_000  # 2.0.76, Haiku 4.5 (32,000 of output, assumed: notes §5 q4)


# -- a version no rule covers ----------------------------------------------------------------------


def session(path: Path, version: str | None, model: str = "claude-opus-4-6", context: int = 40_000) -> Path:
    """A two-line Claude Code session written by `version` (None: no version recorded)."""
    extra = {"version": version} if version is not None else {}
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", **extra,
         "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", **extra,
         "message": {"id": "m1", "role": "assistant", "model": model, "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 5, "cache_read_input_tokens": context - 5, "output_tokens": 3}}},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def report_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["report", *args, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_a_version_newer_than_every_rule_gets_the_newest_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = session(tmp_path / "new.jsonl", "9.1.0")
    budget = report_json(capsys, str(path))["budget"]
    assert isinstance(budget, dict)
    assert budget["trigger"] == 167_000 and budget["blocking"] == 177_000
    assert budget["rule"] == (
        "Claude Code 9.1.0 · auto compact at 167,000 (window 200,000 − min(output 64,000, 20,000) − "
        "buffer 13,000) · newer than every rule: the newest (2.1.92–2.1.240)"
    )
    assert main(["report", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "rule Claude Code 9.1.0 · auto compact at 167,000" in text
    assert "newer than every rule: the newest (2.1.92–2.1.240)" in text


def test_a_session_that_records_no_version_gets_the_newest_rule_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = session(tmp_path / "none.jsonl", None, model="claude-sonnet-4-5")
    budget = report_json(capsys, str(path))["budget"]
    assert isinstance(budget, dict)
    assert budget["rule"] == (
        "Claude Code · auto compact at 167,000 (window 200,000 − min(output 32,000, 20,000) − buffer "
        "13,000) · version not recorded: the newest rule (2.1.92–2.1.240)"
    )


async def test_the_app_header_names_the_rule(tmp_path: Path) -> None:
    from inspector.tui import InspectorApp

    for version, words in (
        ("2.0.22", "Claude Code 2.0.22 · auto compact at 155,000 (window 200,000 − output 32,000 − buffer 13,000)"),
        ("9.1.0", "newer than every rule: the newest (2.1.92–2.1.240)"),
    ):
        tr = load(session(tmp_path / f"s-{version}.jsonl", version, model="claude-sonnet-4-5"))
        app = InspectorApp(tr)
        async with app.run_test(size=(400, 40)) as pilot:
            for _ in range(300):
                await pilot.pause(0.02)
                if "auto compact" in str(app.main.gauge.border_title):
                    break
            assert words in str(app.main.gauge.border_title)


# -- the table -------------------------------------------------------------------------------------


def test_each_harness_has_ordered_ranges_that_do_not_overlap() -> None:
    for harness in HARNESS_NAMES:
        rules = rules_of(harness)
        assert rules, harness
        for a, b in itertools.pairwise(rules):
            last_a, first_b = parse_version(a.last.replace(".x", ".999999")), parse_version(b.first)
            assert last_a is not None and first_b is not None and last_a < first_b, (a.range, b.range)
        for r in rules:
            assert r.estimator in ESTIMATORS and ESTIMATORS[r.estimator].harness == HARNESS_NAMES[harness]
            assert r.evidence and r.confidence and r.trigger
    assert len(RULES) == sum(len(rules_of(h)) for h in HARNESS_NAMES)


@pytest.mark.parametrize(
    ("version", "model", "trigger", "blocking", "range_"),
    [
        ("0.2.93", "claude-sonnet-4-20250514", 154_560, None, "0.2.47–1.0.50"),
        ("1.0.57", "claude-sonnet-4-20250514", 154_560, None, "1.0.51–1.0.112"),
        ("1.0.70", "claude-3-5-sonnet-20241022", 176_463, None, "1.0.51–1.0.112"),  # 0.92 x (200,000 - 8,192)
        ("1.0.70", "claude-haiku-4-5", 176_463, None, "1.0.51–1.0.112"),  # the bundle's `haiku` rule
        ("1.0.113", "claude-sonnet-4-20250514", 155_000, 197_000, "1.0.113–2.0.x"),
        ("2.0.22", "claude-sonnet-4-5-20250929", 155_000, 197_000, "1.0.113–2.0.x"),
        ("2.1.19", "claude-opus-4-5", 155_000, 165_000, "2.1.7–2.1.20"),
        ("2.1.21", "claude-opus-4-5", 167_000, 177_000, "2.1.21–2.1.91"),
        ("2.1.39", "claude-3-5-sonnet", 178_808, 188_808, "2.1.21–2.1.91"),  # under 20,000: the full output
        ("2.1.88", "claude-opus-4-6", 167_000, 177_000, "2.1.21–2.1.91"),
    ],
)
def test_claude_code_lines_by_version(
    version: str, model: str, trigger: int, blocking: int | None, range_: str
) -> None:
    r = resolve("claude-code", version, 200_000, model)
    assert (r.trigger, r.blocking, r.rule.range, r.chosen) == (trigger, blocking, range_, "version")
    b = CLAUDE_CODE.budget(200_000, version=version, model=model)
    assert (b.trigger, b.blocking) == (trigger, blocking)
    assert b.trigger + b.safety_buffer + b.output_reserve == 200_000


def test_warning_lines_and_microcompact_follow_the_version() -> None:
    assert CLAUDE_CODE.budget(200_000, version="1.0.40").warning == 92_736  # 0.6 x 154,560
    assert CLAUDE_CODE.budget(200_000, version="1.0.57").warning == 123_648  # 0.8 x 154,560
    b = CLAUDE_CODE.budget(200_000, version="2.0.22", model="claude-sonnet-4-5")
    assert (b.warning, b.clear_mode) == (135_000, "none")  # no clearing in the corpus past that line
    b = CLAUDE_CODE.budget(200_000, version="2.1.88", model="claude-opus-4-6")
    assert (b.warning, b.clear_mode, b.results_kept) == (147_000, "time", 5)
    assert CLAUDE_CODE.budget(200_000, version="1.0.17").clear_mode == "none"


def tool_chat(results: int, chars: int, start: int = 0) -> list[Message]:
    out: list[Message] = [Message(id=f"u{start}", role=Role.USER, blocks=(TextBlock(text="go"),))]
    for i in range(start, start + results):
        out.append(Message(id=f"a{i}", role=Role.ASSISTANT, blocks=(ToolCallBlock(id=f"c{i}", name="Read", arguments={"file_path": f"/f{i}"}),)))
        out.append(Message(id=f"r{i}", role=Role.USER, blocks=(ToolResultBlock(call_id=f"c{i}", content="x" * chars),)))
    return out


class Chars4:
    def text(self, text: str) -> int:
        return len(text) // 4

    def message(self, message: Message) -> int:
        return sum(
            len(b.content) // 4 if isinstance(b, ToolResultBlock) else 10 for b in message.blocks
        )


def test_no_microcompact_clears_where_the_corpus_shows_none() -> None:
    """1.0.113, 2.0.22, 2.1.39: the contexts pass the warning line with no drop in a segment, and
    the replay under the default policy clears nothing before the compaction either."""
    for path, version in ((corpus_file(THOMAS), "2.0.22"), (corpus_file(SPOTTER), "2.1.39")):
        tr = load(path)
        replay = Replay.open(tr)
        assert recorded_version(tr) == version
        ctx = [r.usage.context for r in tr.requests if r.usage is not None]
        assert max(ctx) > (replay.budget.warning or 0) + 10_000
        last = next(e.after_request for e in tr.events if e.trigger == "auto")
        for k in range(last - 20, last + 1):
            mc = next(x for x in replay.step(k).result.layers if x.name == "microcompact")
            assert not mc.fired, (version, k, mc.reason)


def test_the_legacy_microcompact_mode_clears_past_the_warning_line_keeping_three() -> None:
    """The decompiled legacy microcompact, as a mode the layer knows (no rule of the table uses it)."""
    layer = Microcompact()
    base = CLAUDE_CODE.budget(200_000, version="2.0.22", model="claude-sonnet-4-5")
    budget = replace(base, clear_mode="legacy", results_kept=3, clear_min_saving=20_000)
    under = tool_chat(10, 40_000)  # 10 x 10,000 tokens: under the 135,000 warning line
    result = layer.apply(under, budget, Chars4())
    assert not result.fired and "under the warning line 135,000" in result.reason
    over = tool_chat(14, 40_000)  # 140,000 + the calls
    result = layer.apply(over, budget, Chars4())
    assert result.fired and result.cleared == 11
    assert "at or over the warning line 135,000" in result.reason and "kept the 3 most recent" in result.reason
    small = tool_chat(2, 4_000) + tool_chat(3, 190_000, start=2)  # over the line; the old ones are small
    result = layer.apply(small, budget, Chars4())
    assert not result.fired and "would free 1,984 tokens, under 20,000" in result.reason
    none = CLAUDE_CODE.budget(200_000, version="1.0.17")
    assert not layer.apply(over, none, Chars4()).fired


def test_codex_and_opencode_lines_by_version() -> None:
    assert resolve("codex", "0.158.0", 272_000, "gpt-5").trigger == 244_800
    assert resolve("codex", "0.77.0", 272_000, "gpt-5-codex").trigger == 244_800
    assert resolve("codex", "0.40.1", 272_000, "gpt-5-codex").trigger == 220_000
    assert resolve("codex", "0.45.0", 272_000, "gpt-5-codex").trigger == 350_000
    off = resolve("codex", "0.45.0", 272_000, "gpt-5")
    assert not off.auto and off.text.startswith("Codex 0.45.0 · no auto compaction (")
    assert not CODEX.budget(272_000, version="0.30.0", model="gpt-5").auto_compact
    assert resolve("codex", "0.200.0", 272_000, "gpt-5").chosen == "newer"
    assert resolve("opencode", "1.18.33", 200_000, "claude-sonnet-4-5").trigger == 148_000
    assert resolve("opencode", "1.5.0", 200_000, "claude-sonnet-4-5").trigger == 168_000
    assert resolve("opencode", "0.4.0", 200_000, "claude-sonnet-4-5").trigger == 151_200
    assert resolve("opencode", "1.18.33", 200_000, "claude-3-5-sonnet").trigger == 200_000 - 8_192 * 2


def test_the_corpus_codex_and_opencode_versions_are_read() -> None:
    assert recorded_version(load(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl"))) == "0.158.0"
    assert recorded_version(load(corpus_file("codex/agent-history-real-session-01.jsonl"))) == "0.135.0"
    tr = load(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    b = Replay.open(tr).budget
    assert b.rule == "Codex 0.158.0 · auto compact at 244,800 (0.9 × window 272,000) · rule 0.100.0–0.158.x"


def test_another_harness_transcript_gets_the_newest_claude_code_rule() -> None:
    tr = load(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl"))
    b = Replay.open(tr, "claude-code").budget
    assert b.rule is not None and "version not recorded: the newest rule" in b.rule
    assert estimator_for(tr, CLAUDE_CODE) == "claude_code"


def test_the_estimator_follows_the_version() -> None:
    thomas = load(corpus_file(THOMAS))
    assert estimator_for(thomas, CLAUDE_CODE) == "claude_code_usage"
    assert estimator_for(thomas, "claude_code") == "claude_code"  # a name is taken as given
    est = harness_estimates(thomas, CLAUDE_CODE)
    assert est[77].before_compaction == 157_834 and est[77].estimator == "claude_code_usage"
    assert all(e.appended == 0 for e in est)
    spotter = load(corpus_file(SPOTTER))
    assert estimator_for(spotter, CLAUDE_CODE) == "claude_code"


def test_a_policy_file_with_its_own_reserve_leaves_the_table(tmp_path: Path) -> None:
    own = tmp_path / "own.toml"
    own.write_text('base = "claude-code"\noutput_reserve = 10000\nsafety_buffer = 5000\n')
    p = load_policy(own)
    assert p.rules is None and p.budget(200_000, version="2.0.22").trigger == 185_000
    kept = tmp_path / "kept.toml"
    kept.write_text('base = "claude-code"\nmax_output = 8000\n')
    k = load_policy(kept)
    assert k.rules == "claude-code" and k.budget(200_000, version="2.0.22").trigger == 179_000
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "claude-code"\nrules = "aider"\n')
    with pytest.raises(ValueError, match="unknown rules 'aider'"):
        load_policy(bad)
    assert OPENCODE.rules == "opencode" and CODEX.rules == "codex"


# -- the models table ------------------------------------------------------------------------------


def test_the_models_table_gives_windows_and_outputs() -> None:
    assert model_window("claude-opus-4-6") == 200_000
    assert model_window("claude-opus-4-6[1m]") == 1_000_000
    assert model_window("claude-sonnet-4-5", observed_max=250_000) == 1_000_000
    assert model_window("claude-opus-4-1", observed_max=250_000) == 250_000  # no 1M beta
    assert model_window("gpt-5") == 400_000 and model_window("llama-3") is None
    spec = model_spec("anthropic/claude-3-5-haiku-20241022")
    assert spec is not None and (spec.max_output, spec.claude_code_output) == (8_192, 8_192)
    assert all(m.source for m in MODELS)


def test_model_flag_reads_the_models_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"content": "hi"}})
        + "\n"
    )
    budget = report_json(capsys, str(path), "--model", "claude-haiku-4-5")["budget"]
    assert isinstance(budget, dict)
    assert (budget["window"], budget["window_source"], budget["trigger"]) == (200_000, "--model", 167_000)


# -- the fidelity figure ---------------------------------------------------------------------------


def test_the_fidelity_script_counts_every_corpus_compaction_per_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import fidelity as script

    paths = [corpus_file(SPOTTER), corpus_file(THOMAS), as_jsonl(LROY, tmp_path),
             corpus_file("claude-code/fasthooks-manual-compact.jsonl")]
    summary = script.measure(paths)
    assert summary.by_version() == {
        "Claude Code 1.0.113": (2, 2),
        "Claude Code 2.0.22": (1, 1),
        "Claude Code 2.1.39": (1, 1),
    }
    manual = [r for r in summary.rows if r.trigger == "manual"]
    assert len(manual) == 1 and not manual[0].counted
    assert main_of(script, [str(p) for p in paths], capsys).endswith(
        "fidelity: 4 of 4 recorded auto compactions predicted at the recorded request"
    )
    out = main_of(script, [str(paths[1])], capsys)
    assert (
        "✓ claude-code/thomasjmcgovern-fb36f7a7.jsonl (Claude Code 2.0.22) auto compaction after request 77: "
        "predicted after 77; estimate 154,834 before, 157,834 at it (preTokens 157,932), line 155,000"
    ) in out


def main_of(script: object, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert script.main(argv) == 0  # type: ignore[attr-defined]
    return capsys.readouterr().out.strip()


def test_the_fidelity_script_on_the_corpus_counts_what_facts_lists(capsys: pytest.CaptureFixture[str]) -> None:
    """Over the whole corpus: synthetic fixtures (not in FACTS.json) are shown, not counted; the
    JSON-array session counts as missed until the reader reads it (then as predicted)."""
    from benchmarks import fidelity as script

    corpus_file(SPOTTER)
    summary = script.measure(script.corpus_sessions())
    by = summary.by_version()
    assert by["Claude Code 2.0.22"] == (1, 1) and by["Claude Code 2.1.39"] == (1, 1)
    assert by["Claude Code 1.0.113"][1] == 2
    assert not any(r.counted for r in summary.rows if "synthetic" in r.file or "dag-compact" in r.file)


def test_the_readme_table_lists_every_rule() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith("| ") and " – " not in line]
    for r in RULES:
        row = next((line for line in rows if line.startswith(f"| {HARNESS_NAMES[r.harness]} | {r.range} |")), None)
        assert row is not None, r.range
        x = resolve(r.harness, r.first if r.first != "0.0.0" else "0.0.1", 272_000 if r.harness == "codex" else 200_000,
                    "gpt-5-codex" if r.fixed else ("gpt-5" if r.harness == "codex" else "claude-sonnet-4-5"))
        if x.auto:
            assert f"| {x.trigger:,}" in row, row


def test_an_opencode_rule_that_compares_strictly_is_simulated_so() -> None:
    assert not resolve("opencode", "0.4.0", 200_000).rule.at_or_above
    assert OPENCODE.budget(200_000, version="0.4.0").at_or_above is False
    assert OPENCODE.budget(200_000).at_or_above is True


# -- the reader records the version ----------------------------------------------------------------


def test_each_reader_records_the_version_and_nothing_reads_the_file_again(tmp_path: Path) -> None:
    """`recorded_version` is the reader's `Transcript.harness_version`: with the file gone after the
    load, the version is still the one the file held (the rules no longer re-read the transcript)."""
    from tests.support.opencode_sessions import ORIGINAL, three_session_db

    cases: list[tuple[Path, str | None, str | None]] = [
        (session(tmp_path / "cc.jsonl", "2.0.76"), None, "2.0.76"),
        (session(tmp_path / "none.jsonl", None), None, None),
    ]
    codex = tmp_path / "rollout.jsonl"
    codex.write_bytes(corpus_file("codex/agent-history-real-session-01.jsonl").read_bytes())
    cases.append((codex, None, "0.135.0"))
    db = three_session_db(tmp_path / "oc")
    cases.append((db, ORIGINAL, "1.18.33"))
    for path, sid, version in cases:
        tr = load(path, session=sid)
        assert tr.harness_version == version, path
        for p in sorted(path.parent.glob(path.name + "*")):  # the database's -wal/-shm too
            p.unlink()
        assert not path.exists()
        assert recorded_version(tr) == version, path


def test_a_claude_code_session_records_the_version_most_of_its_lines_carry(tmp_path: Path) -> None:
    """Two lines of 2.1.38, then three of 2.1.39 (an update mid-session) and one of 2.1.37: 2.1.39;
    on a tie, the version seen first."""
    path = session(tmp_path / "s.jsonl", "2.1.38")
    with path.open("a") as f:
        parent = "a1"
        for k, v in enumerate(("2.1.39", "2.1.39", "2.1.37", "2.1.39")):
            rec: dict[str, Any] = {"type": "user", "uuid": f"u{k + 2}", "parentUuid": parent, "sessionId": "s", "version": v,
                   "message": {"role": "user", "content": "more"}}
            parent = str(rec["uuid"])
            f.write(json.dumps(rec) + "\n")
    assert load(path).harness_version == "2.1.39"
    tie = session(tmp_path / "tie.jsonl", "2.1.38")
    with tie.open("a") as f:
        for k in range(2):
            rec = {"type": "system", "uuid": f"s{k}", "parentUuid": "a1", "sessionId": "s", "version": "2.1.40"}
            f.write(json.dumps(rec) + "\n")
    assert load(tie).harness_version == "2.1.38"
