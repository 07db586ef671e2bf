"""The bundled sample transcripts and their generator (sample_sessions/)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from sample_sessions import SAMPLES, SAMPLES_DIR, SampleInfo, sample_path
from sample_sessions.generate import RECIPES, generate_claude_code, generate_sample, main

ENVELOPE = (
    "parentUuid",
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "type",
    "uuid",
    "timestamp",
)
CHAINED_TYPES = {"user", "assistant", "system", "progress"}
OVERHEAD = 14_500


@cache
def _records(path: Path) -> tuple[dict[str, Any], ...]:
    with path.open(encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle)


def _long() -> tuple[dict[str, Any], ...]:
    return _records(SAMPLES["long-session"].path)


def _short() -> tuple[dict[str, Any], ...]:
    return _records(SAMPLES["short-session"].path)


def _context(record: dict[str, Any]) -> int:
    usage = record["message"]["usage"]
    return int(
        usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    )


def _requests(records: tuple[dict[str, Any], ...]) -> list[list[dict[str, Any]]]:
    """Assistant lines grouped by message.id, in order of first appearance."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] == "assistant":
            groups.setdefault(record["message"]["id"], []).append(record)
    return list(groups.values())


def _tool_results(records: tuple[dict[str, Any], ...]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool_result block, its line) for every tool result."""
    found = []
    for record in records:
        content = record.get("message", {}).get("content") if record["type"] == "user" else None
        if isinstance(content, list):
            found += [(block, record) for block in content if block.get("type") == "tool_result"]
    return found


def _tool_uses(records: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [
        block
        for record in records
        if record["type"] == "assistant"
        for block in record["message"]["content"]
        if block["type"] == "tool_use"
    ]


ALL_SAMPLES = pytest.mark.parametrize("name", sorted(SAMPLES))


# -- registry -------------------------------------------------------------------------------


def test_registry_describes_both_samples() -> None:
    assert sorted(SAMPLES) == ["long-session", "short-session"]
    for name, info in SAMPLES.items():
        assert isinstance(info, SampleInfo)
        assert info.name == name
        assert info.file == f"{name}.jsonl"
        assert info.window == 200_000
        assert info.policy == "opencollab"
        assert 2 <= info.description.count(". ") + 1 <= 5
        assert (SAMPLES_DIR / info.file).is_file()
        assert name in RECIPES


def test_sample_path_defaults_to_the_long_session() -> None:
    assert sample_path() == SAMPLES_DIR / "long-session.jsonl"
    assert sample_path("short-session") == SAMPLES_DIR / "short-session.jsonl"


def test_sample_path_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown sample 'nope'; known samples: long-session, short-session"):
        sample_path("nope")


# -- determinism ----------------------------------------------------------------------------


def test_generator_is_deterministic(tmp_path: Path) -> None:
    first = generate_claude_code(tmp_path / "a.jsonl", requests=90, seed=5, target_peak_tokens=80_000)
    second = generate_claude_code(tmp_path / "b.jsonl", requests=90, seed=5, target_peak_tokens=80_000)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert first.lines == second.lines
    assert first.peak_context == second.peak_context
    other = generate_claude_code(tmp_path / "c.jsonl", requests=90, seed=6, target_peak_tokens=80_000)
    assert (tmp_path / "c.jsonl").read_bytes() != (tmp_path / "a.jsonl").read_bytes()
    assert other.requests == 90


@ALL_SAMPLES
def test_committed_sample_equals_a_fresh_generation(name: str, tmp_path: Path) -> None:
    info = generate_sample(name, tmp_path)
    committed = SAMPLES[name].path.read_bytes()
    assert info.path.read_bytes() == committed, f"{name} was edited by hand; regenerate it"
    assert info.bytes == len(committed)


# -- format ---------------------------------------------------------------------------------


@ALL_SAMPLES
def test_every_line_is_json_with_the_envelope(name: str) -> None:
    path = SAMPLES[name].path
    raw_lines = path.read_text(encoding="utf-8").split("\n")
    assert raw_lines[-1] == ""
    records = _records(path)
    assert len(records) == len(raw_lines) - 1
    session_ids = set()
    for record in records:
        if record["type"] in CHAINED_TYPES:
            missing = [key for key in ENVELOPE if key not in record]
            assert not missing, (record["type"], missing)
            assert record["isSidechain"] is False
            assert record["userType"] == "external"
            assert record["version"] == "2.1.39"
            assert record["cwd"] == "/home/dev/projects/ledgerline"
            assert re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", record["uuid"]
            )
            assert re.fullmatch(r"2026-03-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["timestamp"])
            session_ids.add(record["sessionId"])
        else:
            assert record["type"] in {"file-history-snapshot", "queue-operation"}
    assert session_ids == {RECIPES[name].session_id}
    types = Counter(record["type"] for record in records)
    assert types["file-history-snapshot"] >= 2
    assert types["queue-operation"] == 1


@ALL_SAMPLES
def test_parent_links_form_one_conversation_chain(name: str) -> None:
    records = _records(SAMPLES[name].path)
    by_uuid = {record["uuid"]: record for record in records if "uuid" in record}
    assert len(by_uuid) == sum(1 for record in records if "uuid" in record)
    seen: set[str] = set()
    previous_conversation: str | None = None
    for record in records:
        if "uuid" not in record:
            continue
        parent = record["parentUuid"]
        assert parent is None or parent in seen, "parents come earlier in the file"
        if record["type"] == "progress":
            if parent is not None:
                assert by_uuid[parent]["type"] in {"assistant", "progress"}
        elif previous_conversation is not None:
            assert parent == previous_conversation
            assert by_uuid[parent]["type"] != "progress"
        if record["type"] != "progress":
            previous_conversation = record["uuid"]
        seen.add(record["uuid"])
    assert records[-1]["type"] == "system"
    assert records[-1]["subtype"] == "turn_duration"


@ALL_SAMPLES
def test_response_lines_share_ids_and_output_tokens_only_grow(name: str) -> None:
    records = _records(SAMPLES[name].path)
    for lines in _requests(records):
        assert re.fullmatch(r"msg_01[A-Za-z0-9]{22}", lines[0]["message"]["id"])
        assert {line["requestId"] for line in lines} == {lines[0]["requestId"]}
        assert lines[0]["requestId"].startswith("req_011C")
        outputs = [line["message"]["usage"]["output_tokens"] for line in lines]
        assert outputs == sorted(outputs)
        assert outputs[-1] == max(outputs) >= 1
        without_output = [
            {k: v for k, v in line["message"]["usage"].items() if k != "output_tokens"} for line in lines
        ]
        assert all(usage == without_output[0] for usage in without_output)
        for line in lines:
            assert len(line["message"]["content"]) == 1
            assert line["message"]["model"] == "claude-sonnet-4-5-20250929"
            assert line["message"]["stop_reason"] is None


@ALL_SAMPLES
def test_every_tool_use_has_exactly_one_result(name: str) -> None:
    records = _records(SAMPLES[name].path)
    uses = _tool_uses(records)
    results = _tool_results(records)
    use_ids = Counter(block["id"] for block in uses)
    result_ids = Counter(block["tool_use_id"] for block, _ in results)
    assert use_ids == result_ids
    assert set(use_ids.values()) == {1}
    assistant_line_of = {
        block["id"]: record["uuid"]
        for record in records
        if record["type"] == "assistant"
        for block in record["message"]["content"]
        if block["type"] == "tool_use"
    }
    for block, line in results:
        assert line["sourceToolAssistantUUID"] == assistant_line_of[block["tool_use_id"]]
        assert "toolUseResult" in line
        if block.get("is_error"):
            assert isinstance(line["toolUseResult"], str)
            assert line["toolUseResult"].startswith("Error: ")


@ALL_SAMPLES
def test_usage_is_honest(name: str) -> None:
    """Each request's context is the overhead plus a recount of everything sent before it."""
    records = _records(SAMPLES[name].path)

    def tokens(text: str) -> int:
        return round(len(text) / 3.6)

    sent = 0
    seen_ids: set[str] = set()
    previous = 0
    checked = 0
    for record in records:
        if record["type"] == "assistant":
            message = record["message"]
            usage = message["usage"]
            if message["id"] not in seen_ids:
                seen_ids.add(message["id"])
                assert _context(record) == OVERHEAD + sent
                assert 1 <= usage["input_tokens"] <= 10
                assert usage["cache_creation"] == {
                    "ephemeral_5m_input_tokens": 0,
                    "ephemeral_1h_input_tokens": usage["cache_creation_input_tokens"],
                }
                assert usage["service_tier"] == "standard"
                if previous:
                    assert usage["cache_read_input_tokens"] == previous
                previous = _context(record)
                checked += 1
            block = message["content"][0]
            if block["type"] == "thinking":
                sent += round(tokens(block["thinking"]) * 1.3)
            elif block["type"] == "tool_use":
                sent += tokens(block["name"] + json.dumps(block["input"], ensure_ascii=False))
            else:
                sent += tokens(block["text"])
            sent += 8
        elif record["type"] == "user":
            content = record["message"]["content"]
            if isinstance(content, str):
                sent += tokens(content)
            else:
                for block in content:
                    sent += tokens(block["content"] if block["type"] == "tool_result" else block["text"])
            sent += 8
    assert checked == RECIPES[name].requests


