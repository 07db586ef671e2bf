"""Real sessions of every version: no request lost, none invented (issue 23).

Each form a real session takes is tested on the corpus file that holds it, and, where no file
does, on a small edited copy of a real file made here (a boundary whose logical parent is not in
the file, an API-error line, a fresh-context root, a zero Codex token report). The facts counted
by an independent script (`../shared/corpus/FACTS.json`) are checked on every file they cover.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main as cli_main
from inspector.formats import detect, load
from inspector.formats.claude_code import ClaudeCodeFormat
from inspector.formats.detect import read_head
from inspector.formats.generic import GenericChatFormat
from inspector.model import EventKind
from inspector.tokens.accuracy import accuracy
from tests.conftest import CORPUS, FA812, corpus_file

CONNER = "claude-code/conneroisu-b9712494.jsonl"
ARRAY = "claude-code-json-array/lroystack-24133cc4-chat.json"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def contexts(path: Path) -> list[int]:
    return [r.usage.context if r.usage else 0 for r in load(path).requests]


# -- the independent facts, on every file they cover -------------------------------------------
def _facts() -> list[tuple[str, dict[str, Any]]]:
    facts = CORPUS / "FACTS.json"
    return sorted(json.loads(facts.read_text()).items()) if facts.exists() else []


@pytest.mark.parametrize(  # a new list, so it holds facts or a skipped case (mypy)
    ("rel", "want"), [*_facts()] or [pytest.param("", {}, marks=pytest.mark.skip("no corpus"))]
)
def test_every_fact_of_the_corpus_holds(rel: str, want: dict[str, Any]) -> None:
    t = load(corpus_file(rel))
    seq = [r.usage.context if r.usage else 0 for r in t.requests]
    assert t.format == want["format"]
    assert len(seq) == want["requests"]
    for key, got in (("context_first", seq[0]), ("context_max", max(seq)), ("context_last", seq[-1])):
        if want.get(key) is not None:
            assert got == want[key], key
    if want.get("context_sha256"):
        assert hashlib.sha256(json.dumps(seq).encode()).hexdigest()[:16] == want["context_sha256"]
    compactions = [e for e in t.events if e.kind is EventKind.COMPACTION]
    assert [(e.after_request, e.style) for e in compactions] == [
        (c["after_request"], c.get("style", e.style))
        for c, e in zip(want["compactions"], compactions, strict=True)
    ]
    for c, e in zip(want["compactions"], compactions, strict=True):
        assert (e.trigger, e.pre_tokens) == (c["trigger"], c["pre_tokens"])
    assert t.load_issues == []
    # "detached" is only for lines whose parent is really not in the file: none here
    assert not any(k.startswith("detached") or k.startswith("unknown:") for k in t.skipped), t.skipped


# -- old-style compaction: a summary root, no boundary ------------------------------------------
def test_an_old_style_compaction_joins_its_segments() -> None:
    path = corpus_file(CONNER)
    t = load(path)
    assert len(t.requests) == 192
    (event,) = [e for e in t.events if e.kind is EventKind.COMPACTION]
    assert (event.style, event.trigger, event.pre_tokens, event.after_request, event.line) == (
        "summary_root",
        None,
        None,
        86,
        502,
    )
    assert len(t.segments) == 2 and t.segments[1].started_by == t.events.index(event)
    assert t.message(t.segments[1].message_ids[0]).is_summary
    assert [r.index for r in t.requests if r.segment == 0] == list(range(1, 87))
    assert t.requests[86].segment == 1 and t.requests[86].ledger_len >= 1


def test_the_report_shows_each_segment_and_its_style(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(CONNER)
    assert cli_main(["report", str(path), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [(s["index"], s["first_request"], s["requests"], s["style"]) for s in r["segment_starts"]] == [
        (0, 1, 86, None),
        (1, 87, 106, "summary_root"),
    ]
    assert cli_main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert "compaction · summary_root" in text
    # the pre-compaction size the file does not state: request 86's context, said to be inferred
    assert "155,671" in text and "(inferred)" in text


def test_findings_see_the_whole_old_style_session(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(CONNER)
    cli_main(["findings", str(path)])
    lines = capsys.readouterr().out.splitlines()
    # findings speak of both segments: the closest approach is request 86's, before the compaction,
    # and a file the compaction dropped is read again after it
    assert any(
        line.split()[:4] == ["request", "86", "info", "pressure"] and "155,671" in line for line in lines
    )
    assert any("after the harness's own compaction before request 87 dropped it" in line for line in lines)


def test_a_file_that_begins_with_a_summary_root_continues_a_session(tmp_path: Path) -> None:
    recs = records(corpus_file(CONNER))
    tail = write_jsonl(tmp_path / "tail.jsonl", recs[501:])  # from the summary line on
    t = load(tail)
    assert len(t.requests) == 106
    (event,) = [e for e in t.events if e.kind is EventKind.COMPACTION]
    assert (event.after_request, event.style) == (0, "summary_root")
    assert t.load_issues == []


# -- a boundary whose logical parent is not in the file -----------------------------------------
def test_a_boundary_with_a_missing_logical_parent_loses_no_request(tmp_path: Path) -> None:
    recs = records(FA812 if FA812.exists() else corpus_file("claude-code/spotter-fa812bfe"))
    (at,) = [i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary"]
    recs[at]["logicalParentUuid"] = "00000000-0000-4000-8000-00000000dead"
    edited = write_jsonl(tmp_path / "edited.jsonl", recs)
    t = load(edited)
    assert contexts(edited) == contexts(FA812)
    assert len(t.requests) == 157
    (issue,) = t.load_issues
    assert issue.line == at + 1
    assert "not in the file" in issue.reason and f"line {at}" in issue.reason  # the line it inferred


# -- API errors are events, not requests ---------------------------------------------------------
def _api_error(parent: str, uuid: str, session: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": "assistant",
        "uuid": uuid,
        "sessionId": session,
        "version": "2.1.39",
        "timestamp": "2026-02-11T10:00:00.000Z",
        "message": {
            "id": "e8a8302f-dff7-4a50-9e13-b9ed31ab31eb",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "stop_reason": "stop_sequence",
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
            "content": [{"type": "text", "text": "API Error: 529 overloaded_error"}],
        },
        "isApiErrorMessage": True,
    }


def test_an_api_error_line_is_an_event_and_no_request(tmp_path: Path) -> None:
    original = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    recs = records(original)
    # a real prompt, answered: the error comes where the first answer did, the retry hangs off it
    users = [
        i
        for i, r in enumerate(recs)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str) and i > 5
    ]
    at = users[0]
    child = next(i for i in range(at + 1, len(recs)) if recs[i].get("parentUuid") == recs[at]["uuid"])
    err = _api_error(recs[at]["uuid"], "11111111-2222-4333-8444-555555555555", recs[at]["sessionId"])
    recs[child] = dict(recs[child], parentUuid=err["uuid"])
    recs.insert(at + 1, err)
    edited = write_jsonl(tmp_path / "edited.jsonl", recs)
    t, before = load(edited), load(original)
    assert contexts(edited) == contexts(original) and 0 not in contexts(edited)
    (event,) = [e for e in t.events if e.kind is EventKind.API_ERROR]
    assert event.detail == "API Error: 529 overloaded_error" and event.line == at + 2
    requests_before = len(
        {
            r["message"]["id"]
            for r in recs[: at + 1]
            if r.get("type") == "assistant" and not r.get("isSidechain")
        }
    )
    assert event.after_request == requests_before
    assert len(t.messages) == len(before.messages)  # not in the ledger either
    # the calibration: every request predicted as it was without the error line
    a, b = accuracy(t), accuracy(before)
    assert [(r.request, r.error_pct) for r in a.requests] == [(r.request, r.error_pct) for r in b.requests]


def test_api_error_lines_of_a_real_session_are_not_requests() -> None:
    t = load(corpus_file(ARRAY))
    assert all(r.model != "<synthetic>" for r in t.requests)
    assert all(r.usage is not None and r.usage.context > 0 for r in t.requests)
    # the session ends on one, after the last request, hanging off system lines: still an event
    (event,) = [e for e in t.events if e.kind is EventKind.API_ERROR]
    assert (event.after_request, event.detail, event.line) == (162, "5-hour limit reached ∙ resets 9pm", 1141)


# -- plan mode's "clear context": a new root that is no summary -------------------------------------
def test_a_fresh_context_root_is_its_own_event(tmp_path: Path) -> None:
    original = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    recs = records(original)
    users = [
        i
        for i, r in enumerate(recs)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str) and i > 5
    ]
    at = users[len(users) // 2]
    recs[at]["parentUuid"] = None
    edited = write_jsonl(tmp_path / "cleared.jsonl", recs)
    t = load(edited)
    assert contexts(edited) == contexts(original)
    (event,) = [e for e in t.events if e.kind is EventKind.CONTEXT_CLEARED]
    assert event.style == "new_root" and event.line == at + 1
    assert len(t.segments) == 2 and t.segments[1].started_by == t.events.index(event)
    # not a compaction: the facts' compaction count is unchanged
    assert [e for e in t.events if e.kind is EventKind.COMPACTION] == []


# -- a JSON array of records ----------------------------------------------------------------------
def test_a_json_array_of_records_is_a_claude_code_session() -> None:
    path = corpus_file(ARRAY)
    head = read_head(path)
    assert ClaudeCodeFormat().sniff(path, head)
    assert not GenericChatFormat().sniff(path, head)
    assert detect(path).format == "claude-code"
    t = load(path)
    assert len(t.requests) == 162 and t.load_issues == []
    assert [(e.trigger, e.pre_tokens) for e in t.events if e.kind is EventKind.COMPACTION] == [
        ("auto", 155431),
        ("auto", 155241),
    ]


def test_a_torn_json_array_keeps_the_records_before_the_break(tmp_path: Path) -> None:
    data = corpus_file(ARRAY).read_bytes()
    torn = tmp_path / "chat.json"
    torn.write_bytes(data[: len(data) // 2])
    t = load(torn)
    assert t.format == "claude-code"
    assert 40 < len(t.requests) < 162
    assert any("breaks off" in i.reason for i in t.load_issues)


def test_generic_chat_does_not_claim_an_array_without_roles(tmp_path: Path) -> None:
    path = tmp_path / "array.json"
    body = [{"type": "note", "text": "x" * 50} for _ in range(5000)]  # larger than the head
    path.write_text(json.dumps(body, indent=2) + json.dumps([{"role": "user", "content": "hi"}]))
    assert not GenericChatFormat().sniff(path, read_head(path))


# -- Codex: a token report that is no model call ---------------------------------------------------
def test_a_zero_codex_token_count_is_not_a_request(tmp_path: Path) -> None:
    original = corpus_file("codex/lazyagents-codex-0.158.0-rollout.jsonl")
    recs = records(original)
    zero = {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                "total_token_usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
                "last_token_usage": {
                    "input_tokens": 0,
                    "cached_input_tokens": 0,
                    "output_tokens": 0,
                    "reasoning_output_tokens": 0,
                    "total_tokens": 0,
                },
                "model_context_window": 258400,
            },
        },
    }
    # an envelope like the file's own (0.158 wraps each record)
    counts = [i for i, r in enumerate(recs) if "token_count" in json.dumps(r)]
    template = recs[counts[-1]]
    rec = dict(template, payload=zero["payload"]) if "payload" in template else zero
    recs.append(rec)
    edited = write_jsonl(tmp_path / "rollout.jsonl", recs)
    t = load(edited)
    assert [r.usage.context if r.usage else None for r in t.requests] == contexts(original)
    assert t.skipped.get("event_msg/token_count (no new call)") == 1


# -- line types of newer versions, counted by name ----------------------------------------------
NEW_TYPES = (
    "bridge-session",
    "file-history-delta",
    "agent-setting",
    "mode",
    "permission-mode",
    "last-prompt",
    "ai-title",
    "agent-name",
    "attachment",
)


def test_line_types_of_newer_versions_are_known(tmp_path: Path) -> None:
    recs = records(corpus_file("claude-code/spotter-short.jsonl"))
    session = recs[-1].get("sessionId")
    extra: list[dict[str, Any]] = [{"type": t, "sessionId": session} for t in NEW_TYPES]
    extra += [
        {"type": "system", "subtype": sub, "uuid": f"sys-{sub}", "parentUuid": None, "sessionId": session}
        for sub in ("away_summary", "informational")
    ]
    path = write_jsonl(tmp_path / "new.jsonl", recs + extra)
    t = load(path)
    assert not [k for k in t.skipped if k.startswith("unknown")]
    for name in (*NEW_TYPES, "system/away_summary", "system/informational"):
        assert t.skipped.get(name, 0) >= 1, name
    assert len(t.requests) == 1


# -- detached means detached ------------------------------------------------------------------------
def test_detached_lines_are_only_those_whose_parent_is_missing(tmp_path: Path) -> None:
    recs = records(corpus_file("claude-code/applabnl-a9185eb7.jsonl"))
    # a response hanging off a line that is not in the file (a file cut at the front)
    stray = json.loads(json.dumps(next(r for r in recs if r.get("type") == "assistant")))
    stray.update(uuid="99999999-0000-4000-8000-000000000001", parentUuid="not-in-this-file")
    stray["message"]["id"] = "msg_detached"
    path = write_jsonl(tmp_path / "detached.jsonl", [*recs[:-1], stray, recs[-1]])
    t = load(path)
    assert t.skipped["detached (parent not in file)"] == 1
    assert t.skipped["responses in detached lines"] == 1
    assert len(t.requests) == 49


# -- calibrate says when there is nothing to calibrate -----------------------------------------------
def test_calibrate_without_two_reports_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file("claude-code/spotter-short.jsonl")
    assert cli_main(["calibrate", str(path)]) == 2
    err = capsys.readouterr()
    assert err.out == "" and len(err.err.strip().splitlines()) == 1
    assert "no request to predict" in err.err


def test_a_json_array_session_is_followed_by_reading_it_whole(tmp_path: Path) -> None:
    """The Stop hook writes the whole array again each time: a follower reads it whole."""
    from inspector.live import follower_for

    records_ = json.loads(corpus_file(ARRAY).read_text())
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(records_[:400], indent=2))
    follower = follower_for(path)
    follower.poll_once()
    first = len(follower.transcript().requests)
    path.write_text(json.dumps(records_, indent=2))  # the hook's next copy: longer, written anew
    follower.poll_once()
    assert 0 < first < 162
    assert len(follower.transcript().requests) == 162


def test_a_local_command_written_as_a_root_goes_on_with_the_history(tmp_path: Path) -> None:
    """Claude Code may write a local command's lines without a parent (notes §3): the
    conversation goes on from them, and nothing was cleared: no segment, no event."""
    original = corpus_file("claude-code/applabnl-a9185eb7.jsonl")
    recs = records(original)
    users = [
        i
        for i, r in enumerate(recs)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str) and i > 5
    ]
    at = users[len(users) // 2]
    command = dict(
        recs[at],
        uuid="c0ffee00-0000-4000-8000-000000000001",
        parentUuid=None,
        message={
            "role": "user",
            "content": "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
            "<command-args></command-args>",
        },
    )
    recs[at] = dict(recs[at], parentUuid=command["uuid"])
    edited = write_jsonl(tmp_path / "orphan-command.jsonl", [*recs[:at], command, *recs[at:]])
    t = load(edited)
    assert contexts(edited) == contexts(original)
    assert len(t.segments) == 1 and t.events == load(original).events
    assert t.load_issues == []
