"""Read-only guarantee (docs/DESIGN.md §4, §8): the inspector never writes next to a transcript.

For every format: the folder's listing, sizes, mtimes and contents are the same after detecting,
loading, replaying and exporting; read-only files in read-only folders load; and, since the tests
run as root (for whom permission bits stop nothing), every file the readers open is checked to be
opened for reading only, and every SQLite database through a `mode=ro` URI.

An SQLite database in WAL mode held open by its writer has `-wal` and `-shm` files beside it. Any
reader of such a database records read marks in the `-shm` shared-memory index (that is SQLite's
locking protocol, not data); its contents are therefore not compared, only that it is not created
or resized. A WAL database that no writer holds has neither file, and reading it creates neither.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import inspector.formats.claude_code as claude_code
from inspector.formats import detect, load
from inspector.replay import Replay
from inspector.report.export import FORMATS, export
from tests.unit.test_hardening_inputs import (
    SESSION,
    cc_assistant,
    cc_user,
    cc_valid,
    chat_valid,
    cx_valid,
    jsonl,
    oc_records,
    write,
    write_db,
    write_storage,
)

Snapshot = dict[str, tuple[Any, ...]]


def snapshot(folder: Path) -> Snapshot:
    """Every entry under `folder`: kind, size, mtime and (for files) a content hash."""
    out: Snapshot = {}
    for path in sorted([folder, *folder.rglob("*")]):
        st = path.lstat()
        rel = str(path.relative_to(folder))
        if stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", st.st_mtime_ns)
        elif path.name.endswith("-shm"):
            out[rel] = ("shm", st.st_size)  # read marks change inside it; see the module docstring
        else:
            out[rel] = ("file", st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def claude_code_session(folder: Path) -> Path:
    """A session with a 2.1 subagent (and its meta file) and a compaction call beside it."""
    path = write(folder / "session.jsonl", jsonl(cc_valid()))
    sub = folder / "session" / "subagents"
    write(
        sub / "agent-a1.jsonl",
        jsonl(
            [
                cc_user("s1", None, "find tests", isSidechain=True, agentId="a1"),
                cc_assistant("s2", "s1", "sm1", "found", isSidechain=True),
            ]
        ),
    )
    write(
        sub / "agent-a1.meta.json", json.dumps({"agentType": "Explore", "description": "find tests"}).encode()
    )
    write(
        sub / "agent-acompact-1.jsonl",
        jsonl(
            [
                cc_user(
                    "h1",
                    "u2",
                    "<system-reminder>hook output</system-reminder>",
                    isMeta=True,
                    sessionId=SESSION,
                )
            ]
        ),
    )
    return path


def codex_rollout(folder: Path) -> Path:
    return write(folder / "rollout-2026-01-01T00-00-00-x.jsonl", jsonl(cx_valid()))


def chat_file(folder: Path) -> Path:
    return write(folder / "chat.json", json.dumps(chat_valid()).encode())


def opencode_storage(folder: Path) -> Path:
    return write_storage(folder, oc_records())


def opencode_db(folder: Path) -> Path:
    return write_db(folder / "opencode.db", oc_records(), wal=True)


TRANSCRIPTS: dict[str, Callable[[Path], Path]] = {
    "claude-code": claude_code_session,
    "codex": codex_rollout,
    "generic": chat_file,
    "opencode JSON store": opencode_storage,
    "opencode WAL database": opencode_db,
}

FOLDER_TOO = frozenset({"opencode WAL database"})
"""Formats whose folder is also a way in (the folder holding opencode.db)."""


def use(path: Path) -> None:
    """Everything the inspector does with a transcript short of the app: detect, load, replay, export."""
    detect(path)
    t = load(path)
    assert t.messages and not t.load_issues, t.load_issues
    replay = Replay.open(t)
    for k in range(1, len(replay) + 1):
        replay.step(k)
    for fmt in FORMATS:
        export(replay, fmt, redact=fmt == "md")


@pytest.mark.parametrize("kind", sorted(TRANSCRIPTS))
def test_nothing_is_created_or_changed_next_to_a_transcript(kind: str, tmp_path: Path) -> None:
    folder = tmp_path / "harness"
    path = TRANSCRIPTS[kind](folder)
    before = snapshot(folder)
    use(path)
    if kind in FOLDER_TOO:
        use(path.parent)
    assert snapshot(folder) == before


def test_a_live_wal_database_is_read_without_changing_it(tmp_path: Path) -> None:
    db = opencode_db(tmp_path / "oc")
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("UPDATE session SET title = 'renamed'")  # committed into the -wal
        assert sorted(p.name for p in db.parent.iterdir()) == [
            "opencode.db",
            "opencode.db-shm",
            "opencode.db-wal",
        ]
        before = snapshot(db.parent)
        assert load(db).title == "renamed"  # read through the WAL
        use(db)
        assert snapshot(db.parent) == before
    finally:
        writer.close()


@contextmanager
def read_only_io(reads: list[str] | None = None) -> Iterator[list[str]]:
    """Every open for writing, every create/remove/rename and every SQLite connection that is not a
    `mode=ro` URI fails with PermissionError while inside; yields the list of what was attempted.
    Files opened for reading (by `open` or `os.open`; and databases connected to) are added to
    `reads`."""
    attempts: list[str] = []
    opened: list[str] = [] if reads is None else reads
    real_open, real_os_open, real_connect = builtins.open, os.open, sqlite3.connect
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def refuse(what: str) -> PermissionError:
        attempts.append(what)
        return PermissionError(13, f"read-only test: {what}")

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+"):
            raise refuse(f"open({file!r}, {mode!r})")
        opened.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & write_flags:
            raise refuse(f"os.open({path!r}, {flags:#o})")
        opened.append(os.fsdecode(path))
        return real_os_open(path, flags, *args, **kwargs)

    def guarded_connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if not (kwargs.get("uri") and str(database).startswith("file:") and "mode=ro" in str(database)):
            raise refuse(f"sqlite3.connect({database!r})")
        opened.append(str(database))
        con: sqlite3.Connection = real_connect(database, *args, **kwargs)
        return con

    def refuser(name: str) -> Callable[..., None]:
        def refuse_call(*args: Any, **kwargs: Any) -> None:
            raise refuse(f"os.{name}{args!r}")

        return refuse_call

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(builtins, "open", guarded_open)
        mp.setattr(io, "open", guarded_open)
        mp.setattr(os, "open", guarded_os_open)
        mp.setattr(sqlite3, "connect", guarded_connect)
        for name in (
            "mkdir",
            "makedirs",
            "remove",
            "unlink",
            "rmdir",
            "rename",
            "replace",
            "truncate",
            "utime",
            "chmod",
        ):
            mp.setattr(os, name, refuser(name))
        yield attempts
    finally:
        mp.undo()


def _chmod_tree(folder: Path, file_mode: int, dir_mode: int) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.chmod(dir_mode if path.is_dir() else file_mode)
    folder.chmod(dir_mode)


@pytest.mark.parametrize("kind", sorted(TRANSCRIPTS))
def test_read_only_files_in_read_only_folders_load_and_nothing_opens_for_writing(
    kind: str, tmp_path: Path
) -> None:
    folder = tmp_path / "harness"
    path = TRANSCRIPTS[kind](folder)
    use(path)  # every module imported before the guard is on
    claude_code.clear_caches()  # so the guarded run reads every file again
    _chmod_tree(folder, 0o444, 0o555)
    try:
        before = snapshot(folder)
        reads: list[str] = []
        with read_only_io(reads) as attempts:
            use(path)
            if kind in FOLDER_TOO:
                use(path.parent)
        assert attempts == []
        assert snapshot(folder) == before
        files = {p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(("-shm", "-wal"))}
        assert {Path(r.removeprefix("file:").split("?")[0]) for r in reads} >= files  # every file was read
    finally:
        _chmod_tree(folder, 0o644, 0o755)


def test_the_guard_catches_writes() -> None:
    with read_only_io() as attempts:
        with pytest.raises(PermissionError):
            Path("/tmp/never-written").write_text("x")
        with pytest.raises(PermissionError):
            sqlite3.connect("/tmp/never.db")
        with pytest.raises(PermissionError):
            os.mkdir("/tmp/never-made")
    assert len(attempts) == 3