# -- the story and its shapes ---------------------------------------------------------------


def test_long_sample_context_climbs_past_200k_without_compaction() -> None:
    records = _long()
    requests = _requests(records)
    assert 220 <= len(requests) <= 300
    contexts = [_context(lines[0]) for lines in requests]
    assert contexts[0] < 30_000
    assert contexts == sorted(contexts)
    last = _context([record for record in records if record["type"] == "assistant"][-1])
    assert last == contexts[-1]
    assert 240_000 <= last <= 280_000
    assert not any(
        record.get("subtype") in {"compact_boundary", "microcompact_boundary"} for record in records
    )
    assert not any(record.get("isCompactSummary") for record in records)
    assert SAMPLES["long-session"].path.stat().st_size < 6_000_000


def test_short_sample_is_small() -> None:
    requests = _requests(_short())
    assert len(requests) == 12
    assert _context(requests[-1][0]) < 40_000
    edited = {block["input"]["file_path"] for block in _tool_uses(_short()) if block["name"] == "Edit"}
    assert edited == {"/home/dev/projects/ledgerline/src/ledgerline/parser.py"}


def test_long_sample_has_large_and_persisted_tool_results() -> None:
    results = _tool_results(_long())
    sizes = [len(block["content"]) for block, _ in results]
    assert sum(16_000 < size <= 50_000 for size in sizes) >= 3
    persisted = [
        (block, line) for block, line in results if block["content"].startswith("<persisted-output>")
    ]
    assert len(persisted) >= 1
    block, line = persisted[0]
    assert block["content"].endswith("</persisted-output>")
    assert len(block["content"]) < 3_000
    assert "tool-results/" + block["tool_use_id"] + ".txt" in block["content"]
    stdout = line["toolUseResult"]["stdout"]
    assert len(stdout) > 50_000
    assert stdout[:2_048] in block["content"]


