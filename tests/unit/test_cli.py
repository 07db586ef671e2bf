"""The command line: the JSON contract, the text report, explain, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from inspector.cli import main
from tests.conftest import CORPUS, FA812, ROOT, corpus_file


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_report_json_contract_on_fa812bfe(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(capsys, "report", str(path), "--json")
    assert {"format", "model", "requests", "recorded_events", "subagents", "load_issues", "budget"} <= set(r)
    assert r["format"] == "claude-code" and r["model"] == "claude-opus-4-6"
    assert len(r["requests"]) == 157
    assert [q["index"] for q in r["requests"][:3]] == [1, 2, 3]
    assert r["requests"][0]["context_tokens"] == 26061 and r["requests"][-1]["context_tokens"] == 76350
    comps = [e for e in r["recorded_events"] if e["kind"] == "compaction"]
    assert [(e["trigger"], e["pre_tokens"], e["after_request"]) for e in comps] == [("auto", 167117, 126)]
    assert [s["agent_id"] for s in r["subagents"]] == ["a93ccab"]
    assert r["load_issues"] == []
    assert (
        r["budget"]["window"] == 200000
        and r["budget"]["trigger"] == 167000
        and r["budget"]["target"] == 125250
    )
    assert r["tool_calls"]["Bash"] == 76
    # spend keeps counting across the compaction
    spent = [q["cumulative_tokens"] for q in r["requests"]]
    assert spent == sorted(spent) and spent[126] > spent[125]


@pytest.mark.parametrize(
    ("window", "trigger", "target"),
    [("200000", 167000, 125250), ("35500", 2500, 1875), ("1000000", 967000, 725250)],
)
def test_report_budget_follows_window(
    capsys: pytest.CaptureFixture[str], window: str, trigger: int, target: int
) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    b = _json(capsys, "report", str(path), "--json", "--window", window, "--policy", "opencollab")["budget"]
    assert (b["trigger"], b["target"], b["window_source"]) == (trigger, target, "--window")


def test_report_step_layers(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(
        capsys, "report", str(path), "--json", "--window", "100000", "--step", "120", "--policy", "opencollab"
    )
    layers = r["layers"]
    assert [layer["name"] for layer in layers] == [
        "per_tool_budget",
        "tool_output_clear",
        "old_history_snip",
        "auto_compact",
    ]
    assert all({"name", "fired", "tokens_before", "tokens_after"} <= set(layer) for layer in layers)
    assert (
        layers[1]["fired"]
        and layers[1]["cleared"] > 0
        and layers[1]["tokens_after"] < layers[1]["tokens_before"]
    )
    assert layers[-1]["tokens_after"] <= 67000
    # each layer starts where the one before it ended
    for before, after in pairwise(layers):
        assert after["tokens_before"] == before["tokens_after"]


def test_report_text_shows_the_facts(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code/fasthooks-manual-compact.jsonl")
    assert main(["report", str(path), "--step", "12", "--policy", "opencollab"]) == 0
    out = capsys.readouterr().out
    assert "claude-code" in out and "manual" in out and "21,558" in out
    assert "Pipeline at request 12" in out and "per-tool budget" in out


def test_report_text_shows_fidelity_and_the_harness_estimate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Fidelity: 1 matched, 0 missed (policy claude-code" in out
    (row,) = [line for line in out.splitlines() if line.startswith("│ compaction (auto)")]
    # recorded and simulated after request 126; Claude Code's figure then, its recorded preTokens
    assert [c.strip() for c in row.split("│")[2:5]] == ["126", "126", "167,117"]
    assert "harness estimate" in out
    (two,) = [line for line in out.splitlines() if line.startswith("│       2 │")]
    # request 2: 26,061 reported at request 1 + its output 9 + characters/4 of what came after it
    assert [c.strip() for c in two.split("│")[1:4]] == ["2", "27,592", "27,180"]
    sample = Path(__file__).resolve().parents[2] / "inspector" / "samples" / "opencollab-run"
    assert main(["report", str(sample)]) == 0
    out = capsys.readouterr().out
    assert "Fidelity: 29 matched, 0 missed (policy opencollab" in out
    lines = out.splitlines()
    assert sum(line.startswith("│ per_tool_budget ") for line in lines) == 24
    assert sum(line.startswith("│ tool_output_clear ") for line in lines) == 5


def test_a_long_fidelity_table_keeps_every_miss() -> None:
    from rich.console import Console

    from inspector.report.render import _fidelity_table

    events = [
        {"kind": "layer_fired", "layer": f"L{i}", "match": i % 10 != 3, "counted": True, "note": f"n{i}"}
        for i in range(40)
    ]
    console = Console(width=160, record=True)
    console.print(_fidelity_table({"matches": 36, "misses": 4, "events": events}))
    text = console.export_text()
    shown = {int(line.split()[1][1:]) for line in text.splitlines() if line.startswith("│ L")}
    assert {3, 13, 23, 33} <= shown  # every miss
    assert len(shown) == 4 + 10  # and the first 10 matches
    assert "and 26 more that match" in text


def test_explain_names_layer_and_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(
        capsys, "report", str(path), "--json", "--window", "100000", "--step", "120", "--policy", "opencollab"
    )
    assert r["layers"][1]["cleared"] > 0
    from inspector.formats import load
    from inspector.replay import Replay

    replay = Replay.open(load(path), policy="opencollab", window=100000)
    step = replay.step(120)
    cleared = next(d for d in step.result.decisions if d.action.value == "cleared")
    assert (
        main(
            [
                "explain",
                str(path),
                cleared.message_id,
                "--step",
                "120",
                "--window",
                "100000",
                "--policy",
                "opencollab",
            ]
        )
        == 0
    )
    sentence = capsys.readouterr().out.strip()
    assert sentence.startswith("request 120: cleared by tool output clear")
    assert "trigger 67,000" in sentence and "only 5 kept" in sentence


def test_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err and "Traceback" not in err
    assert main(["report", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err
    path = corpus_file("claude-code/spotter-short.jsonl")
    assert main(["report", str(path), "--step", "99"]) == 2
    assert "request 99 does not exist" in capsys.readouterr().err
    assert main(["report", str(path), "--policy", "no-such-policy"]) == 2
    assert "no-such-policy" in capsys.readouterr().err


def test_a_file_name_that_is_not_utf8_is_written_to_json_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Linux file names are bytes: one that is not UTF-8 reaches Python as lone surrogates, which
    UTF-8 cannot hold; the report's JSON writes them as `\\udcff` escapes, and the path it names
    is the file's own."""
    name = os.fsdecode(b"session-\xff.jsonl")
    path = tmp_path / name
    path.write_bytes((ROOT / "inspector" / "samples" / "short-session.jsonl").read_bytes())
    assert main(["report", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert out.isascii() and "\\udcff" in out
    report = json.loads(out)
    assert os.fsencode(report["path"]) == os.fsencode(str(path)) and report["requests"]


def test_console_script_and_module_entry(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "inspector", "report", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2
    assert p.stderr.strip().startswith("context-inspector: no such file") and "Traceback" not in p.stderr


def test_calibrate_json_shape_and_best_mode(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(capsys, "calibrate", str(path), "--json")
    assert set(r["modes"]) == {"baseline", "baseline_tiktoken", "proportional", "delta"}
    assert r["best"] in ("proportional", "delta")
    best = r["modes"][r["best"]]
    assert best["n"] == 155
    for baseline in ("baseline", "baseline_tiktoken"):
        assert best["p95_pct"] < r["modes"][baseline]["p95_pct"]
        assert best["max_pct"] < r["modes"][baseline]["max_pct"]


def test_calibrate_text_and_no_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code/fasthooks-manual-compact.jsonl")
    assert main(["calibrate", str(path), "--mode", "delta"]) == 0
    out = capsys.readouterr().out
    assert "delta" in out and "Per request (delta)" in out and "18,465" in out
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    assert main(["calibrate", str(chat)]) == 2
    assert "no token usage" in capsys.readouterr().err


def test_sessions_lists_discovered_sessions_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    projects = tmp_path / "claude" / "projects" / "-work-app"
    projects.mkdir(parents=True)
    sample = Path(__file__).resolve().parents[2] / "inspector" / "samples" / "short-session.jsonl"
    older, newer = projects / "older.jsonl", projects / "newer.jsonl"
    older.write_bytes(sample.read_bytes())
    newer.write_bytes(sample.read_bytes())
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_800_000_000, 1_800_000_000))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    rows = _json(capsys, "sessions", "--json")
    assert [Path(r["path"]).name for r in rows] == ["newer.jsonl", "older.jsonl"]
    assert rows[0]["harness"] == "claude-code" and rows[0]["requests"] == 12


def test_findings_exit_codes_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    assert main(["findings", str(path), "--json", "--window", "100000", "--policy", "opencollab"]) == 1
    found = json.loads(capsys.readouterr().out)
    reread = [f for f in found if f["kind"] == "reread"]
    assert [f["request"] for f in reread] == [74]
    assert "tool output clear" in reread[0]["explanation"] and "379 tokens" in reread[0]["explanation"]
    assert any(f["kind"] == "pressure" and f["severity"] == "error" for f in found)
    # at the model's own window nothing is an error
    assert main(["findings", str(path)]) == 0
    out = capsys.readouterr().out
    assert "closest approach to the trigger 167,000: request 126 held 166,874 tokens, 126 to spare" in out
    assert main(["findings", str(path), "--check", "nope"]) == 2


def test_report_defaults_to_the_harness_policy_with_fidelity(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(capsys, "report", str(path), "--json")
    assert r["budget"]["policy"] == "claude-code" and r["budget"]["blocking"] == 177000
    f = r["fidelity"]
    assert (f["matches"], f["misses"]) == (1, 0)
    event = f["events"][0]
    assert (event["recorded_after_request"], event["simulated_after_request"], event["harness_estimate"]) == (
        126,
        126,
        167117,
    )
    assert r["requests"][125]["harness_estimate"] == 166742  # under 167,000: no compaction one request early
    manual = _json(
        capsys, "report", str(corpus_file("claude-code/fasthooks-manual-compact.jsonl")), "--json"
    )["fidelity"]
    assert (manual["matches"], manual["misses"]) == (0, 0)
    assert [(e["trigger"], e["counted"]) for e in manual["events"]] == [("manual", False)]


def test_report_compare_two_policies(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812.relative_to(CORPUS).as_posix())
    r = _json(
        capsys,
        "report",
        str(path),
        "--json",
        "--step",
        "120",
        "--window",
        "100000",
        "--compare",
        "opencollab",
    )
    c = r["compare"]
    assert c["a"]["policy"] == "claude-code" and c["b"]["policy"] == "opencollab"
    assert c["a"]["sent_tokens"] == r["layers"][-1]["tokens_after"]
    assert c["a"]["sent_tokens"] != c["b"]["sent_tokens"]
    assert main(["report", str(path), "--compare", "opencollab"]) == 2
    assert "--compare needs --step" in capsys.readouterr().err


def test_codex_window_is_stated_and_derived(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")
    b = _json(capsys, "report", str(path), "--json")["budget"]
    assert (b["policy"], b["window_stated"], b["window"], b["window_source"]) == (
        "codex",
        258400,
        272000,
        "transcript",
    )
    assert b["trigger"] == 244800  # 90% of the window


def _two_line_session(path: Path, text: str = "hi", model: str | None = None, context: int = 905) -> Path:
    """A Claude Code session of two lines: a user saying `text`, and a response that reported
    `context` (its model `model`; None: it names none)."""
    response: dict[str, object] = {
        "id": "m1",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 5, "cache_read_input_tokens": context - 5, "output_tokens": 3},
    }
    if model is not None:
        response["model"] = model
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"content": text}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": response},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_model_gives_the_window_where_the_transcript_names_no_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _two_line_session(tmp_path / "s.jsonl", context=1_000)
    budget = _json(capsys, "report", str(path), "--json")["budget"]
    assert (budget["window"], budget["window_source"]) == (None, "unknown")
    budget = _json(capsys, "report", str(path), "--json", "--model", "gpt-5")["budget"]
    assert (budget["window"], budget["window_source"], budget["trigger"]) == (400_000, "--model", 367_000)
    budget = _json(capsys, "report", str(path), "--json", "--model", "gpt-5", "--window", "50000")["budget"]
    assert (budget["window"], budget["window_source"]) == (50_000, "--window")
    # a Claude session that held more than 200,000 ran with the 1M window
    big = _two_line_session(tmp_path / "big.jsonl", context=250_000)
    budget = _json(capsys, "report", str(big), "--json", "--model", "claude-sonnet-4-5")["budget"]
    assert budget["window"] == 1_000_000
    assert main(["findings", str(path), "--json", "--model", "claude-opus-4"]) == 0
    capsys.readouterr()
    assert main(["report", str(path), "--model", "llama-3"]) == 2
    err = capsys.readouterr().err
    assert err == "context-inspector: the window of model 'llama-3' is not known: give --window TOKENS\n"
    assert main(["--model", "gpt-5"]) == 2
    assert "--model needs a transcript PATH" in capsys.readouterr().err


def test_a_window_the_transcript_states_wins_over_model(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")
    budget = _json(capsys, "report", str(path), "--json", "--model", "claude-sonnet-4-5")["budget"]
    assert (budget["window"], budget["window_source"]) == (272_000, "transcript")


def test_export_command_writes_redacted_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "ghp_" + "A" * 36
    path = _two_line_session(tmp_path / "s.jsonl", f"use {secret} please", model="claude-x")
    out = tmp_path / "out.md"
    assert main(["export", str(path), "--format", "md", "--redact", "-o", str(out)]) == 0
    text = out.read_text()
    assert secret not in text and "redacted: github token" in text and "please" in text
    assert main(["export", str(path), "--format", "json", "-o", str(path)]) == 2
    assert "refusing" in capsys.readouterr().err
    assert main(["export", str(path), "--format", "html"]) == 0
    assert capsys.readouterr().out.lstrip().lower().startswith("<!doctype html")


def test_export_to_a_dash_writes_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _two_line_session(tmp_path / "s.jsonl", "hello there", model="claude-x")
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(path), "--format", "md", "-o", "-"]) == 0
    assert "hello there" in capsys.readouterr().out
    assert not (tmp_path / "-").exists()


def test_report_cache_cost_of_eager_clear(capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = Path(__file__).resolve().parents[2] / "inspector" / "samples" / "scenarios"
    path = scenarios / "eager-clear-cache.jsonl"
    eager = scenarios / "opencollab-eager.toml"
    r = _json(
        capsys,
        "report",
        str(path),
        "--json",
        "--window",
        "200000",
        "--policy",
        "opencollab",
        "--step",
        "23",
        "--compare",
        str(eager),
        "--cache",
    )
    plain, with_eager = r["cache"]
    assert plain["policy"] == "opencollab" and (plain["rewrites"], plain["rebilled_tokens"]) == (0, 0)
    assert with_eager["rewrites"] == 9 and with_eager["rebilled_tokens"] == 66526
    assert with_eager["cached_tokens"] < plain["cached_tokens"]


def test_every_command_says_what_it_does_and_what_each_argument_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from inspector.cli import COMMANDS, _parser
    from inspector.findings.checks import CHECKS

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS)
    for name, command in sub.choices.items():
        assert command.description and command.description.endswith("."), name
        bare = [a.dest for a in command._actions if not a.help and a.dest != "help"]
        assert bare == [], name
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
        flat = " ".join(capsys.readouterr().out.split())
        assert command.description in flat
    # the check names the help of --check lists are the registry's
    with pytest.raises(SystemExit):
        parser.parse_args(["findings", "--help"])
    flat = " ".join(capsys.readouterr().out.split())
    assert f"run only this check (repeatable): {', '.join(CHECKS)}" in flat
    assert "Symptoms the transcript shows" in flat and "(exit 1 when one is an error)." in flat
