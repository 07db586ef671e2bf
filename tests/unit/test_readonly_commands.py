"""Every command, the session list and the app leave their inputs exactly as they found them.

Issue 31: `sessions` and the picker created `opencode.db-wal` and `-shm` beside a WAL-mode
database that had neither. Here every command (`report`, `report --json`, `explain`,
`calibrate`, `findings`, `export` in every format to a folder outside the input's), `sessions`
over a home folder that holds a session of every harness, the picker opening each of them and the
app opened on each input (followed where it is a file) run on read-only copies (`chmod a-w`,
files and folders), WAL-mode opencode databases among them, and every file name, byte and mtime
under the inputs is compared before and after each one.

The tests run as root, for whom permission bits stop nothing: a write would succeed, and so the
comparison is what catches it. The corpus inputs (a real Claude Code session with its subagents,
a real Codex rollout, a real opencode database rebuilt from its SQL dump in WAL mode) skip when
`../shared/corpus` is absent; the synthetic ones always run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from inspector.cli import main
from inspector.formats import load
from inspector.live.discovery import discover
from inspector.samples import OPENCOLLAB_RUN_DIR as RUN_DIR
from tests.unit.test_hardening_readonly import TRANSCRIPTS

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
OPENCODE_SQL = CORPUS / "opencode" / "lazyagents-opencode-1.18.33.sql"
CLAUDE_SESSION = CORPUS / "claude-code" / "spotter-fa812bfe"
CODEX_ROLLOUT = CORPUS / "codex" / "lazyagents-codex-0.158.0-rollout.jsonl"
NO_CORPUS = "the shared corpus (../shared/corpus) is not here"

Snapshot = dict[str, tuple[Any, ...]]


# -- what is compared ----------------------------------------------------------------------------
def snapshot(root: Path) -> Snapshot:
    """Every entry under `root` (itself included): a folder's mode, mtime and the names in it; a
    file's mode, size, mtime and the hash of all its bytes; a link's target."""
    out: Snapshot = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        rel = str(path.relative_to(root))
        if stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", st.st_mode, st.st_mtime_ns, tuple(sorted(os.listdir(path))))
        elif stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", os.readlink(path))
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """What changed, in words (empty: nothing)."""
    out = [f"appeared: {k}" for k in sorted(after.keys() - before.keys())]
    out += [f"vanished: {k}" for k in sorted(before.keys() - after.keys())]
    out += [
        f"changed: {k}: {before[k]} -> {after[k]}"
        for k in sorted(before.keys() & after.keys())
        if before[k] != after[k]
    ]
    return out


def chmod_tree(root: Path, *, writable: bool) -> None:
    """`chmod a-w` (or back to u+w) every file and folder under `root`, `root` itself included."""
    for path in [*sorted(root.rglob("*"), reverse=True), root]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


class Guard:
    """Runs things over read-only inputs, and fails naming the first one that changed anything."""

    def __init__(self, root: Path) -> None:
        self.root = root
        chmod_tree(root, writable=False)
        self.before = snapshot(root)
        self.ran: list[str] = []

    def check(self, what: str) -> None:
        self.ran.append(what)
        changed = differences(self.before, snapshot(self.root))
        assert not changed, f"{what} changed its input:\n" + "\n".join(changed)


@pytest.fixture()
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], Guard]]:
    made: list[Guard] = []

    def make(root: Path) -> Guard:
        guard = Guard(root)
        made.append(guard)
        return guard

    yield make
    for guard in made:
        chmod_tree(guard.root, writable=True)  # so that pytest can remove it


# -- the inputs ----------------------------------------------------------------------------------
def wal_database(sql: Path, db: Path) -> Path:
    """An opencode.db rebuilt from its SQL dump and switched to WAL mode, closed cleanly: its
    header says WAL, and neither -wal nor -shm is left beside it (no writer holds it)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    try:
        con.executescript(sql.read_text(encoding="utf-8"))
        assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        con.commit()
    finally:
        con.close()
    header = db.read_bytes()[:20]
    assert header[18:20] == b"\x02\x02", "not a WAL-mode database"
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    return db


def corpus_claude(folder: Path) -> Path:
    if not CLAUDE_SESSION.is_dir():
        pytest.skip(NO_CORPUS)
    shutil.copytree(CLAUDE_SESSION, folder / CLAUDE_SESSION.name)
    return next((folder / CLAUDE_SESSION.name).glob("*.jsonl"))


