"""`--session ID`: one session of an opencode database with three, of a folder of Codex rollouts,
of a Claude Code project folder; the newest without it (and the report says how many there are);
an id naming none or several is one line and exit 2."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.formats import LoaderError, load
from inspector.formats.choice import folder_sessions, match_session
from inspector.model import Transcript
from tests.conftest import corpus_file
from tests.support.opencode_sessions import NEWEST_FIRST, ORIGINAL, SECOND, SESSIONS, THIRD, three_session_db

CODEX_A = "codex/agent-history-real-session-01.jsonl"  # 1 request, id 019e9625-...
CODEX_B = "codex/lazyagents-codex-0.158.0-rollout.jsonl"  # 2 requests, id 01a0f21c-...
CLAUDE_A = "claude-code/fasthooks-manual-compact.jsonl"  # 12 requests, id c45af7b1-...
CLAUDE_B = "claude-code/chiphuyen-ba79134d.jsonl"  # 24 requests, id ba79134d-...


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return three_session_db(tmp_path / "opencode")


def report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Runs argv, which must fail as a user error: exit 2, nothing on stdout, one line on stderr."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("context-inspector: ")
    return lines[0]


def fingerprint(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


# -- an opencode database with three sessions --------------------------------------------------
@pytest.mark.parametrize("sid", NEWEST_FIRST)
def test_each_session_of_the_database_opens_with_session(
    db: Path, sid: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = report(capsys, str(db), "--session", sid)
    assert r["session_id"] == sid
    assert r["title"] == SESSIONS[sid]["title"]
    assert [q["context_tokens"] for q in r["requests"]] == SESSIONS[sid]["contexts"]
    assert (r["sessions_in_source"], r["session_chosen"]) == (3, "named")


def test_without_session_the_newest_and_the_report_says_there_are_three(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = report(capsys, str(db))
    assert (r["session_id"], r["sessions_in_source"], r["session_chosen"]) == (THIRD, 3, "newest")
    assert [q["context_tokens"] for q in r["requests"]] == [15_000]
    assert main(["report", str(db)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"session {THIRD}: the newest of 3 sessions here (choose another with --session ID)" in text
    assert main(["report", str(db), "--session", ORIGINAL]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"session {ORIGINAL} (named with --session, of 3 sessions here)" in text
    # the folder holding the database: the same choice
    assert report(capsys, str(db.parent), "--session", "ses_f0de500f8ffd")["session_id"] == SECOND


def test_a_prefix_only_one_id_has_names_it(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for prefix, sid in (
        ("ses_f0de500f8ffd", SECOND),
        ("ses_f0de500f8ffe", ORIGINAL),
        ("ses_f0de500f8ffcT", THIRD),
    ):
        r = report(capsys, str(db), "--session", prefix)
        assert (r["session_id"], [q["context_tokens"] for q in r["requests"]]) == (
            sid,
            SESSIONS[sid]["contexts"],
        )


def test_an_unknown_or_ambiguous_id_is_one_line_and_exit_2(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_line_error(capsys, ["report", str(db), "--session", "ses_nope"])
    assert line == (
        f"context-inspector: no session 'ses_nope' in opencode {db}; it holds 3 sessions: {THIRD}, {SECOND}, {ORIGINAL}"
    )
    line = one_line_error(capsys, ["report", str(db), "--session", "ses_f0de500f8ff"])
    assert line == (
        f"context-inspector: session 'ses_f0de500f8ff' is ambiguous in opencode {db}: "
        f"3 sessions begin with it: {THIRD}, {SECOND}, {ORIGINAL}"
    )
    assert "empty session id" in one_line_error(capsys, ["report", str(db), "--session", ""])


@pytest.mark.parametrize(
    "argv",
    [
        ["explain", "{db}", "msg_0f21b031b0014ZxYbhc4DxjZrb"],
        ["calibrate", "{db}"],
        ["findings", "{db}"],
        ["export", "{db}", "--format", "json"],
        ["{db}"],  # the app
    ],
    ids=["explain", "calibrate", "findings", "export", "app"],
)
def test_every_command_that_takes_a_path_refuses_an_unknown_id(
    db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{db}", str(db)) for a in argv]
    line = one_line_error(capsys, [*args, "--session", "nope"])
    assert f"no session 'nope' in opencode {db}; it holds 3 sessions: {THIRD}," in line


def test_every_command_that_takes_a_path_reads_the_named_session(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["findings", str(db), "--session", SECOND, "--json"]) == 0
    pressure = [f for f in json.loads(capsys.readouterr().out) if f["kind"] == "pressure"]
    assert [(f["request"], f["tokens"]) for f in pressure] == [(2, 1_500)]
    assert main(["findings", str(db), "--session", ORIGINAL, "--json"]) == 0
    pressure = [f for f in json.loads(capsys.readouterr().out) if f["kind"] == "pressure"]
    assert [(f["request"], f["tokens"]) for f in pressure] == [(2, 150)]

    assert main(["export", str(db), "--session", SECOND, "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["session_id"] == SECOND
    assert [q["context_tokens"] for q in exported["requests"]] == [1_200, 1_500]

    # one request: nothing to predict, said in one line (the third copy's own single report)
    assert main(["calibrate", str(db), "--session", THIRD, "--json"]) == 2
    assert "records token usage for 1 request" in capsys.readouterr().err
    assert main(["calibrate", str(db), "--session", SECOND, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["modes"]["proportional"]["n"] == 1  # the second of two

    # explain finds the second copy's message in that session only (its ids were re-keyed)
    copied = "msg_0f21b031b0014ZxYbhc4DxCP02"
    assert main(["explain", str(db), copied, "--session", SECOND]) == 0
    assert copied in capsys.readouterr().out
    assert main(["explain", str(db), copied, "--session", ORIGINAL]) == 2
    assert f"no message '{copied}'" in capsys.readouterr().err


@pytest.mark.parametrize("follow", [False, True])
def test_the_app_opens_the_named_session(
    db: Path, follow: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[tuple[Transcript | None, bool]] = []

    def run_app(transcript: Transcript | None, *args: Any, follower: Any = None, **kwargs: Any) -> None:
        opened.append((transcript, follower is not None))

    monkeypatch.setattr("inspector.tui.run_app", run_app)
    before = fingerprint(db.parent)
    flag = "--follow" if follow else "--no-follow"
    assert main([str(db), "--session", "ses_f0de500f8ffd", flag]) == 0
    assert main([str(db), flag]) == 0
    assert main([str(db.parent), "--session", ORIGINAL, flag]) == 0  # the folder holding it
    got = [
        (
            t.session_id if t else None,
            [q.usage.context if q.usage else None for q in t.requests] if t else [],
            f,
        )
        for t, f in opened
    ]
    assert got == [
        (SECOND, [1_200, 1_500], follow),
        (THIRD, [15_000], follow),
        (ORIGINAL, [120, 150], follow),
    ]
    assert fingerprint(db.parent) == before  # read, never written (no -wal, no -shm beside it)


def test_reading_every_session_leaves_the_database_as_it_was(db: Path) -> None:
    before = fingerprint(db.parent)
    for sid in NEWEST_FIRST:
        assert load(db, session=sid).session_id == sid
    assert fingerprint(db.parent) == before


# -- folders of Codex rollouts and of Claude Code sessions --------------------------------------
def session_folder(folder: Path, files: dict[str, str], ages: dict[str, int]) -> Path:
    """Corpus files copied into `folder` under the names given, modified `ages` minutes ago."""
    folder.mkdir(parents=True, exist_ok=True)
    now = 1_790_000_000
    for name, relative in files.items():
        target = folder / name
        shutil.copyfile(corpus_file(relative), target)
        os.utime(target, (now - ages[name] * 60, now - ages[name] * 60))
    return folder


@pytest.fixture
def codex_day(tmp_path: Path) -> Path:
    """`~/.codex/sessions` with two rollouts, in a day folder each (the older one first)."""
    root = tmp_path / "codex" / "sessions"
    session_folder(
        root / "2026" / "06" / "05",
        {"rollout-2026-06-05T04-58-20-019e9625.jsonl": CODEX_A},
        {"rollout-2026-06-05T04-58-20-019e9625.jsonl": 60},
    )
    session_folder(
        root / "2026" / "09" / "30",
        {"rollout-2026-09-30T10-00-00-01a0f21c.jsonl": CODEX_B},
        {"rollout-2026-09-30T10-00-00-01a0f21c.jsonl": 5},
    )
    return root


def test_a_folder_of_codex_rollouts(codex_day: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = folder_sessions(codex_day)
    assert [(s.id[:8], s.format) for s in found] == [("01a0f21c", "codex"), ("019e9625", "codex")]
    newest = report(capsys, str(codex_day))
    assert (newest["session_id"][:8], len(newest["requests"]), newest["sessions_in_source"]) == (
        "01a0f21c",
        2,
        2,
    )
    assert newest["session_chosen"] == "newest" and newest["path"].endswith("01a0f21c.jsonl")
    older = report(capsys, str(codex_day), "--session", "019e")
    assert (older["session_id"], len(older["requests"])) == ("019e9625-802f-7e91-840a-cfe88d14117a", 1)
    assert older["session_chosen"] == "named"
    # a day folder is a folder of rollouts too
    day = report(capsys, str(codex_day / "2026" / "06" / "05"))
    assert (day["session_id"][:8], day["sessions_in_source"]) == ("019e9625", 1)
    line = one_line_error(capsys, ["report", str(codex_day), "--session", "01"])
    assert line.endswith(
        f"session '01' is ambiguous in {codex_day}: 2 sessions begin with it: "
        "01a0f21c-5c40-7f72-9aa9-ef0b43570680, 019e9625-802f-7e91-840a-cfe88d14117a"
    )


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    """A Claude Code project folder: two sessions, a subagent file and a session's subagent folder."""
    folder = tmp_path / "projects" / "-work-proj"
    session_folder(
        folder,
        {"c45af7b1.jsonl": CLAUDE_A, "ba79134d.jsonl": CLAUDE_B},
        {"c45af7b1.jsonl": 30, "ba79134d.jsonl": 90},
    )
    (folder / "agent-0001.jsonl").write_bytes((folder / "c45af7b1.jsonl").read_bytes()[:2000])
    (folder / "c45af7b1" / "subagents").mkdir(parents=True)
    (folder / "c45af7b1" / "subagents" / "agent-a1.jsonl").write_bytes(b"{}\n")
    (folder / "notes.jsonl").write_text('{"role": "user", "content": "not a session"}\n')
    return folder


