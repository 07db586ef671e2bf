"""Issue 27: one set of numbers across the commands and the app, and what a session cost in money.

Each fix is checked on the corpus file where it was seen (fa812bfe for most, the Codex rollouts for
the request counts); the money against a hand computation from the model's published prices.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from inspector.cli import main
from inspector.formats import load
from tests.conftest import ROOT, corpus_file

FA812 = "claude-code/spotter-fa812bfe/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"
FA812_NAME = "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, its standard output a pipe."""
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def run_in_terminal(*args: str, timeout: float = 60) -> tuple[int, bytes]:
    """The command with a pseudo-terminal as its standard input, output and error: its exit code
    and all it wrote (a screen the app drew would show as escape codes)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector", *args], stdin=slave, stdout=slave, stderr=slave, cwd=ROOT
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, out


# -- the fixes ---------------------------------------------------------------------------------
def test_report_step_compare_prints_the_comparison_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812)
    assert main(["report", str(path), "--step", "100", "--compare", "codex"]) == 0
    out = capsys.readouterr().out
    assert "Compared at request 100 (239 messages in the ledger)" in out
    assert "A · claude-code" in out and "B · codex" in out
    table = out[out.index("Compared at request 100") :]
    sent = next(line for line in table.splitlines() if "tokens sent" in line)
    assert "140,223" in sent and "123,460" in sent  # (calibrated: the codex view truncates)
    fired = next(line for line in table.splitlines() if "layers fired" in line)
    assert "tool output truncation (codex)" in fired and "middle_truncate" not in fired  # the label


def test_explain_reads_lines_of_path_itself_and_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812)
    # line 3 of fa812bfe is a progress record; the compaction call's file has a user message on
    # its line 3, which is not what the user asked about
    assert main(["explain", str(path), ":3"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"context-inspector: line 3 of {FA812_NAME} holds no message (a progress record; the nearest messages are at line 7)\n"
    )
    # a bare number is a line first, as the help promises: line 20 is the hook progress of a tool call
    assert main(["explain", str(path), "20"]) == 0
    where, answer = capsys.readouterr().out.splitlines()
    assert where.startswith(
        f"line 20 of {FA812_NAME}: a progress record of tool call toolu_016BubCytDrE5ACMhyM1JFso (Bash), "
        "made by message 14653688-6729-4d6b-9de7-9c03cf90e4cd (assistant)"
    )
    assert "taken as a line number; 5 message ids also begin with '20'" in where
    # (its last request is 126: the harness's own compaction folded it then, which explain says too)
    assert answer.startswith(
        "request 126: unchanged: no layer fired (estimate 166,874 under trigger 167,000)"
    )
    assert answer.endswith(
        "; then folded by the compaction the harness recorded after request 126 (auto; "
        "167,117 tokens by its count, calibrated 166,874; the ledger of 301 messages "
        "became 1, a summary of 6,014 tokens, at request 127)"
    )
    assert main(["explain", str(path), ":18"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"line 18 of {FA812_NAME}: message 9a6d38f5-c2bf-4335-a41d-eaa267546fe0 (user)"
    )
    # a later line of a response streamed over several lines is part of that response
    assert main(["explain", str(path), ":15"]) == 0
    assert "part of message 14653688-6729-4d6b-9de7-9c03cf90e4cd (assistant), whose first line is 8" in (
        capsys.readouterr().out
    )


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812)
    assert main(["explain", str(path), ":18", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["message_id"] == "9a6d38f5-c2bf-4335-a41d-eaa267546fe0"
    assert (data["role"], data["line"], data["found_by"], data["step"]) == ("user", 18, "line", 126)
    assert data["file"] == str(path)
    assert data["requests_holding"] == [2, 126]
    assert data["answer"].startswith("request 126: unchanged")


def test_a_wrong_policy_is_one_line_and_exit_2_before_any_screen() -> None:
    path = corpus_file(FA812)
    code, out = run_in_terminal("--policy", "bogus", str(path))
    text = out.decode()
    assert code == 2
    assert text.strip() == (
        "context-inspector: unknown policy 'bogus' (known: claude-code, codex, no_history_compaction, "
        "opencode, opencollab)"
    )
    assert "\x1b[" not in text  # no screen was drawn
    code, out = run_in_terminal("--window", "5", "--policy", "claude-code", str(path))
    assert code == 2 and b"window 5 is too small for policy claude-code" in out and b"\x1b[" not in out


def test_the_app_does_not_start_without_a_terminal() -> None:
    path = corpus_file(FA812)
    done = run(str(path), timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "context-inspector: the app needs a terminal and standard output is not one; "
        f"for the same facts as text run: context-inspector report {path}\n"
    )


def test_piped_output_is_never_cut_nor_glued() -> None:
    path = corpus_file(FA812)
    report = run("report", str(path), "--step", "100")
    assert report.returncode == 0
    lines = report.stdout.splitlines()
    assert f"file      {path}" in lines  # the whole path, on one line
    assert any(line.startswith("  large result preview  idle") for line in lines)
    assert "previewidle" not in report.stdout
    calibrate = run("calibrate", str(path))
    row = next(line for line in calibrate.stdout.splitlines() if "baseline_tiktoken" in line)
    assert "last report + tiktoken of what was added" in row  # one row, not one word per line
    head = next(line for line in calibrate.stdout.splitlines() if "median error" in line)
    assert "median error" in head and "requests predicted" in head
    assert "Error of the next-request prediction" in calibrate.stdout


def test_sessions_paths_are_whole_at_any_width(tmp_path: Path) -> None:
    from inspector.live.discovery import SessionInfo
    from inspector.report.render import print_sessions

    long = tmp_path / ("p" * 90) / "rollout-2026-02-28T10-00-00-0199-aaaa-bbbb-cccc.jsonl"
    rows = [
        SessionInfo(
            harness="codex",
            path=long,
            project="/work/a-project-with-a-long-name",
            size_bytes=2_500_000,
            requests=6,
            last_activity=datetime(2026, 2, 28, 10, tzinfo=UTC),
            title="Rename the module across the code base and its tests",
        )
    ]
    for width in (60, 100, 160, 400):
        buf = io.StringIO()
        print_sessions(rows, Console(file=buf, width=width, color_system=None))
        out = buf.getvalue()
        assert any(str(long) in line for line in out.splitlines()), width  # whole, on one line
        assert "2.5 MB" in out  # one unit with the picker (1000-based), not 2.4 MB
    buf = io.StringIO()
    print_sessions(rows, Console(file=buf, width=400, color_system=None))
    assert len(buf.getvalue().splitlines()) == 6  # at 400 columns: the table (title, 3 rules, head, row)


def test_request_counts_agree_between_the_list_and_the_reader() -> None:
    from inspector.live import discovery

    for name in (
        "codex/agent-history-synthetic-compaction.jsonl",  # 6 calls, one token_count report
        "codex/lazyagents-codex-0.158.0-rollout.jsonl",
        "codex/agent-history-real-session-01.jsonl",
    ):
        path = corpus_file(name)
        data = path.read_bytes()
        listed = discovery._count_requests(data, None, len(data), discovery._codex_count)
        assert listed == (len(load(str(path)).requests), False), name
    assert len(load(str(corpus_file("codex/agent-history-synthetic-compaction.jsonl"))).requests) == 6
    path = corpus_file(FA812)  # 3.4 MB: counted whole, exactly, not extrapolated to ~142
    head, tail = discovery._read_head_tail(path, path.stat().st_size)
    assert discovery._count_requests(head, tail, path.stat().st_size, discovery._claude_count) == (157, False)


def test_window_sizes_read_as_in_the_app_and_too_small_ones_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from inspector.tui.viewmodel import parse_window

    path = corpus_file(FA812)
    assert main(["report", str(path), "--json", "--window", "100k"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"]["window"] == 100_000 == parse_window("100k")
    assert main(["report", str(path), "--window", "20k"]) == 2
    assert capsys.readouterr().err == (
        "context-inspector: window 20,000 is too small for policy claude-code: it keeps 20,000 for the "
        "answer and a 13,000 safety buffer, 33,000 in all; give a window of at least 34,000 tokens\n"
    )


def test_one_spelling_of_policy_and_harness_names(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812)
    assert main(["report", str(path), "--policy", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "claude-code" in err and "claude_code" not in err
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "claude_code" not in out
    assert "deciding with Claude Code's own estimate" in out
    assert any("request" in line and "Claude Code's own estimate" in line for line in out.splitlines())
    assert main(["report", str(path), "--policy", "opencollab"]) == 0
    assert "what OpenCollab would estimate" in capsys.readouterr().out


def test_the_compare_and_lab_screens_use_the_layer_labels() -> None:
    from inspector.replay import Replay
    from inspector.replay.compare import compare
    from inspector.shaping.policy import preset
    from inspector.tui.compare import side_header
    from inspector.tui.lab import layer_label

    replay = Replay.open(load(str(corpus_file(FA812))))
    side = compare(replay, replay.with_settings("codex"), 100).b
    assert side.fired == ["middle_truncate"]
    assert side_header(side).endswith("· tool output truncation (codex)")
    assert layer_label("eager_clear", preset("opencollab")) == "eager tool output clear"


# -- money -------------------------------------------------------------------------------------
# Claude Sonnet 4.5, per million tokens, from Anthropic's pricing page
# (https://www.anthropic.com/pricing#api, "Claude Sonnet 4.5": input $3, prompt caching write
# $3.75 (5 minutes), read $0.30, output $15; under 200,000 input tokens a request).
SONNET_45 = {"input": 3.00, "cache_write": 3.75, "cache_read": 0.30, "output": 15.00}


def test_report_json_cost_against_the_published_prices(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code/applabnl-a9185eb7.jsonl")  # 49 responses, claude-sonnet-4-5
    assert main(["report", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    usages = [r.usage for r in load(str(path)).requests]
    assert len(report["requests"]) == len(usages) == 49
    total = dict.fromkeys(SONNET_45, 0.0)
    for row, u in zip(report["requests"], usages, strict=True):
        assert u is not None and u.context < 200_000
        by_hand = {
            "input": u.input * SONNET_45["input"] / 1e6,
            "cache_write": u.cache_write * SONNET_45["cache_write"] / 1e6,
            "cache_read": u.cache_read * SONNET_45["cache_read"] / 1e6,
            "output": u.output * SONNET_45["output"] / 1e6,
        }
        for kind, value in by_hand.items():
            assert row["cost"][kind] == pytest.approx(value, abs=1e-6)
            total[kind] += value
        assert row["cost"]["total"] == pytest.approx(sum(by_hand.values()), abs=2e-6)
        assert row["cost_note"] is None
    cost = report["cost"]
    assert cost["currency"] == "USD"
    assert (cost["requests_priced"], cost["requests_unpriced"], cost["no_price_for"]) == (49, 0, [])
    for kind, value in total.items():
        assert cost["total"][kind] == pytest.approx(value, abs=1e-4)
    assert cost["total"]["total"] == pytest.approx(sum(total.values()), abs=1e-4)
    assert cost["total"]["total"] > 1  # a real session of 49 requests on Sonnet: dollars, not cents
    assert cost["prices"].startswith("genai-prices ") and cost["price_table_date"]


def test_an_unknown_model_has_no_price_never_zero(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")  # a fake provider's "fake-model"
    assert main(["report", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["cost"] for r in report["requests"]] == [None, None]
    assert [r["cost_note"] for r in report["requests"]] == ["no price for fake-model"] * 2
    assert report["cost"]["total"] is None and report["cost"]["no_price_for"] == ["fake-model"]
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("cost"))
    assert "no price for fake-model (2 requests not priced)" in line and "$0" not in line


def test_the_prompt_cache_cost_of_a_policy_in_money(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(FA812)  # claude-opus-4-6: cache write $6.25, cache read $0.50 per million
    assert main(["report", str(path), "--json", "--cache", "--policy", "opencollab", "--window", "100k"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["cache"]
    assert entry["rebilled_tokens"] == 816_506
    assert entry["rebilled_cost"] == pytest.approx(816_506 * (6.25 - 0.50) / 1e6, abs=1e-6)
    assert main(["report", str(path), "--cache", "--policy", "opencollab", "--window", "100k"]) == 0
    assert "opencollab re-bills 816,506 tokens = $4.69 on this session" in capsys.readouterr().out


def test_prices_once_looked_up_spare_the_library_import(tmp_path: Path) -> None:
    """The library's import is heavy (about 0.25 s): a second report reads the prices it needs
    from the cache file and does not import it."""
    path = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    code = (
        "import sys, json\n"
        "from inspector.cli import main\n"
        f"main(['report', {str(path)!r}, '--json'])\n"
        "print('genai_prices' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert first.stderr.strip() == "True" and second.stderr.strip() == "False"
    assert json.loads(first.stdout)["cost"] == json.loads(second.stdout)["cost"]
    assert (tmp_path / "context-inspector" / "prices.json").is_file()


def test_a_price_in_exact_fractions_gives_the_float_of_the_decimal_product() -> None:
    """`Tiered.dollars` divides integers where the cost was `float(price * n / PER)` in Decimal:
    both are the exact quotient rounded once, so every part, and so every sum, is the same float."""
    import random
    from decimal import Decimal

    from inspector.model.cost import PER, Tiered

    rng = random.Random(29)
    prices = ["3", "15", "0.3", "0.30", "3.75", "0.08", "1.25", "0.075", "6.25", "0.5", "22.5", "0.0001", "1E+1"]
    prices += [str(Decimal(rng.randrange(1, 10**7)) / Decimal(10 ** rng.randrange(0, 9))) for _ in range(200)]
    for text in prices:
        tiered = Tiered(Decimal(text), ((200_000, Decimal(text) * 2), (1_000_000, Decimal(text) * 3)))
        for n in [0, 1, 3, 7, 999_999, 10**6, 123_456_789, *(rng.randrange(0, 10**8) for _ in range(50))]:
            for whole in (0, 200_000, 200_001, 999_999, 1_000_001):
                assert tiered.dollars(whole, n) == float(tiered.at(whole) * n / PER), (text, n, whole)


def test_installs_sharing_the_cache_folder_keep_each_its_prices(tmp_path: Path) -> None:
    """Another install of the library (another virtual environment) saving its prices leaves
    this one's in the file: neither has to import the library again for the other."""
    from datetime import date

    from inspector.model.cost import TABLES_KEPT, PriceTable

    cache = tmp_path / "prices.json"
    foreign = {"key": "/elsewhere/genai_prices:1:2", "version": "0.0.1", "date": None, "prices": {"m|x": None}}
    cache.write_text(json.dumps({"tables": [foreign]}), encoding="utf-8")
    table = PriceTable(cache=cache)
    assert table.available and table._dirty  # not its table: made anew
    sonnet = table.prices("claude-sonnet-4-5", date(2025, 11, 1))
    assert sonnet is not None and str(sonnet.input.base) == "3"
    table.save()
    saved = json.loads(cache.read_text(encoding="utf-8"))["tables"]
    assert [t["key"] for t in saved] == [table._key, foreign["key"]]
    assert saved[1] == foreign
    again = PriceTable(cache=cache)
    assert not again._dirty and again.prices("claude-sonnet-4-5", date(2025, 11, 1)) == sonnet
    assert not again._dirty  # read from the file, not looked up
    many = [{**foreign, "key": f"/install-{i}:1:2"} for i in range(TABLES_KEPT + 2)]
    cache.write_text(json.dumps({"tables": many}), encoding="utf-8")
    table.prices("claude-sonnet-4-5", date(2025, 11, 2))
    table.save()
    kept = [t["key"] for t in json.loads(cache.read_text(encoding="utf-8"))["tables"]]
    assert kept == [table._key, *[t["key"] for t in many[: TABLES_KEPT - 1]]]


def test_the_gauge_says_the_cost_of_the_request() -> None:
    from inspector.model.cost import money_at

    transcript = load(str(corpus_file("claude-code/applabnl-a9185eb7.jsonl")))
    text, priced = money_at(transcript, 1)
    assert priced and text.startswith("cost $") and text.endswith(" so far")
    first, so_far = text.removeprefix("cost ").removesuffix(" so far").split(" · ")
    assert first == so_far  # request 1: the session so far is that request
    codex = load(str(corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")))
    assert money_at(codex, 2) == ("no price for fake-model", False)  # the reason, not a price


def test_exports_carry_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    assert main(["report", str(path), "--json"]) == 0
    reported = json.loads(capsys.readouterr().out)["cost"]
    assert main(["export", str(path), "--format", "json", "--redact"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"] == reported
    assert main(["export", str(path), "--format", "md"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| cost |"))
    assert f"{reported['total']['total']:,.2f} in all" in line and "genai-prices" in line
