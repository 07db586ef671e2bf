"""The line the command line keeps on a terminal while a big transcript is read (`report.progress`),
and the readers' progress it is fed from (`formats.load(path, progress=...)`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import inspector.report.progress as progress_mod
from inspector.cli import main
from inspector.formats import load
from inspector.report.progress import ERASE, LoadProgress, human_size, progress_for
from inspector.samples import sample_path


class Terminal(io.StringIO):
    """Standard error as a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_load_reports_every_chunk_up_to_the_whole_file() -> None:
    path = sample_path("long-session")  # 3.5 MB: four chunks of a MiB
    heard: list[tuple[int, int]] = []
    transcript = load(path, progress=lambda done, total: heard.append((done, total)))
    size = path.stat().st_size
    assert len(heard) == -(-size // (1 << 20))
    assert [d for d, _ in heard] == sorted(d for d, _ in heard)
    assert heard[-1] == (size, size)
    assert {t for _, t in heard} == {size}
    assert len(transcript.requests) == len(load(path).requests) > 0  # the same transcript


def test_the_line_waits_then_counts_then_says_what_comes_next_then_is_erased() -> None:
    out, clock = Terminal(), Clock()
    p = LoadProgress("/tmp/session\x1b[31m.jsonl", out, now=clock)
    p(10_000_000, 400_000_000)
    assert out.getvalue() == ""  # a short read shows nothing
    clock.t += progress_mod.DELAY_S
    p(120_000_000, 400_000_000)
    assert out.getvalue() == ERASE + "reading session\\x1b[31m.jsonl: 120 MB of 400 MB (30%)"
    clock.t += progress_mod.INTERVAL_S / 2
    p(130_000_000, 400_000_000)  # too soon: not rewritten
    assert out.getvalue().count(ERASE) == 1
    clock.t += progress_mod.INTERVAL_S / 2
    p(400_000_000, 400_000_000)  # the end is always shown
    assert out.getvalue().endswith(ERASE + "read session\\x1b[31m.jsonl (400 MB): building the transcript…")
    p.close()
    assert out.getvalue().endswith("…" + ERASE)
    p.close()  # once erased, nothing more
    assert out.getvalue().count(ERASE) == 3


def test_nothing_is_written_where_standard_error_is_not_a_terminal() -> None:
    assert progress_for("x.jsonl", io.StringIO()) is None
    assert isinstance(progress_for("x.jsonl", Terminal()), LoadProgress)


def test_a_command_on_a_terminal_erases_its_line_and_leaves_standard_output_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(sample_path("long-session"))
    assert main(["report", path, "--json"]) == 0
    plain = capsys.readouterr().out
    err = Terminal()
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    monkeypatch.setattr(progress_mod, "INTERVAL_S", 0.0)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["report", path, "--json", "--no-cache"]) == 0  # read again (the first run cached it)
    assert capsys.readouterr().out == plain
    json.loads(plain)
    written = err.getvalue()
    assert written.count("reading long-session.jsonl: ") == 3  # 1, 2 and 3 MiB of 3.5 MB
    assert "read long-session.jsonl (3.5 MB): building the transcript…" in written
    assert written.endswith(ERASE)


def test_a_file_that_is_no_transcript_is_one_line_and_no_escape_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "session.jsonl"
    bad.write_bytes(b"\x00" * 3_000_000)  # detection refuses it before a chunk is read
    err = Terminal()
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    monkeypatch.setattr("sys.stderr", err)
    assert main(["report", str(bad), "--json"]) == 2
    assert capsys.readouterr().out == ""
    assert err.getvalue().count("\n") == 1 and "not a transcript" in err.getvalue()
    assert ERASE not in err.getvalue()


def test_human_size() -> None:
    assert human_size(412) == "412 B"
    assert human_size(830_000) == "830 KB"
    assert human_size(1_900_000) == "1.9 MB"
    assert human_size(876_471_164) == "876 MB"
    assert human_size(2_500_000_000) == "2.5 GB"