def test_tool_results_look_like_claude_code() -> None:
    records = _long()
    uses = {block["id"]: block for block in _tool_uses(records)}
    names = Counter(block["name"] for block in uses.values())
    assert {"Read", "Grep", "Glob", "Bash", "Edit", "Write", "Skill"} <= set(names)
    errors = 0
    for block, line in _tool_results(records):
        use = uses[block["tool_use_id"]]
        result = line["toolUseResult"]
        errors += bool(block.get("is_error"))
        if use["name"] == "Read":
            assert re.match(r" +\d+→", block["content"])
            assert result["type"] == "text"
            assert set(result["file"]) == {"filePath", "content", "numLines", "startLine", "totalLines"}
            assert result["file"]["filePath"] == use["input"]["file_path"]
        elif use["name"] == "Bash" and not block.get("is_error"):
            assert set(result) >= {"stdout", "stderr", "interrupted", "isImage"}
        elif use["name"] == "Bash":
            assert block["content"].startswith("Exit code 1\n")
        elif use["name"] == "Edit" and not block.get("is_error"):
            assert "has been updated. Here's the result of running `cat -n`" in block["content"]
            assert result["originalFile"] and result["structuredPatch"]
        elif use["name"] == "Write":
            assert block["content"].startswith("File created successfully at: ")
            assert result["type"] == "create"
        elif use["name"] == "Glob":
            assert result["numFiles"] == len(result["filenames"])
    assert 3 <= errors <= 40
    pytest_runs = [
        block["content"] for block, _ in _tool_results(records) if "test session starts" in block["content"]
    ]
    assert any(re.search(r"\d+ failed, \d+ passed in \d+\.\d\ds", text) for text in pytest_runs)
    assert any(re.search(r"= \d+ passed in \d+\.\d\ds =", text) for text in pytest_runs)