def test_a_claude_code_project_folder(claude_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = folder_sessions(claude_project)
    assert [(s.path.name, s.id[:8]) for s in found] == [
        ("c45af7b1.jsonl", "c45af7b1"),
        ("ba79134d.jsonl", "ba79134d"),
    ]
    newest = report(capsys, str(claude_project))
    assert (newest["session_id"][:8], len(newest["requests"]), newest["sessions_in_source"]) == (
        "c45af7b1",
        12,
        2,
    )
    older = report(capsys, str(claude_project), "--session", "ba79134d-b6e9-4867-af0c-6941038c9e4b")
    assert (older["session_id"][:8], len(older["requests"]), older["session_chosen"]) == (
        "ba79134d",
        24,
        "named",
    )
    assert older["path"] == str(claude_project / "ba79134d.jsonl")
    line = one_line_error(capsys, ["findings", str(claude_project), "--session", "zz"])
    assert line == (
        f"context-inspector: no session 'zz' in {claude_project}; it holds 2 sessions: "
        "c45af7b1-cb7c-4e51-93db-8cbb250a877a, ba79134d-b6e9-4867-af0c-6941038c9e4b"
    )


def test_a_folder_of_no_sessions_is_still_the_one_line_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    line = one_line_error(capsys, ["report", str(tmp_path), "--session", "x"])
    assert line == f"context-inspector: {tmp_path} is a folder that holds no session this inspector can read"


def test_a_file_of_one_session_takes_its_own_id_only(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_file(CLAUDE_A)
    assert (
        report(capsys, str(path), "--session", "c45a")["session_id"] == "c45af7b1-cb7c-4e51-93db-8cbb250a877a"
    )
    r = report(capsys, str(path))
    assert (r["sessions_in_source"], r["session_chosen"]) == (None, None)
    line = one_line_error(capsys, ["report", str(path), "--session", "ba79"])
    assert line == (
        f"context-inspector: no session 'ba79' in {path}; it holds 1 session: c45af7b1-cb7c-4e51-93db-8cbb250a877a"
    )


def test_match_session_rules() -> None:
    ids = ["ses_b2", "ses_a1", "ses_a10"]
    assert match_session(ids, "ses_a1", "x") == "ses_a1"  # exact, though another id begins with it
    assert match_session(ids, "ses_b", "x") == "ses_b2"
    with pytest.raises(
        LoaderError, match=r"^session 'ses_a' is ambiguous in x: 2 sessions begin with it: ses_a1, ses_a10$"
    ):
        match_session(ids, "ses_a", "x")
    many = [f"ses_{i:02}" for i in range(8)]
    with pytest.raises(
        LoaderError, match=r"it holds 8 sessions: ses_00, ses_01, ses_02, ses_03, ses_04 and 3 more$"
    ):
        match_session(many, "nope", "x")
    with pytest.raises(LoaderError, match=r"^no session 'x' in y: it holds no session$"):
        match_session([], "x", "y")


def test_a_json_storage_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The older opencode layout: sessions are files of a storage folder, chosen the same way."""
    from tests.unit.test_formats_opencode import write_storage

    storage = write_storage(tmp_path / "opencode")
    newest = report(capsys, str(storage))
    assert (newest["session_id"], newest["sessions_in_source"], newest["session_chosen"]) == (
        "ses_main",
        3,
        "newest",
    )
    old = report(capsys, str(storage), "--session", "ses_o")
    assert (old["session_id"], old["requests"], old["session_chosen"]) == ("ses_old", [], "named")
    line = one_line_error(capsys, ["report", str(storage), "--session", "ses_"])
    assert line.endswith("3 sessions begin with it: ses_child, ses_main, ses_old")


@pytest.mark.parametrize("flag", ["--follow", "--no-follow"])
def test_the_app_opens_a_session_of_a_folder(
    claude_project: Path, flag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[tuple[str, int, bool]] = []

    def run_app(transcript: Transcript | None, *args: Any, follower: Any = None, **kwargs: Any) -> None:
        assert transcript is not None
        opened.append((transcript.path, len(transcript.requests), follower is not None))

    monkeypatch.setattr("inspector.tui.run_app", run_app)
    assert main([str(claude_project), "--session", "ba79", flag]) == 0
    assert main([str(claude_project), flag]) == 0
    follow = flag == "--follow"
    assert opened == [
        (str(claude_project / "ba79134d.jsonl"), 24, follow),
        (str(claude_project / "c45af7b1.jsonl"), 12, follow),
    ]


def test_a_file_that_records_no_session_id_has_none_to_choose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    assert load(chat).session_id is None
    line = one_line_error(capsys, ["report", str(chat), "--session", "x"])
    assert line == (
        f"context-inspector: {chat} is one session that records no id: there is no session to choose with --session"
    )
