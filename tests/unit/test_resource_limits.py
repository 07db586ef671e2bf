"""Resource limits (issue 31): bounded load issues, regular files only, one line when memory runs out.

- A file of junk is a load issue per line: every reader keeps the first `MAX_LOAD_ISSUES` of them
  and counts the rest (`LoadIssues`), and the report says how many there were in all
  (`load_issues_total`). The memory this saves is measured in `benchmarks/junk_memory.py`.
- Only regular files are read: `report` on /dev/zero, a FIFO, a symlink to /dev/zero, a folder
  that holds no session or /proc/kmsg (a regular file that says 0 bytes and blocks) is one line
  and exit 2, at once; a followed file replaced by a FIFO or by a link to /dev/zero is reported
  missing, never opened for reading, and the app still quits on `q`.
- Under a memory limit a MemoryError is one line naming the command and the file, exit 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from inspector.formats import load
from inspector.formats.base import MAX_LOAD_ISSUES, LoadIssues, issue_total
from inspector.formats.claude_code import ClaudeCodeReader
from inspector.live import Follower, follower_for
from inspector.model import LoadIssue
from inspector.replay import Replay
from inspector.report.summary import load_issues_title, replay_report
from inspector.samples import OPENCOLLAB_RUN_DIR as RUN_DIR
from tests.unit.test_hardening_inputs import (
    T0,
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

JUNK = 250
"""Bad records put in each file: more than MAX_LOAD_ISSUES, so the bound shows."""
CLI = [sys.executable, "-m", "inspector"]


# -- the bound itself ------------------------------------------------------------------------------
def issue(n: int) -> LoadIssue:
    return LoadIssue(file="f", line=n, reason=f"bad {n}")


def test_load_issues_keep_the_first_ones_and_count_all() -> None:
    issues = LoadIssues(limit=3)
    for n in range(1, 6):
        issues.append(issue(n))
    assert [i.line for i in issues] == [1, 2, 3] and issues.total == 5 and issues.dropped == 2
    issues.extend(issue(n) for n in (6, 7))
    assert len(issues) == 3 and issues.total == 7
    other = LoadIssues([issue(8), issue(9)], limit=3)
    joined = LoadIssues.joined(LoadIssues([issue(1)], limit=3), other, [issue(10)])
    assert [i.line for i in joined] == [1, 8, 9, 10] and joined.total == 4
    capped = LoadIssues(limit=2)
    capped.extend(joined)
    assert [i.line for i in capped] == [1, 8] and capped.total == 4
    copy = issues.copy()
    copy.append(issue(11))
    assert (copy.total, issues.total) == (8, 7)
    grown = other.copy()
    grown.append(issue(12))
    grown.append(issue(13))
    assert [i.line for i in grown.after(other)] == [12] and grown.after(other).total == 2
    assert issue_total(issues) == 7 and issue_total([issue(1), issue(2)]) == 2
    summed = issues + [issue(14)]  # noqa: RUF005 (the operator is what is tested)
    assert isinstance(summed, LoadIssues) and summed.total == 8
    issues += [issue(15)]
    assert issues.total == 8 and len(issues) == 3


def junk_lines(n: int) -> bytes:
    return b"".join(b"junk %d\n" % i for i in range(n))


def spliced(records: bytes, n: int, after: int = 2) -> bytes:
    """`n` junk lines put after the first `after` lines of `records`."""
    lines = records.split(b"\n")
    return b"\n".join(lines[:after]) + b"\n" + junk_lines(n) + b"\n".join(lines[after:])


def claude_with_junk(folder: Path, n: int = JUNK) -> Path:
    return write(folder / "session.jsonl", spliced(jsonl(cc_valid()), n))


def codex_with_junk(folder: Path, n: int = JUNK) -> Path:
    return write(folder / "rollout-2026-01-01T00-00-00-x.jsonl", spliced(jsonl(cx_valid()), n))


def chat_with_junk(folder: Path, n: int = JUNK) -> Path:
    records: list[Any] = chat_valid()
    records[2:2] = list(range(n))  # numbers where messages go: one issue each
    return write(folder / "chat.json", json.dumps(records).encode())


def opencode_db_with_junk(folder: Path, n: int = JUNK) -> Path:
    bad: list[tuple[str, Any, list[tuple[str, Any]]]] = [(f"msg_z{i:04}", b"not json", []) for i in range(n)]
    return write_db(folder / "opencode.db", oc_records() + bad)


def opencode_store_with_junk(folder: Path, n: int = JUNK) -> Path:
    bad: list[tuple[str, Any, list[tuple[str, Any]]]] = [
        (f"msg_z{i:04}", {"role": "user", "time": {"created": T0 + i}}, []) for i in range(n)
    ]
    raw = {f"msg_z{i:04}.json": b"not json" for i in range(n)}
    return write_storage(folder, oc_records() + bad, raw)


def opencollab_with_junk(folder: Path, n: int = JUNK) -> Path:
    run = folder / "run"
    shutil.copytree(RUN_DIR, run)
    journal = run / "agent_0_coder.json.journal"
    journal.write_bytes(spliced(journal.read_bytes(), n, after=1))
    return run / "agent_0_coder.json"


WITH_JUNK: dict[str, Callable[..., Path]] = {
    "claude-code": claude_with_junk,
    "codex": codex_with_junk,
    "generic": chat_with_junk,
    "opencode database": opencode_db_with_junk,
    "opencode JSON store": opencode_store_with_junk,
    "opencollab": opencollab_with_junk,
}


@pytest.mark.parametrize("kind", list(WITH_JUNK))
def test_every_reader_keeps_a_bounded_sample_of_load_issues_and_counts_them_all(
    kind: str, tmp_path: Path
) -> None:
    clean = load(WITH_JUNK[kind](tmp_path / "clean", 0))
    path = WITH_JUNK[kind](tmp_path / "junk")
    t = load(path)
    assert isinstance(t.load_issues, LoadIssues)
    assert issue_total(t.load_issues) == issue_total(clean.load_issues) + JUNK
    assert len(t.load_issues) == MAX_LOAD_ISSUES
    # only the junk was lost (ids of some formats are line numbers, and the junk moved them)
    assert [(m.role, m.text) for m in t.messages] == [(m.role, m.text) for m in clean.messages]
    report = replay_report(Replay.open(t))
    assert len(report.load_issues) == MAX_LOAD_ISSUES
    assert report.load_issues_total == issue_total(clean.load_issues) + JUNK
    assert load_issues_title(report) == f"Load issues ({report.load_issues_total:,}; the first 100 shown)"


def test_report_json_says_how_many_load_issues_there_were(tmp_path: Path) -> None:
    path = claude_with_junk(tmp_path)
    out = subprocess.run([*CLI, "report", "--json", str(path)], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    assert r["load_issues_total"] == JUNK and len(r["load_issues"]) == MAX_LOAD_ISSUES
    # the first ones met, in file order: the junk starts at line 3
    assert [i["line"] for i in r["load_issues"]] == list(range(3, 3 + MAX_LOAD_ISSUES))
    clean = subprocess.run(
        [*CLI, "report", "--json", str(write(tmp_path / "c.jsonl", jsonl(cc_valid())))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(clean.stdout)["load_issues_total"] == 0


def test_a_followed_file_counts_junk_appended_after_the_bound_is_reached(tmp_path: Path) -> None:
    """The incremental reader reuses its last transcript when only junk was appended: it must
    compare the counts, not the (bounded) lists."""
    path = tmp_path / "session.jsonl"
    reader = ClaudeCodeReader(path)
    reader.feed(jsonl(cc_valid()))
    first = reader.transcript()
    assert issue_total(first.load_issues) == 0
    reader.feed(junk_lines(MAX_LOAD_ISSUES + 20))
    assert issue_total(reader.transcript().load_issues) == MAX_LOAD_ISSUES + 20
    reader.feed(junk_lines(5))  # the kept sample is full: only the count grows
    t = reader.transcript()
    assert issue_total(t.load_issues) == MAX_LOAD_ISSUES + 25 and len(t.load_issues) == MAX_LOAD_ISSUES
    assert [m.id for m in t.messages] == [m.id for m in first.messages]


# -- regular files only ----------------------------------------------------------------------------
def one_line_exit_2(argv: list[str], what: str) -> str:
    """Runs the CLI; it must end within seconds with one line on stderr and exit code 2."""
    try:
        done = subprocess.run(
            [*CLI, *argv], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: still running after 30 s (it blocks on a read)")
    assert done.returncode == 2, (what, done.returncode, done.stderr)
    assert done.stdout == "" and done.stderr.count("\n") == 1, (what, done.stderr)
    assert done.stderr.startswith("context-inspector: ") and "Traceback" not in done.stderr
    return done.stderr


def test_what_is_not_a_regular_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "readme.txt").write_text("nothing to see\n")
    cases = {
        "/dev/zero": ("/dev/zero", "is not a regular file or a folder"),
        "a FIFO": (str(fifo), "is not a regular file or a folder"),
        "a symlink to /dev/zero": (str(link), "is not a regular file or a folder"),
        "a folder that is no session": (str(folder), "a folder that holds no session"),
    }
    if os.path.exists("/proc/kmsg"):  # a regular file that says 0 bytes: reading it would block
        cases["/proc/kmsg"] = ("/proc/kmsg", "")
    for what, (path, says) in cases.items():
        for argv in (
            ["report", path],
            ["report", "--json", path],
            ["export", path],
            ["--no-follow", path],
            ["--follow", path],
        ):
            line = one_line_exit_2(argv, f"{' '.join(argv[:-1])} on {what}")
            assert says in line, (what, line)


def test_a_zero_byte_file_is_not_read(tmp_path: Path) -> None:
    """The open does not read a regular file that says it holds 0 bytes (/proc/kmsg does, and blocks)."""
    from inspector.formats.base import open_regular

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with open_regular(empty) as fh:
        assert fh.read() == b""
    if os.path.exists("/proc/kmsg") and os.access("/proc/kmsg", os.R_OK):
        done: list[bytes] = []
        t = threading.Thread(target=lambda: done.append(open_regular("/proc/kmsg").read()), daemon=True)
        t.start()
        t.join(5)
        assert done == [b""], "/proc/kmsg was read (or the read blocked)"


def run_with_timeout(fn: Callable[[], Any], seconds: float = 10) -> Any:
    """`fn()` in a daemon thread: its result, or a failure if it is still blocked after `seconds`."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"still blocked after {seconds} s")
    if errors:
        raise errors[0]
    return out[0]