def corpus_codex(folder: Path) -> Path:
    if not CODEX_ROLLOUT.is_file():
        pytest.skip(NO_CORPUS)
    folder.mkdir(parents=True)
    return Path(shutil.copy(CODEX_ROLLOUT, folder / CODEX_ROLLOUT.name))


def corpus_opencode(folder: Path) -> Path:
    if not OPENCODE_SQL.is_file():
        pytest.skip(NO_CORPUS)
    return wal_database(OPENCODE_SQL, folder / "opencode.db")


def opencollab_run(folder: Path) -> Path:
    run = folder / "run"
    shutil.copytree(RUN_DIR, run)
    return run / "agent_0_coder.json"


INPUTS: dict[str, Callable[[Path], Path]] = {
    **TRANSCRIPTS,  # synthetic: claude-code (with a subagent and a compaction call), codex, chat
    # JSON, an opencode JSON store, an opencode WAL database
    "opencollab run": opencollab_run,
    "corpus claude-code with subagents": corpus_claude,
    "corpus codex": corpus_codex,
    "corpus opencode WAL database": corpus_opencode,
}


def paths_of(kind: str, path: Path) -> list[Path]:
    """The ways into an input: the file, and for a database also the folder holding it."""
    return [path, path.parent] if path.name == "opencode.db" else [path]


