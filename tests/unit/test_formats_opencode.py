"""The opencode reader: the SQLite database (restored from the corpus dump), JSON-folder storage,
compaction and prune records, session choice, and never touching a live database."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from inspector.formats import load
from inspector.formats.base import LoaderError
from inspector.formats.codex import CodexFormat
from inspector.formats.detect import detect, read_head
from inspector.formats.generic import GenericChatFormat
from inspector.formats.opencode import (
    CLEARED_TEXT,
    INTERRUPTED_TEXT,
    OpencodeFormat,
    list_sessions,
    load_opencode,
)
from inspector.model import EventKind, ReasoningBlock, Role, SourceKind, ToolCallBlock, Transcript

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
DUMP = "lazyagents-opencode-1.18.33.sql"
LEGACY_PART = "sessions-chronicle-legacy-part.json"
SESSION = "ses_f0de500f8ffeXvsiYJDOg5JtrU"


def corpus(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent): a fresh clone has no ../shared/corpus")
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The corpus dump restored into a database of its own."""
    sql = corpus("opencode", DUMP).read_text(encoding="utf-8")
    path = tmp_path / "opencode" / "opencode.db"
    path.parent.mkdir()
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.close()
    return path


def fingerprint(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


# -- the corpus database ---------------------------------------------------------------------------
def check_lazyagents(t: Transcript) -> None:
    assert t.format == "opencode"
    assert t.load_issues == []
    assert t.session_id == SESSION
    assert t.title == "The command printed fixture."
    assert t.model == "fake-model"
    assert t.window is None  # opencode does not store it
    assert [m.role for m in t.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    task, call, result, answer = t.messages
    assert task.id == "msg_0f21aff2e001y84CAhBLtC5Dm9"
    assert task.source.kind is SourceKind.TASK and task.text == '"run echo fixture please"'
    assert call.tool_calls == (
        ToolCallBlock(id="call_1", name="bash", arguments={"command": "echo fixture"}),
    )
    (res,) = result.tool_results
    assert (res.call_id, res.tool_name, res.content, res.is_error) == ("call_1", "bash", "fixture\n", False)
    assert result.id == "prt_0f21b02d5001NcGUD0hmNfrPyr"
    assert answer.text == "The command printed fixture."
    assert len(t.requests) == 2
    r1, r2 = t.requests
    assert (r1.ledger_len, r1.response_id, r1.stop_reason) == (1, call.id, "tool-calls")
    assert r1.usage is not None
    assert (r1.usage.input, r1.usage.cache_read, r1.usage.output, r1.usage.context) == (120, 0, 8, 120)
    assert (r2.ledger_len, r2.response_id, r2.stop_reason) == (3, answer.id, "stop")
    assert r2.usage is not None
    assert (r2.usage.input, r2.usage.cache_read, r2.usage.output, r2.usage.context) == (50, 100, 6, 150)
    assert [len(s.message_ids) for s in t.segments] == [4]
    assert t.events == [] and t.subagents == []


def test_restored_corpus_database_loads(db: Path) -> None:
    check_lazyagents(load_opencode(db))


def test_folder_holding_the_database_loads(db: Path) -> None:
    check_lazyagents(load_opencode(db.parent))
    check_lazyagents(load(db.parent))
    check_lazyagents(load(db))
    assert detect(db.parent).format == "opencode"


def test_detection_picks_opencode_for_database_and_legacy_part(db: Path) -> None:
    part = corpus("opencode", LEGACY_PART)
    for path in (db, part):
        assert detect(path).format == "opencode"
        head = read_head(path)
        assert not CodexFormat().sniff(path, head)
        assert not GenericChatFormat().sniff(path, head)
    assert OpencodeFormat().load(db).requests[1].usage is not None


def test_opencode_sniff_rejects_claude_code_and_codex_files() -> None:
    fmt = OpencodeFormat()
    files = sorted(corpus("claude-code").rglob("*.jsonl")) + sorted(corpus("codex").glob("*.jsonl"))
    for path in files:
        assert not fmt.sniff(path, read_head(path)), path
    assert not fmt.sniff(corpus("opencode", DUMP), read_head(corpus("opencode", DUMP)))


def test_loading_never_changes_the_database(db: Path) -> None:
    before = fingerprint(db)
    load_opencode(db)
    OpencodeFormat().sniff(db, read_head(db))
    assert fingerprint(db) == before
    assert sorted(os.listdir(db.parent)) == ["opencode.db"]


def test_loading_while_a_writer_holds_a_write_transaction(db: Path) -> None:
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE session SET title = 'renamed, not committed'")
        before = fingerprint(db)
        t = load_opencode(db)
        assert t.title == "The command printed fixture."  # the uncommitted change is not seen
        assert len(t.requests) == 2
        assert fingerprint(db) == before
        writer.execute("ROLLBACK")
    finally:
        writer.close()


def test_live_wal_database_is_read_without_writing(db: Path) -> None:
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    con.close()
    before = fingerprint(db)
    check_lazyagents(load_opencode(db))
    assert sorted(os.listdir(db.parent)) == ["opencode.db"]  # no -wal/-shm created by reading
    assert fingerprint(db) == before
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE session SET title = 'committed later'")
        before = fingerprint(db)
        assert load_opencode(db).title == "The command printed fixture."
        assert fingerprint(db) == before
        writer.execute("COMMIT")
        assert load_opencode(db).title == "committed later"  # read through the WAL
    finally:
        writer.close()


def test_read_only_database_file(db: Path) -> None:
    db.chmod(0o444)
    db.parent.chmod(0o555)
    try:
        check_lazyagents(load_opencode(db))
    finally:
        db.parent.chmod(0o755)
        db.chmod(0o644)


def insert_session(
    con: sqlite3.Connection, sid: str, title: str, updated: int, parent: str | None = None
) -> None:
    con.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
        " VALUES (?, 'global', ?, 'slug', '/work/proj', ?, '1.18.33', ?, ?)",
        (sid, parent, title, updated - 10, updated),
    )


def insert_message(
    con: sqlite3.Connection,
    sid: str,
    mid: str,
    created: int,
    data: dict[str, Any],
    parts: list[tuple[str, dict[str, Any]]],
) -> None:
    con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, created, created, json.dumps(data)))
    for n, (pid, pdata) in enumerate(parts):
        con.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
            (pid, mid, sid, created + n, created + n, json.dumps(pdata)),
        )


