"""Session discovery over fake home folders for all four harnesses."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from inspector.live import SessionInfo, discover, sessions_table
from inspector.live import discovery as disc
from tests.conftest import corpus_file

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _at(path: Path, minutes_ago: float) -> None:
    t = (NOW - timedelta(minutes=minutes_ago)).timestamp()
    os.utime(path, (t, t))


def _jsonl(path: Path, records: list[dict[str, Any]], minutes_ago: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _at(path, minutes_ago)
    return path


def _cc_session(session: str, cwd: str, prompt: str, responses: int) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        {
            "type": "user",
            "uuid": "u0",
            "parentUuid": None,
            "sessionId": session,
            "cwd": cwd,
            "isMeta": True,
            "message": {"role": "user", "content": "<local-command-caveat>Caveat</local-command-caveat>"},
        },
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": "u0",
            "sessionId": session,
            "cwd": cwd,
            "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
        },
    ]
    parent = "u1"
    for i in range(responses):
        for part in range(3):  # one API call streamed as three lines, each below the one before
            recs.append(
                {
                    "type": "assistant",
                    "uuid": f"a{i}-{part}",
                    "parentUuid": parent,
                    "sessionId": session,
                    "requestId": f"req_{i}",
                    "message": {"id": f"msg_{i}", "role": "assistant", "content": []},
                }
            )
            parent = f"a{i}-{part}"
        # a subagent's message carried in a progress line, and an inline sidechain: not counted
        recs.append(
            {
                "type": "progress",
                "uuid": f"p{i}",
                "sessionId": session,
                "data": {"message": {"type": "assistant", "requestId": f"req_sub_{i}"}},
            }
        )
        recs.append(
            {
                "type": "assistant",
                "uuid": f"s{i}",
                "isSidechain": True,
                "sessionId": session,
                "requestId": f"req_side_{i}",
                "message": {"id": f"msg_side_{i}", "role": "assistant", "content": []},
            }
        )
    return recs



def _usage(last_in: int, last_out: int, total_in: int, total_out: int) -> dict[str, object]:
    """A Codex `token_count` info: the call's own usage and the session's total so far."""
    return {
        "last_token_usage": {"input_tokens": last_in, "output_tokens": last_out},
        "total_token_usage": {"input_tokens": total_in, "output_tokens": total_out},
    }

@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Path]:
    """A fake home with sessions of every harness, and a work folder with an OpenCollab run."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    projects = home / ".claude" / "projects"
    p = projects / "-work-proj"
    s1 = _jsonl(
        p / "11111111-aaaa.jsonl",
        [
            {"type": "summary", "summary": "Fix the flaky test", "leafUuid": "x"},
            *_cc_session("11111111-aaaa", "/work/proj", "first prompt line\nsecond line", 3),
        ],
        minutes_ago=10,
    )
    # parts of a session, never sessions themselves
    _jsonl(p / "agent-beside.jsonl", [{"type": "user", "sessionId": "11111111-aaaa"}], 0.1)
    _jsonl(p / "11111111-aaaa" / "subagents" / "agent-a1.jsonl", [{"type": "user"}], 0.1)
    _jsonl(p / "11111111-aaaa" / "subagents" / "agent-acompact-9.jsonl", [{"type": "user"}], 0.1)
    (p / "11111111-aaaa" / "tool-results").mkdir()
    (p / "notes.txt").write_text("not a session")
    s2 = _jsonl(
        projects / "-home-kyle-my-app" / "22222222-bbbb.jsonl",
        [{"type": "user", "uuid": "u", "sessionId": "22222222-bbbb", "message": {"content": "hi"}}],
        minutes_ago=0.5,  # live
    )
    s3 = _jsonl(
        home / ".config" / "claude" / "projects" / "-srv" / "33333333-cccc.jsonl",
        [
            *_cc_session("33333333-cccc", "/srv", "from the xdg config dir", 1),
            {"type": "ai-title", "aiTitle": "An AI title written later", "sessionId": "33333333-cccc"},
        ],
        minutes_ago=30,
    )
    codex = _jsonl(
        home / ".codex" / "sessions" / "2026" / "02" / "28" / "rollout-2026-02-28T10-00-00-0199.jsonl",
        [
            {
                "timestamp": "2026-02-28T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "0199-thread", "cwd": "/work/codex-proj", "originator": "codex_cli_rs"},
            },
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "<environment_context>x</environment_context>"}
                    ],
                },
            },
            {"type": "event_msg", "payload": {"type": "user_message", "message": "Rename the module"}},
            # two calls whose output is not in the history, counted as the reader counts them
            # (an all-zero report is no call; `info: null` is no report)
            {"type": "event_msg", "payload": {"type": "token_count", "info": _usage(100, 5, 100, 5)}},
            {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
            {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {}}}},
            {"type": "event_msg", "payload": {"type": "token_count", "info": _usage(120, 7, 220, 12)}},
        ],
        minutes_ago=60,
    )
    (home / ".codex" / "sessions" / "2026" / "02" / "28" / "notes.jsonl").write_text("{}\n")
    oc_root = home / ".local" / "share" / "opencode"
    oc_root.mkdir(parents=True)
    db = oc_root / "opencode.db"
    _make_opencode_db(db)
    _at(db, 5)
    legacy = oc_root / "storage" / "session" / "proj-hash" / "ses_legacy1.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"id": "ses_legacy1", "title": "Old JSON session", "directory": "/old"}))
    _at(legacy, 600)
    msg = oc_root / "storage" / "message" / "ses_legacy1" / "msg_1.json"
    msg.parent.mkdir(parents=True)
    msg.write_text('{"role":"user"}')
    _at(msg, 500)
    run = work / ".opencollab" / "sessions" / "2026-03-01T11-00-00-abc123"
    run.mkdir(parents=True)
    snap = run / "agent_1_coder.json"
    snap.write_text(
        json.dumps({"aid": 1, "role": "coder", "session_state": {"step_count": 4}, "messages": []}, indent=2)
    )
    _at(snap, 20)
    journal = run / "agent_1_coder.json.journal"
    journal.write_text(json.dumps({"sequence": 5, "meta": {"session_state": {"step_count": 7}}}) + "\n")
    _at(journal, 2)
    (run / "agent_1_coder.json.journal.lock").write_text("")
    (run / "team.json").write_text("{}")
    return {
        "home": home,
        "work": work,
        "s1": s1,
        "s2": s2,
        "s3": s3,
        "codex": codex,
        "db": db,
        "legacy": legacy,
        "snap": snap,
    }