def test_parallel_calls_thinking_and_meta_lines() -> None:
    records = _long()
    requests = _requests(records)
    tool_counts = [
        sum(line["message"]["content"][0]["type"] == "tool_use" for line in lines) for lines in requests
    ]
    assert sum(count >= 2 for count in tool_counts) >= 10
    thinking = [
        line["message"]["content"][0]
        for lines in requests
        for line in lines
        if line["message"]["content"][0]["type"] == "thinking"
    ]
    assert len(thinking) >= 20
    assert all(block["signature"] and block["thinking"] for block in thinking)
    meta = [record for record in records if record.get("isMeta") and record["type"] == "user"]
    assert len(meta) == 2
    memory, skill = meta
    assert memory["message"]["content"].startswith("<system-reminder>")
    assert "CLAUDE.md" in memory["message"]["content"]
    assert records.index(memory) < 5
    assert skill["message"]["content"][0]["text"].startswith("Base directory for this skill: ")
    skill_uses = {block["id"] for block in _tool_uses(records) if block["name"] == "Skill"}
    assert skill["sourceToolUseID"] in skill_uses


def test_human_turns_progress_and_metadata_lines() -> None:
    records = _long()
    prompts = [
        record["message"]["content"]
        for record in records
        if record["type"] == "user"
        and isinstance(record["message"]["content"], str)
        and not record.get("isMeta")
    ]
    assert len(prompts) == 4
    assert "IndexError" in prompts[0]
    assert prompts[1].startswith("now also handle the empty case")
    assert prompts[2] == "run the full suite"
    durations = [record for record in records if record.get("subtype") == "turn_duration"]
    assert len(durations) == len(prompts)
    assert all(record["durationMs"] > 0 for record in durations)
    queued = [record for record in records if record["type"] == "queue-operation"]
    assert [record["content"] for record in queued] == [prompts[1]]
    progress = Counter(record["data"]["type"] for record in records if record["type"] == "progress")
    assert progress["hook_progress"] >= 50
    assert progress["bash_progress"] >= 5
    snapshots = [record for record in records if record["type"] == "file-history-snapshot"]
    assert sum(not record["isSnapshotUpdate"] for record in snapshots) == len(prompts)
    assert any(record["snapshot"]["trackedFileBackups"] for record in snapshots)


def test_timestamps_start_at_the_fixed_base() -> None:
    stamps = [record["timestamp"] for record in _long() if "timestamp" in record]
    assert stamps[0].startswith("2026-03-02T09:00:00.")
    conversation = [record["timestamp"] for record in _long() if record["type"] in {"user", "assistant"}]
    assert conversation == sorted(conversation)


# -- custom files and the command line ------------------------------------------------------


def test_target_peak_steers_the_last_context(tmp_path: Path) -> None:
    info = generate_claude_code(tmp_path / "t.jsonl", requests=150, seed=2, target_peak_tokens=120_000)
    assert info.requests == 150
    assert 105_000 <= info.peak_context <= 135_000
    assert info.first_context < 30_000


def test_untargeted_run_scales_and_stays_consistent(tmp_path: Path) -> None:
    info = generate_claude_code(tmp_path / "big.jsonl", requests=700, seed=4)
    records = _records(info.path)
    assert len(_requests(records)) == 700 == info.requests
    uses = Counter(block["id"] for block in _tool_uses(records))
    results = Counter(block["tool_use_id"] for block, _ in _tool_results(records))
    assert uses == results
    assert info.tool_calls == len(uses)
    assert info.lines == len(records)
    assert info.peak_context > 300_000
    prompts = [r for r in records if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    assert len(prompts) >= 8


def test_main_writes_one_custom_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nested" / "custom.jsonl"
    assert main(["--requests", "25", "--seed", "9", "--out", str(out)]) == 0
    assert "25 requests" in capsys.readouterr().out
    assert len(_requests(_records(out))) == 25


def test_main_regenerates_every_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for info in SAMPLES.values():
        assert (tmp_path / info.file).read_bytes() == info.path.read_bytes()
        assert info.file in printed


def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        generate_claude_code(tmp_path / "x.jsonl", requests=0)
    with pytest.raises(ValueError, match="unknown scenario"):
        generate_claude_code(tmp_path / "x.jsonl", requests=5, scenario="poetry")


def test_tool_results_come_after_their_calls() -> None:
    """Within one response, results follow their calls (interleaved or after all calls)."""
    records = _long()
    position = {record["uuid"]: i for i, record in enumerate(records) if "uuid" in record}
    grouped: dict[str, list[int]] = defaultdict(list)
    for _block, line in _tool_results(records):
        grouped[line["sourceToolAssistantUUID"]].append(position[line["uuid"]])
    for source, result_positions in grouped.items():
        assert all(pos > position[source] for pos in result_positions)