def test_several_sessions_newest_first_and_pick_by_id(db: Path) -> None:
    con = sqlite3.connect(db)
    insert_session(con, "ses_newer", "a newer session", 1790768260000)
    insert_message(
        con,
        "ses_newer",
        "msg_n1",
        1790768255000,
        {"role": "user", "time": {"created": 1790768255000}},
        [
            ("prt_n1", {"type": "text", "text": "hello again"}),
        ],
    )
    finish = {
        "type": "step-finish",
        "reason": "stop",
        "tokens": {"input": 7, "output": 3, "reasoning": 0, "cache": {"read": 900, "write": 40}},
    }
    insert_message(
        con,
        "ses_newer",
        "msg_n2",
        1790768256000,
        {
            "role": "assistant",
            "parentID": "msg_n1",
            "modelID": "m2",
            "time": {"created": 1790768256000, "completed": 1790768257000},
        },
        [("prt_n2", {"type": "step-start"}), ("prt_n3", {"type": "text", "text": "hi"}), ("prt_n4", finish)],
    )
    insert_session(con, "ses_child", "a subagent", 1790768270000, parent="ses_newer")  # newest, but a child
    insert_message(
        con,
        "ses_child",
        "msg_c1",
        1790768265000,
        {"role": "user", "time": {"created": 1790768265000}},
        [
            ("prt_c1", {"type": "text", "text": "explore"}),
        ],
    )
    con.execute("UPDATE part SET data = '{broken' WHERE id = 'prt_n3'")
    con.commit()
    con.close()

    t = load_opencode(db)
    assert t.session_id == "ses_newer"
    assert [i.line for i in t.load_issues] == [
        sqlite3.connect(db).execute("SELECT rowid FROM part WHERE id = 'prt_n3'").fetchone()[0]
    ]
    assert "part prt_n3" in t.load_issues[0].reason
    assert t.requests[0].usage is not None and t.requests[0].usage.context == 947
    assert t.requests[0].response_id is None  # its only content part was unreadable
    assert [(s.agent_id, s.messages) for s in t.subagents] == [("ses_child", 1)]

    old = OpencodeFormat().load(db, session_id=SESSION)
    check_lazyagents(old)
    assert [s.id for s in list_sessions(db)] == ["ses_child", "ses_newer", SESSION]
    with pytest.raises(
        LoaderError,
        match=r"no session 'ses_nope' in opencode .*; it holds 3 sessions: ses_child, ses_newer, ses_f0de",
    ):
        load_opencode(db, session_id="ses_nope")
    assert load_opencode(db, session_id="ses_ne").session_id == "ses_newer"  # a prefix only it has
    assert (t.sessions_in_source, t.session_named, old.session_named) == (3, False, True)