def _make_opencode_db(db: Path) -> None:
    con = sqlite3.connect(db)
    con.executescript(
        """
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT,
            directory TEXT, title TEXT, version TEXT, time_created INTEGER, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
            time_updated INTEGER, data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
            time_created INTEGER, time_updated INTEGER, data TEXT);
        """
    )
    t_new = int((NOW - timedelta(minutes=3)).timestamp() * 1000)
    t_old = int((NOW - timedelta(days=2)).timestamp() * 1000)
    con.execute(
        "INSERT INTO session VALUES ('ses_b','p',NULL,'s','/work/oc','Add the cache','1',?,?)", (t_new, t_new)
    )
    con.execute(
        "INSERT INTO session VALUES ('ses_a','p',NULL,'s','/work/oc','Older one','1',?,?)", (t_old, t_old)
    )
    for i, (sid, role) in enumerate(
        [("ses_b", "user"), ("ses_b", "assistant"), ("ses_b", "assistant"), ("ses_a", "user")]
    ):
        con.execute(
            "INSERT INTO message VALUES (?,?,0,0,?)",
            (f"msg_{i}", sid, json.dumps({"role": role}, separators=(",", ":"))),
        )
        con.execute(
            "INSERT INTO part VALUES (?,?,?,0,0,?)",
            (f"prt_{i}", f"msg_{i}", sid, '{"type":"text","text":"x"}'),
        )
    con.commit()
    con.close()


def _by_path(rows: list[SessionInfo]) -> dict[tuple[str, str | None], SessionInfo]:
    return {(r.path.name, r.session_id): r for r in rows}


def test_finds_every_harness_newest_first(world: dict[str, Path]) -> None:
    rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    names = [(r.harness, r.path.name, r.session_id) for r in rows]
    assert names == [
        ("claude-code", "22222222-bbbb.jsonl", "22222222-bbbb"),  # 0.5 min ago
        ("opencollab", "agent_1_coder.json", "2026-03-01T11-00-00-abc123/agent_1"),  # journal: 2 min
        ("opencode", "opencode.db", "ses_b"),  # 3 min
        ("claude-code", "11111111-aaaa.jsonl", "11111111-aaaa"),  # 10 min
        ("claude-code", "33333333-cccc.jsonl", "33333333-cccc"),  # 30 min
        ("codex", world["codex"].name, "0199-thread"),  # 60 min
        ("opencode", "ses_legacy1.json", "ses_legacy1"),  # 500 min (its newest message)
        ("opencode", "opencode.db", "ses_a"),  # 2 days
    ]
    assert [r.last_activity for r in rows] == sorted((r.last_activity for r in rows), reverse=True)


