"""`export -o` never writes over an input (issue 31): not the transcript, not a hard or symbolic
link to it, not its subagent or compaction call files, not a database (or its -wal/-shm) of a
folder given as PATH, not a file of a session folder. Each refusal is one line on stderr, exit 2,
and every file of the folder keeps its bytes and mtime (and no file appears)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from inspector.cli import main
from inspector.samples import OPENCOLLAB_RUN_DIR as RUN_DIR
from tests.unit.test_hardening_readonly import (
    Snapshot,
    chat_file,
    claude_code_session,
    codex_rollout,
    opencode_db,
    opencode_storage,
    snapshot,
)


def _exports_refused(
    capsys: pytest.CaptureFixture[str], path: Path, output: Path, watched: Path, before: Snapshot
) -> str:
    """Run `export PATH -o OUTPUT` in every format: each refused in one line, nothing changed."""
    for fmt in ("json", "md", "html", "svg"):
        capsys.readouterr()
        assert main(["export", str(path), "--format", fmt, "-o", str(output)]) == 2, (fmt, output)
        captured = capsys.readouterr()
        err = captured.err
        assert captured.out == ""
        assert err.startswith("context-inspector: refusing to write the export: ") and err.count("\n") == 1, (
            err
        )
        assert snapshot(watched) == before, (fmt, output)
    return err


def test_the_transcript_itself_and_links_to_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "s"
    path = claude_code_session(folder)
    hard = tmp_path / "elsewhere" / "hard.jsonl"
    hard.parent.mkdir()
    os.link(path, hard)
    soft = tmp_path / "elsewhere" / "soft.jsonl"
    soft.symlink_to(path)
    before = snapshot(tmp_path)
    assert "an input of the transcript" in _exports_refused(capsys, path, path, tmp_path, before)
    assert "same file as" in _exports_refused(capsys, path, hard, tmp_path, before)
    _exports_refused(capsys, path, soft, tmp_path, before)
    # the same transcript read through its hard link: the original is the same file
    _exports_refused(capsys, hard, path, tmp_path, before)
    # spelled another way
    _exports_refused(capsys, path, folder / "." / path.name, tmp_path, before)


@pytest.mark.parametrize(
    "relative",
    [
        "session/subagents/agent-a1.jsonl",
        "session/subagents/agent-a1.meta.json",
        "session/subagents/agent-acompact-1.jsonl",
        "session/subagents/new-file.md",
    ],
    ids=["subagent", "subagent-meta", "compaction-call", "new-file-in-session-folder"],
)
def test_a_claude_code_sessions_own_files(
    relative: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claude_code_session(tmp_path)
    before = snapshot(tmp_path)
    _exports_refused(capsys, path, tmp_path / relative, tmp_path, before)


def test_a_hard_link_to_a_subagent_file_elsewhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = claude_code_session(tmp_path / "s")
    link = tmp_path / "agent.jsonl"
    os.link(tmp_path / "s" / "session" / "subagents" / "agent-a1.jsonl", link)
    before = snapshot(tmp_path)
    _exports_refused(capsys, path, link, tmp_path, before)


@pytest.mark.parametrize("given", ["folder", "database"])
def test_an_opencode_database_and_its_wal_files(
    given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = opencode_db(tmp_path / "oc")
    path = db.parent if given == "folder" else db
    before = snapshot(tmp_path)
    for name in ("opencode.db", "opencode.db-wal", "opencode.db-shm", "opencode.db-journal"):
        _exports_refused(capsys, path, db.parent / name, tmp_path, before)
    assert sorted(p.name for p in db.parent.iterdir()) == ["opencode.db"]  # no -wal or -shm appeared


def test_a_live_wal_databases_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = opencode_db(tmp_path / "oc")
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("UPDATE session SET title = 'renamed'")
        assert (db.parent / "opencode.db-wal").exists()
        hard = tmp_path / "wal-link"
        os.link(db.parent / "opencode.db-wal", hard)
        before = snapshot(tmp_path)
        for out in (db.parent / "opencode.db-wal", db.parent / "opencode.db-shm", hard):
            _exports_refused(capsys, db.parent, out, tmp_path, before)
    finally:
        writer.close()


def test_the_files_of_a_session_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN_DIR, run)
    before = snapshot(tmp_path)
    for name in (
        "agent_0_coder.json",
        "agent_0_coder.json.journal",
        "team.json",
        "trajectory.jsonl",
        "new.html",
    ):
        _exports_refused(capsys, run, run / name, tmp_path, before)


def test_an_opencode_storage_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    storage = opencode_storage(tmp_path / "oc")
    part = storage / "part" / "msg_02" / "prt_02b.json"
    before = snapshot(tmp_path)
    _exports_refused(capsys, storage, part, tmp_path, before)
    # one record given as PATH: the others of its session are read too
    _exports_refused(capsys, storage / "message" / "ses_main" / "msg_01.json", part, tmp_path, before)


@pytest.mark.parametrize(
    "make", [claude_code_session, codex_rollout, chat_file], ids=["claude-code", "codex", "generic"]
)
def test_an_output_that_is_no_input_is_written(
    make: Callable[[Path], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check refuses inputs only: beside the transcript, or over an old export, it writes."""
    path = make(tmp_path / "s")
    for out in (tmp_path / "s" / "report.md", tmp_path / "report.md"):
        out.write_text("old export")
        assert main(["export", str(path), "--format", "md", "-o", str(out)]) == 0
        assert out.read_text().startswith("# Context report: ")
    assert capsys.readouterr().err == ""