# -- a synthetic session with steps, prune and compaction, in both stores ---------------------------------
T0 = 1790768250000


def tool(call: str, name: str, inp: dict[str, Any], output: str, **time: int) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool": name,
        "callID": call,
        "state": {
            "status": "completed",
            "input": inp,
            "output": output,
            "title": name,
            "time": {"start": T0, "end": T0, **time},
        },
    }


def finish(inp: int, read: int, out: int, reason: str = "stop") -> dict[str, Any]:
    return {
        "type": "step-finish",
        "reason": reason,
        "tokens": {"input": inp, "output": out, "reasoning": 0, "cache": {"read": read, "write": 0}},
    }


def assistant(parent: str, created: int, completed: int, **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parentID": parent,
        "modelID": "claude-x",
        "providerID": "anthropic",
        "time": {"created": T0 + created, "completed": T0 + completed},
        **extra,
    }


def user(created: int) -> dict[str, Any]:
    return {
        "role": "user",
        "time": {"created": T0 + created},
        "agent": "build",
        "model": {"providerID": "anthropic", "modelID": "claude-x"},
    }


SIG = {"anthropic": {"signature": "s" * 64}}
MESSAGES: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]]]] = [
    ("msg_01", user(0), [("prt_01a", {"type": "text", "text": "fix the parser bug"})]),
    (
        "msg_02",
        assistant("msg_01", 100, 500, finish="stop"),
        [
            ("prt_02a", {"type": "step-start"}),
            ("prt_02b", {"type": "reasoning", "text": "look first", "metadata": SIG}),
            (
                "prt_02c",
                tool("call_read", "read", {"filePath": "a.py"}, "def parse(): ...", compacted=T0 + 2500),
            ),
            ("prt_02d", finish(100, 2000, 30, "tool-calls")),
            ("prt_02e", {"type": "step-start"}),
            (
                "prt_02f",
                {
                    "type": "tool",
                    "tool": "bash",
                    "callID": "call_bash",
                    "state": {
                        "status": "error",
                        "input": {"command": "pytest"},
                        "error": "exit 1",
                        "time": {"start": T0, "end": T0},
                    },
                },
            ),
            ("prt_02g", finish(50, 2100, 20, "tool-calls")),
            ("prt_02h", {"type": "step-start"}),
            ("prt_02i", {"type": "text", "text": "Fixed."}),
            ("prt_02j", {"type": "patch", "hash": "abc", "files": ["a.py"]}),
            ("prt_02k", finish(40, 2200, 5)),
        ],
    ),
    ("msg_03", user(1000), [("prt_03a", {"type": "text", "text": "now add tests"})]),
    (
        "msg_04",
        assistant("msg_03", 1100, 2000, finish="tool-calls"),
        [
            ("prt_04a", {"type": "step-start"}),
            ("prt_04b", {"type": "text", "text": "Loading the testing skill."}),
            ("prt_04c", tool("call_skill", "skill", {"name": "testing"}, "# Testing skill\nuse pytest")),
            (
                "prt_04d",
                {
                    "type": "tool",
                    "tool": "task",
                    "callID": "call_task",
                    "state": {
                        "status": "completed",
                        "input": {"prompt": "find tests"},
                        "output": "tests/ has 3 files",
                        "metadata": {"sessionId": "ses_child"},
                        "time": {"start": T0, "end": T0},
                    },
                },
            ),
            (
                "prt_04e",
                {
                    "type": "tool",
                    "tool": "grep",
                    "callID": "call_grep",
                    "state": {"status": "running", "input": {"pattern": "x"}, "time": {"start": T0}},
                },
            ),
            ("prt_04f", finish(60, 2400, 40, "tool-calls")),
        ],
    ),
    (
        "msg_05",
        user(3000),
        [("prt_05a", {"type": "compaction", "auto": True, "overflow": False, "tail_start_id": "msg_03"})],
    ),
    (
        "msg_06",
        assistant("msg_05", 3100, 3500, finish="stop", summary=True, mode="compaction", agent="compaction"),
        [
            ("prt_06a", {"type": "step-start"}),
            ("prt_06b", {"type": "text", "text": "## Objective\nfix the parser"}),
            ("prt_06c", finish(2600, 0, 300)),
        ],
    ),
    (
        "msg_07",
        user(4000),
        [
            (
                "prt_07a",
                {
                    "type": "text",
                    "text": "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.",
                    "synthetic": True,
                },
            )
        ],
    ),
    (
        "msg_08",
        assistant("msg_07", 4100, 4500, finish="stop"),
        [
            ("prt_08a", {"type": "step-start"}),
            ("prt_08b", {"type": "text", "text": "Tests added."}),
            ("prt_08c", finish(30, 1500, 8)),
        ],
    ),
]