def test_details_of_each_harness(world: dict[str, Path]) -> None:
    rows = _by_path(discover(env={}, cwd=world["work"], home=world["home"], now=NOW))
    s1 = rows[("11111111-aaaa.jsonl", "11111111-aaaa")]
    assert s1.project == "/work/proj"
    assert s1.title == "Fix the flaky test"  # the summary line wins over the first prompt
    assert s1.requests == 3  # distinct requests, not the 9 streamed lines, no sidechain, no progress
    assert not s1.live and s1.size_bytes == world["s1"].stat().st_size
    s2 = rows[("22222222-bbbb.jsonl", "22222222-bbbb")]
    assert s2.live and s2.title == "hi" and s2.requests == 0
    assert s2.project == "/home/kyle/my/app"  # no record names the cwd: decoded from the folder name
    s3 = rows[("33333333-cccc.jsonl", "33333333-cccc")]
    assert s3.title == "An AI title written later" and s3.project == "/srv"
    cx = rows[(world["codex"].name, "0199-thread")]
    assert (cx.project, cx.title, cx.requests) == ("/work/codex-proj", "Rename the module", 2)
    db = rows[("opencode.db", "ses_b")]
    assert (db.project, db.title, db.requests, db.live) == ("/work/oc", "Add the cache", 2, False)
    assert db.last_activity == NOW - timedelta(minutes=3)
    legacy = rows[("ses_legacy1.json", "ses_legacy1")]
    assert (legacy.project, legacy.title) == ("/old", "Old JSON session")
    collab = rows[("agent_1_coder.json", "2026-03-01T11-00-00-abc123/agent_1")]
    assert collab.requests == 7  # the journal's newer step count
    assert collab.project == str(world["work"])
    assert collab.last_activity == NOW - timedelta(minutes=2)  # the journal is newer than the snapshot
    assert collab.title is not None and "coder" in collab.title


def test_agent_files_and_subagent_folders_are_not_sessions(world: dict[str, Path]) -> None:
    rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    names = {r.path.name for r in rows}
    assert not any(n.startswith("agent-") for n in names)
    assert "notes.jsonl" not in names and "team.json" not in names
    assert not any("subagents" in r.path.parts for r in rows)


def test_live_is_the_last_60_seconds(world: dict[str, Path]) -> None:
    rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    assert [r.path.name for r in rows if r.live] == ["22222222-bbbb.jsonl"]
    later = discover(env={}, cwd=world["work"], home=world["home"], now=NOW + timedelta(seconds=45))
    assert [r.path.name for r in later if r.live] == []


def test_environment_overrides_replace_the_home_locations(world: dict[str, Path], tmp_path: Path) -> None:
    alt = tmp_path / "alt"
    cc = _jsonl(
        alt / "claude" / "projects" / "-x" / "44444444-dddd.jsonl",
        _cc_session("44444444-dddd", "/x", "override prompt", 2),
        minutes_ago=1,
    )
    cx = _jsonl(
        alt / "codex" / "sessions" / "2026" / "03" / "01" / "rollout-2026-03-01T00-00-00-abcd.jsonl",
        [{"type": "session_meta", "payload": {"id": "t2", "cwd": "/y"}}],
        minutes_ago=2,
    )
    (alt / "data" / "opencode").mkdir(parents=True)
    _make_opencode_db(alt / "data" / "opencode" / "opencode.db")
    env = {
        "CLAUDE_CONFIG_DIR": str(alt / "claude"),
        "CODEX_HOME": str(alt / "codex"),
        "XDG_DATA_HOME": str(alt / "data"),
    }
    rows = discover(env=env, cwd=tmp_path / "nowhere", home=world["home"], now=NOW)
    by_harness: dict[str, set[Path]] = {}
    for r in rows:
        by_harness.setdefault(r.harness, set()).add(r.path)
    assert by_harness == {
        "claude-code": {cc},
        "codex": {cx},
        "opencode": {alt / "data" / "opencode" / "opencode.db"},
    }
    first = rows[0]
    assert (first.path, first.title, first.requests, first.project) == (cc, "override prompt", 2, "/x")