def swap(path: Path, replace: Callable[[Path], object]) -> None:
    path.unlink()
    replace(path)


@pytest.mark.parametrize("replacement", ["fifo", "link to /dev/zero"])
def test_a_followed_file_replaced_by_what_is_not_a_regular_file_is_missing_and_never_read(
    replacement: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "session.jsonl", jsonl(cc_valid()))
    follower = follower_for(path)
    first = follower.poll_once()
    assert first.bytes_read == path.stat().st_size
    before = [m.id for m in follower.transcript().messages]
    content = path.read_bytes()
    swap(path, os.mkfifo if replacement == "fifo" else lambda p: p.symlink_to("/dev/zero"))
    try:
        for _ in range(3):
            update = run_with_timeout(follower.poll_once)
            assert update.missing and update.bytes_read == 0 and not update.reset
    finally:
        if replacement == "fifo":
            release(path)
    assert [m.id for m in follower.transcript().messages] == before  # what was read is kept
    swap(path, lambda p: p.write_bytes(content + jsonl([cc_user("u9", "a2", "more")])))
    back = run_with_timeout(follower.poll_once)
    assert back.reset and back.reset_reason == "reappeared" and not back.missing
    assert [m.id for m in follower.transcript().messages][-1] == "u9"


def test_a_followed_database_replaced_by_a_fifo_is_missing(tmp_path: Path) -> None:
    db = write_db(tmp_path / "opencode.db", oc_records())
    follower = follower_for(db)
    assert follower.whole_file and follower.poll_once().bytes_read > 0
    assert follower.transcript().messages  # (the app reads it at once)
    swap(db, os.mkfifo)
    update = run_with_timeout(follower.poll_once)
    assert update.missing and update.bytes_read == 0
    assert follower.transcript().messages  # the last reading is kept