def write_storage(root: Path) -> Path:
    """The synthetic session in the 0.6-1.1 JSON-folder layout; returns the storage folder."""
    storage = root / "storage"

    def put(path: Path, value: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2))

    put(
        storage / "session" / "global" / "ses_main.json",
        {
            "id": "ses_main",
            "projectID": "global",
            "directory": "/w",
            "title": "parser fix",
            "time": {"created": T0, "updated": T0 + 5000},
        },
    )
    put(
        storage / "session" / "global" / "ses_old.json",
        {
            "id": "ses_old",
            "projectID": "global",
            "directory": "/w",
            "title": "older",
            "time": {"created": T0 - 9000, "updated": T0 - 8000},
        },
    )
    put(
        storage / "session" / "global" / "ses_child.json",
        {
            "id": "ses_child",
            "parentID": "ses_main",
            "projectID": "global",
            "directory": "/w",
            "title": "find tests",
            "time": {"created": T0 + 1200, "updated": T0 + 9000},
        },
    )
    put(
        storage / "message" / "ses_old" / "msg_00.json",
        {"id": "msg_00", "sessionID": "ses_old", **user(-9000)},
    )
    put(
        storage / "part" / "msg_00" / "prt_00.json",
        {
            "id": "prt_00",
            "sessionID": "ses_old",
            "messageID": "msg_00",
            "type": "text",
            "text": "old question",
        },
    )
    put(
        storage / "message" / "ses_child" / "msg_c1.json",
        {"id": "msg_c1", "sessionID": "ses_child", **user(1200)},
    )
    for mid, data, parts in MESSAGES:
        put(storage / "message" / "ses_main" / f"{mid}.json", {"id": mid, "sessionID": "ses_main", **data})
        for pid, pdata in parts:
            put(
                storage / "part" / mid / f"{pid}.json",
                {"id": pid, "sessionID": "ses_main", "messageID": mid, **pdata},
            )
    return storage


def write_db(db: Path) -> None:
    """The same synthetic session added to the restored corpus database."""
    con = sqlite3.connect(db)
    insert_session(con, "ses_main", "parser fix", T0 + 50000)
    insert_session(con, "ses_child", "find tests", T0 + 90000, parent="ses_main")
    insert_message(
        con,
        "ses_child",
        "msg_c1",
        T0 + 1200,
        user(1200),
        [("prt_c1", {"type": "text", "text": "find tests"})],
    )
    for mid, data, parts in MESSAGES:
        insert_message(con, "ses_main", mid, data["time"]["created"], data, parts)
    con.commit()
    con.close()