def test_a_relative_xdg_data_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG spec: a relative `XDG_DATA_HOME` is ignored, so opencode is looked for under
    `~/.local/share`, not under a folder relative to wherever the command runs."""
    home = tmp_path / "home"
    (home / ".local" / "share" / "opencode").mkdir(parents=True)
    _make_opencode_db(home / ".local" / "share" / "opencode" / "opencode.db")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel" / "opencode").mkdir(parents=True)
    _make_opencode_db(tmp_path / "rel" / "opencode" / "opencode.db")
    rows = discover(env={"XDG_DATA_HOME": "rel"}, cwd=tmp_path / "nowhere", home=home, now=NOW)
    assert {r.path for r in rows if r.harness == "opencode"} == {home / ".local" / "share" / "opencode" / "opencode.db"}


def test_home_comes_from_the_environment_when_not_given(world: dict[str, Path]) -> None:
    rows = discover(env={"HOME": str(world["home"])}, cwd=world["work"], now=NOW)
    assert len(rows) == 8


def test_nothing_there_is_an_empty_list(tmp_path: Path) -> None:
    assert discover(env={}, cwd=tmp_path / "no", home=tmp_path / "no-home", now=NOW) == []


def test_a_file_where_a_folder_is_expected_is_skipped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").write_text("not a folder")
    (home / ".codex").mkdir()
    (home / ".codex" / "sessions").write_text("")
    (home / ".local" / "share").mkdir(parents=True)
    (home / ".local" / "share" / "opencode").write_text("")
    work = tmp_path / "work"
    (work / ".opencollab").mkdir(parents=True)
    (work / ".opencollab" / "sessions").write_text("")
    good = _jsonl(
        home / ".config" / "claude" / "projects" / "-p" / "s.jsonl", _cc_session("s", "/p", "ok", 1), 1
    )
    assert [r.path for r in discover(env={}, cwd=work, home=home, now=NOW)] == [good]


def test_an_unreadable_folder_is_skipped(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run as root, where chmod does not deny reads: the OSError is injected instead."""
    denied = world["home"] / ".claude" / "projects" / "-work-proj"
    real = disc._os_scandir

    def scandir(path: Any) -> Iterator[os.DirEntry[str]]:
        if Path(path) in (denied, world["home"] / ".codex" / "sessions"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(disc, "_os_scandir", scandir)
    rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    names = {r.path.name for r in rows}
    assert "11111111-aaaa.jsonl" not in names and not any(r.harness == "codex" for r in rows)
    assert {"22222222-bbbb.jsonl", "33333333-cccc.jsonl", "opencode.db"} <= names


def test_a_chmod_000_folder_never_breaks_discovery(world: dict[str, Path]) -> None:
    folder = world["home"] / ".claude" / "projects" / "-work-proj"
    os.chmod(folder, 0)
    try:
        rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    finally:
        os.chmod(folder, 0o755)
    names = {r.path.name for r in rows}
    assert {"22222222-bbbb.jsonl", "33333333-cccc.jsonl"} <= names  # (root still reads the 000 one)


def test_an_unreadable_file_is_listed_without_details(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = disc._open_binary

    def open_binary(path: Path) -> Any:
        if path == world["s1"]:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(disc, "_open_binary", open_binary)
    rows = _by_path(discover(env={}, cwd=world["work"], home=world["home"], now=NOW))
    s1 = rows[("11111111-aaaa.jsonl", "11111111-aaaa")]
    assert (s1.title, s1.requests, s1.project) == (None, None, "/work/proj")


def test_a_broken_opencode_database_is_one_entry(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".local" / "share" / "opencode"
    root.mkdir(parents=True)
    (root / "opencode-beta.db").write_bytes(b"this is not sqlite" * 100)
    rows = discover(env={}, cwd=tmp_path, home=home, now=NOW)
    assert [(r.harness, r.path.name, r.session_id, r.requests) for r in rows] == [
        ("opencode", "opencode-beta.db", None, None)
    ]


def test_reading_a_database_changes_nothing_beside_it(world: dict[str, Path]) -> None:
    root = world["db"].parent
    before = {p.name: p.stat().st_mtime_ns for p in root.iterdir()}
    data = world["db"].read_bytes()
    discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    assert {p.name: p.stat().st_mtime_ns for p in root.iterdir()} == before
    assert world["db"].read_bytes() == data


def test_the_real_opencode_dump(tmp_path: Path) -> None:
    dump = corpus_file("opencode/lazyagents-opencode-1.18.33.sql")
    root = tmp_path / "home" / ".local" / "share" / "opencode"
    root.mkdir(parents=True)
    con = sqlite3.connect(root / "opencode.db")
    con.executescript(dump.read_text())
    con.close()
    rows = discover(env={}, cwd=tmp_path, home=tmp_path / "home", now=NOW)
    assert len(rows) == 1
    r = rows[0]
    assert (r.harness, r.project, r.requests) == ("opencode", "/work/proj", 2)
    assert r.session_id is not None and r.session_id.startswith("ses_")


def test_big_files_are_sampled_not_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disc, "EXACT_COUNT_BYTES", 20_000)
    monkeypatch.setattr(disc, "SAMPLE_BYTES", 8_000)
    home = tmp_path / "home"
    path = _jsonl(home / ".claude" / "projects" / "-p" / "big.jsonl", _cc_session("big", "/p", "go", 400), 1)
    assert path.stat().st_size > 100_000
    (r,) = discover(env={}, cwd=tmp_path, home=home, now=NOW)
    assert r.requests_estimated and r.requests is not None
    assert abs(r.requests - 400) / 400 < 0.2
    assert r.title == "go" and r.project == "/p"


def test_a_codex_session_meta_longer_than_the_head_still_gives_the_cwd(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / ".codex" / "sessions" / "2026" / "01" / "01" / "rollout-2026-01-01T00-00-00-z.jsonl"
    _jsonl(
        path,
        [
            {
                "type": "session_meta",
                "payload": {
                    "id": "z",
                    "cwd": "/long/\u00e9t\u00e9",
                    "base_instructions": {"text": "x" * 200_000},
                },
            }
        ],
        1,
    )
    (r,) = discover(env={}, cwd=tmp_path, home=home, now=NOW)
    assert r.project == "/long/\u00e9t\u00e9"


def test_sessions_table_is_plain_json(world: dict[str, Path]) -> None:
    rows = discover(env={}, cwd=world["work"], home=world["home"], now=NOW)
    table = sessions_table(rows)
    assert json.loads(json.dumps(table)) == table
    first = table[0]
    assert set(first) == {
        "harness",
        "path",
        "project",
        "size_bytes",
        "requests",
        "requests_estimated",
        "last_activity",
        "live",
        "title",
        "session_id",
    }
    assert first["path"] == str(world["s2"]) and first["live"] is True
    assert first["last_activity"].endswith("Z")
    assert datetime.fromisoformat(first["last_activity"].replace("Z", "+00:00")) == rows[0].last_activity


def test_a_database_of_three_sessions_is_three_rows(tmp_path: Path) -> None:
    """Each session its own row: its id, title, requests counted as the reader counts them (the
    copies' rows are JSON with spaces after ':' and still count), its own last update."""
    from tests.support.opencode_sessions import NEWEST_FIRST, SESSIONS, three_session_db

    db = three_session_db(tmp_path / "home" / ".local" / "share" / "opencode")
    rows = discover(env={}, cwd=tmp_path, home=tmp_path / "home", now=NOW)
    assert [(r.harness, r.path, r.session_id) for r in rows] == [
        ("opencode", db, sid) for sid in NEWEST_FIRST
    ]
    assert [r.title for r in rows] == [SESSIONS[sid]["title"] for sid in NEWEST_FIRST]
    assert [r.requests for r in rows] == [len(SESSIONS[sid]["contexts"]) for sid in NEWEST_FIRST] == [1, 2, 2]
    times = [r.last_activity for r in rows]
    assert times[0] - times[1] == times[1] - times[2] == timedelta(hours=1)
    table = sessions_table(rows)
    assert [(t["session_id"], t["requests"], t["path"]) for t in table] == [
        (sid, len(SESSIONS[sid]["contexts"]), str(db)) for sid in NEWEST_FIRST
    ]


def test_the_sessions_command_lists_each_session_of_a_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from inspector.cli import main
    from tests.support.opencode_sessions import NEWEST_FIRST, three_session_db

    db = three_session_db(tmp_path / "xdg" / "opencode")
    for var, value in (
        ("HOME", tmp_path),
        ("XDG_DATA_HOME", tmp_path / "xdg"),
        ("CLAUDE_CONFIG_DIR", tmp_path / "c"),
        ("CODEX_HOME", tmp_path / "x"),
    ):
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)
    assert main(["sessions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["harness"], r["session_id"], r["requests"]) for r in listed] == [
        ("opencode", NEWEST_FIRST[0], 1),
        ("opencode", NEWEST_FIRST[1], 2),
        ("opencode", NEWEST_FIRST[2], 2),
    ]
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["sessions"]) == 0
    text = capsys.readouterr().out
    for sid in NEWEST_FIRST:  # the text table says how to open each one
        assert f"{db} --session {sid}" in text