# -- every command -------------------------------------------------------------------------------
def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", list(INPUTS))
def test_every_command_leaves_a_read_only_input_as_it_was(
    kind: str, tmp_path: Path, read_only: Callable[[Path], Guard], capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "inputs"
    path = INPUTS[kind](inputs)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    transcript = load(path)
    first_id = transcript.messages[0].id
    has_usage = any(r.usage for r in transcript.requests)
    guard = read_only(inputs)
    for target in paths_of(kind, path):
        p = str(target)
        code, out, err = run_cli(["report", p], capsys)
        assert (code, err) == (0, "") and "request" in out.lower()
        guard.check(f"report {p}")
        code, out, err = run_cli(["report", "--json", p], capsys)
        assert (code, err) == (0, "") and out.startswith("{") and '"load_issues_total"' in out
        guard.check(f"report --json {p}")
        code, out, err = run_cli(["explain", p, first_id], capsys)
        assert (code, err) == (0, "") and out.strip()
        guard.check(f"explain {p}")
        code, out, err = run_cli(["calibrate", p], capsys)
        if has_usage:
            assert (code, err) == (0, "") and out.strip()
        else:
            assert code == 2 and "records no token usage" in err
        guard.check(f"calibrate {p}")
        code, out, err = run_cli(["findings", p], capsys)
        assert code in (0, 1) and err == "" and out.strip()
        guard.check(f"findings {p}")
        for fmt in ("json", "md", "html", "svg"):
            dest = outputs / f"{target.name}.{fmt}"
            code, out, err = run_cli(["export", p, "--format", fmt, "--redact", "-o", str(dest)], capsys)
            assert (code, out, err) == (0, "", "") and dest.stat().st_size > 100
            guard.check(f"export --format {fmt} {p}")
    assert len(guard.ran) == 9 * len(paths_of(kind, path))


# -- sessions and the picker ---------------------------------------------------------------------
def machine(root: Path, monkeypatch: pytest.MonkeyPatch, *, corpus: bool) -> list[Path]:
    """A home folder holding a session of every harness where discovery looks (HOME, CLAUDE_CONFIG_DIR,
    CODEX_HOME, XDG_DATA_HOME and the current folder all point into `root`); the session files."""
    home, claude, codex, xdg, work = (root / n for n in ("home", "claude", "codex", "xdg", "work"))
    home.mkdir(parents=True)
    for name, value in (
        ("HOME", home),
        ("CLAUDE_CONFIG_DIR", claude),
        ("CODEX_HOME", codex),
        ("XDG_DATA_HOME", xdg),
    ):
        monkeypatch.setenv(name, str(value))
    (work / ".opencollab" / "sessions").mkdir(parents=True)
    monkeypatch.chdir(work)  # where OpenCollab runs are looked for
    files = [
        TRANSCRIPTS["claude-code"](claude / "projects" / "-work-proj"),
        TRANSCRIPTS["codex"](codex / "sessions" / "2026" / "01" / "01"),
        TRANSCRIPTS["opencode JSON store"](xdg / "opencode") / "session" / "global" / "ses_main.json",
    ]
    if corpus:
        files.append(corpus_opencode(xdg / "opencode"))
        files.append(corpus_claude(claude / "projects"))  # its folder is the project's
    else:
        files.append(TRANSCRIPTS["opencode WAL database"](xdg / "opencode"))
    shutil.copytree(RUN_DIR, work / ".opencollab" / "sessions" / "run-1")
    files.append(work / ".opencollab" / "sessions" / "run-1" / "agent_0_coder.json")
    now = time.time()
    for f in files:
        os.utime(f, (now - 3600, now - 3600))  # an hour old: opened without following
    return files


@pytest.mark.parametrize("corpus", [False, True], ids=["synthetic", "corpus"])
def test_sessions_leaves_every_session_it_lists_as_it_was(
    corpus: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    read_only: Callable[[Path], Guard],
    capsys: pytest.CaptureFixture[str],
) -> None:
    if corpus and not OPENCODE_SQL.is_file():
        pytest.skip(NO_CORPUS)
    files = machine(tmp_path / "machine", monkeypatch, corpus=corpus)
    guard = read_only(tmp_path / "machine")
    code, out, err = run_cli(["sessions", "--json"], capsys)
    assert (code, err) == (0, "")
    listed = {row["path"] for row in json.loads(out)}
    assert {str(f) for f in files} <= listed
    guard.check("sessions --json")
    code, out, err = run_cli(["sessions"], capsys)
    assert (code, err) == (0, "") and "opencode" in out and "codex" in out
    guard.check("sessions")
    assert {r.harness for r in discover()} == {"claude-code", "codex", "opencode", "opencollab"}
    guard.check("discover()")


@pytest.mark.parametrize("corpus", [False, True], ids=["synthetic", "corpus"])
async def test_the_picker_opens_every_session_and_leaves_it_as_it_was(
    corpus: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_only: Callable[[Path], Guard]
) -> None:
    from inspector.tui import InspectorApp
    from inspector.tui.app import MainScreen
    from inspector.tui.picker import PickerScreen
    from tests.app.test_tui_picker import SIZE, counter, loaded, option_ids, wait_until

    if corpus and not OPENCODE_SQL.is_file():
        pytest.skip(NO_CORPUS)
    machine(tmp_path / "machine", monkeypatch, corpus=corpus)
    guard = read_only(tmp_path / "machine")
    app = InspectorApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: loaded(app), "the discovered sessions")
        guard.check("the picker's discovery")
        assert isinstance(app.screen, PickerScreen)
        picker = app.screen  # a PickerScreen, as the lambda below sees it too
        sessions = [i for i in option_ids(app) if i is not None and i.startswith("session-")]
        assert len(sessions) == len(picker.found) >= 5
        assert {s.harness for s in picker.found} == {"claude-code", "codex", "opencode", "opencollab"}
        for n, key in enumerate(sessions):
            picker.open_key(key)
            await wait_until(pilot, lambda: counter(app).startswith("request "), f"session {key}")
            assert isinstance(app.screen, MainScreen)
            await pilot.press("home", "end")
            await pilot.pause(0.05)
            guard.check(f"the picker opening {picker.found[n].path} ({picker.found[n].session_id})")
            await pilot.press("s")
            await wait_until(pilot, lambda: app.screen is picker and not picker.opening, "the picker again")
    guard.check("the picker, closed")
    assert len(guard.ran) == 2 + len(sessions)


@pytest.mark.parametrize("kind", list(INPUTS))
async def test_the_app_leaves_a_read_only_input_as_it_was(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_only: Callable[[Path], Guard]
) -> None:
    from inspector.tui import InspectorApp
    from inspector.tui.live import open_transcript
    from tests.app.test_tui_picker import SIZE, counter, wait_until

    inputs = tmp_path / "inputs"
    path = INPUTS[kind](inputs)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    guard = read_only(inputs)
    for target in paths_of(kind, path):
        follow = target.is_file()  # a followed file is watched and re-read: the riskier way in
        opened = open_transcript(target, follow=follow)
        app = InspectorApp(opened.transcript, follower=opened.follower)
        async with app.run_test(size=SIZE) as pilot:

            def main_shown(a: InspectorApp = app) -> bool:
                return counter(a).startswith("request ")

            await wait_until(pilot, main_shown, "the main screen")
            await pilot.press("home", "end", "tab")
            await pilot.pause(0.2)  # the follower's watch is up: still nothing changes
            guard.check(f"the app on {target} (follow={follow})")
    assert guard.ran