def check_synthetic(t: Transcript) -> None:
    assert t.load_issues == []
    assert t.session_id == "ses_main" and t.title == "parser fix" and t.model == "claude-x"
    ids = [m.id for m in t.messages]
    assert ids == [
        "msg_01",
        "msg_02", "prt_02c",  # step 1: reasoning + read call, its result
        "prt_02e", "prt_02f",  # step 2: bash call, its error
        "prt_02h",  # step 3: text
        "msg_03",
        "msg_04", "prt_04c", "prt_04d", "prt_04e",
        "msg_05", "msg_06", "msg_07", "msg_08",
    ]  # fmt: skip
    m = t.message
    assert m("msg_01").source.kind is SourceKind.TASK
    reasoning = m("msg_02").blocks[0]
    assert isinstance(reasoning, ReasoningBlock) and reasoning.signed and reasoning.signature_chars == 64
    assert m("prt_02c").tool_results[0].content == "def parse(): ..."  # pruned later; the ledger keeps it
    assert m("prt_02f").tool_results[0].is_error and m("prt_02f").tool_results[0].content == "exit 1"
    assert m("prt_04c").source.kind is SourceKind.SKILL and m("prt_04c").pinned
    assert m("prt_04e").tool_results[0].content == INTERRUPTED_TEXT
    assert m("msg_05").is_meta and m("msg_05").text == "What did we do so far?"
    assert m("msg_06").is_summary and m("msg_06").source.kind is SourceKind.SUMMARY
    assert m("msg_07").is_meta and not m("msg_07").is_human

    assert [(r.segment, r.ledger_len, r.response_id) for r in t.requests] == [
        (0, 1, "msg_02"),
        (0, 3, "prt_02e"),
        (0, 5, "prt_02h"),
        (0, 7, "msg_04"),
        (0, 12, "msg_06"),  # the summarization call, made with the whole old ledger
        (1, 8, "msg_08"),
    ]
    assert [r.usage.context if r.usage else None for r in t.requests] == [2100, 2150, 2240, 2460, 2600, 1530]
    assert [r.stop_reason for r in t.requests[:3]] == ["tool-calls", "tool-calls", "stop"]

    assert [len(s.message_ids) for s in t.segments] == [12, 9]
    assert t.segments[1].message_ids == (
        *("msg_05", "msg_06"),  # the compaction request and its summary
        *("msg_03", "msg_04", "prt_04c", "prt_04d", "prt_04e"),  # the retained tail
        *("msg_07", "msg_08"),  # after the compaction
    )
    prune, compaction = t.events
    assert prune.kind is EventKind.MICROCOMPACT and prune.cleared_tool_ids == ("call_read",)
    assert prune.after_request == 4
    assert compaction.kind is EventKind.COMPACTION and compaction.trigger == "auto"
    assert (compaction.after_request, compaction.segment, compaction.summary_id) == (5, 1, "msg_06")
    assert compaction.preserved_ids == ("msg_03", "msg_04", "prt_04c", "prt_04d", "prt_04e")
    assert t.segments[1].started_by == 1
    assert [(s.agent_id, s.tool_use_id, s.messages) for s in t.subagents] == [("ses_child", "call_task", 1)]
    assert t.skipped["part:patch"] == 1
    assert CLEARED_TEXT == "[Old tool result content cleared]"


def test_json_folder_storage(tmp_path: Path) -> None:
    storage = write_storage(tmp_path / "opencode")
    for path in (tmp_path / "opencode", storage):
        assert detect(path).format == "opencode"
        check_synthetic(load_opencode(path))
    # a record file inside the tree loads the session it belongs to
    part = storage / "part" / "msg_04" / "prt_04c.json"
    assert detect(part).format == "opencode"
    check_synthetic(load_opencode(part))
    old = load_opencode(storage, session_id="ses_old")
    assert [m.text for m in old.messages] == ["old question"] and old.requests == []
    assert [s.id for s in list_sessions(storage)][:2] == ["ses_child", "ses_main"]


def test_database_session_matches_json_storage(db: Path, tmp_path: Path) -> None:
    write_db(db)
    t = load_opencode(db)
    check_synthetic(t)
    from_json = load_opencode(write_storage(tmp_path / "json"))
    # the database has a time for every part row, JSON parts have none: compare all but times
    assert [replace(m, origin=None, timestamp=None) for m in t.messages] == [
        replace(m, origin=None, timestamp=None) for m in from_json.messages
    ]
    assert [replace(r, timestamp=None) for r in t.requests] == [
        replace(r, timestamp=None) for r in from_json.requests
    ]
    assert t.requests[1].timestamp == "2026-09-30T11:37:30.106Z"  # the step-finish row's time
    assert [replace(e, file=None, line=None) for e in t.events] == [
        replace(e, file=None, line=None) for e in from_json.events
    ]
    assert t.messages[0].origin is not None and t.messages[0].origin.file == str(db)