async def test_the_app_quits_on_q_when_its_followed_file_became_a_fifo(tmp_path: Path) -> None:
    from inspector.tui import InspectorApp
    from inspector.tui.live import open_transcript
    from tests.app.test_tui_picker import SIZE, counter, wait_until

    path = write(tmp_path / "session.jsonl", jsonl(cc_valid()))
    opened = open_transcript(path, follow=True)
    follower = opened.follower
    assert isinstance(follower, Follower)
    app = InspectorApp(opened.transcript, follower=follower)

    async def session() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: counter(app).startswith("request "), "the main screen")
            swap(path, os.mkfifo)
            try:
                await wait_until(pilot, lambda: follower.missing, "the follower to find the FIFO missing")
            finally:
                release(path)
            await pilot.press("q")
            await pilot.pause(0.1)

    await asyncio.wait_for(session(), 30)
    assert not app.is_running and app.return_code == 0


def release(fifo: Path) -> None:
    """Gives a reader blocked opening `fifo` a writer (what the old follower needed to go on), so
    a test of that bug fails instead of hanging; nothing happens when no reader waits."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


# -- out of memory ---------------------------------------------------------------------------------
LIMIT = 100 << 20
"""The address-space limit of the child: the interpreter and its imports fit (about 40 MB do),
a 100 MB transcript cannot."""


def big_session(path: Path) -> Path:
    recs: list[dict[str, Any]] = [cc_user("u0", None, "hi")]
    parent = "u0"
    for i in range(4):
        recs.append(cc_assistant(f"a{i}", parent, f"m{i}", "reading"))
        recs.append(cc_user(f"r{i}", f"a{i}", "x" * 25_000_000 + str(i)))
        parent = f"r{i}"
    return write(path, jsonl(recs))


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.parametrize(
    ("argv", "what"),
    [(["report", "--json"], "`report`"), (["findings"], "`findings`"), (["--no-follow"], "the app")],
    ids=["report", "findings", "app"],
)
def test_running_out_of_memory_is_one_line_and_exit_2(argv: list[str], what: str, tmp_path: Path) -> None:
    path = big_session(tmp_path / "big.jsonl")
    # the app refuses a standard output that is no terminal before it reads anything; a driver
    # named in the environment (as `serve` runs it) lets it read, and run out of memory reading
    env = {**os.environ, "TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver"}
    done = subprocess.run(
        [*CLI, *argv, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,
        env=env if what == "the app" else None,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        done.stderr
        == f"context-inspector: {what} ran out of memory on {path} (it needs more memory than the limit allows)\n"
    )
    assert done.stdout == ""