# -- the legacy part file ----------------------------------------------------------------------------
def test_lone_legacy_part_file() -> None:
    path = corpus("opencode", LEGACY_PART)
    t = load_opencode(path)
    assert t.load_issues == []
    assert t.session_id == "session-001"
    assert [m.id for m in t.messages] == ["msg-002", "part-002"]
    (call,) = t.messages[0].tool_calls
    assert (call.id, call.name, call.arguments) == (
        "part-002",
        "bash",
        {"command": "ls -la", "description": "List files in directory"},
    )
    (res,) = t.messages[1].tool_results
    assert res.call_id == "part-002" and res.content.startswith("total 8\n")
    assert len(t.requests) == 1 and t.requests[0].usage is None  # a lone part holds no step-finish


@pytest.fixture
def legacy_tree(tmp_path: Path) -> Iterator[Path]:
    """The corpus legacy part placed in a JSON storage tree with its message and session."""
    part = json.loads(corpus("opencode", LEGACY_PART).read_text())
    storage = tmp_path / "storage"
    (storage / "session" / "proj").mkdir(parents=True)
    (storage / "session" / "proj" / "session-001.json").write_text(
        json.dumps(
            {"id": "session-001", "projectID": "proj", "title": "ls", "time": {"created": 1, "updated": 2}}
        )
    )
    (storage / "message" / "session-001").mkdir(parents=True)
    (storage / "message" / "session-001" / "msg-001.json").write_text(
        json.dumps({"id": "msg-001", "sessionID": "session-001", "role": "user", "time": {"created": 1}})
    )
    (storage / "message" / "session-001" / "msg-002.json").write_text(
        json.dumps(
            {
                "id": "msg-002",
                "sessionID": "session-001",
                "role": "assistant",
                "time": {"created": 2, "completed": 3},
                "tokens": {
                    "input": 9640,
                    "output": 12,
                    "reasoning": 266,
                    "cache": {"write": 0, "read": 9600},
                },
                "modelID": "grok-code",
            }
        )
    )
    (storage / "part" / "msg-001").mkdir(parents=True)
    (storage / "part" / "msg-001" / "part-001.json").write_text(
        json.dumps(
            {
                "id": "part-001",
                "sessionID": "session-001",
                "messageID": "msg-001",
                "type": "text",
                "text": "pwd",
            }
        )
    )
    (storage / "part" / "msg-002").mkdir(parents=True)
    (storage / "part" / "msg-002" / "part-002.json").write_text(json.dumps(part, indent=2))
    yield storage


def test_legacy_part_inside_a_tree_loads_its_session(legacy_tree: Path) -> None:
    part_file = legacy_tree / "part" / "msg-002" / "part-002.json"
    t = load_opencode(part_file)
    assert t.load_issues == []
    assert [m.id for m in t.messages] == ["msg-001", "msg-002", "part-002"]
    assert t.messages[0].source.kind is SourceKind.TASK
    (r,) = t.requests  # no step-finish: one request per assistant message, from its own tokens
    assert (r.ledger_len, r.response_id, r.model) == (1, "msg-002", "grok-code")
    assert r.usage is not None and (r.usage.input, r.usage.cache_read, r.usage.output, r.usage.reasoning) == (
        9640,
        9600,
        12,
        266,
    )
    assert r.usage.context == 19240


def test_bad_records_in_json_storage_are_load_issues(legacy_tree: Path) -> None:
    bad = legacy_tree / "part" / "msg-001" / "part-000.json"
    bad.write_text('{"id": "part-000",\n "type": ')
    t = load_opencode(legacy_tree)
    assert [(i.file, i.line) for i in t.load_issues] == [(str(bad), 2)]
    assert [m.id for m in t.messages] == ["msg-001", "msg-002", "part-002"]


def test_not_opencode(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not OpencodeFormat().sniff(empty, b"")
    with pytest.raises(LoaderError):
        load_opencode(empty)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    assert not OpencodeFormat().sniff(other, read_head(other))
