"""`context-inspector report` as a process: the same output as in-process, what it imports, and
that it leaves at once (without freeing the transcript object by object) having flushed all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.cli import QUICK_EXIT, main
from tests.conftest import ROOT, python_lines

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_report_json_as_a_process_is_the_in_process_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--json", str(SAMPLE)]) == 0  # called as a function: it returns
    expected = capsys.readouterr().out
    done = _run("report", "--json", str(SAMPLE))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == expected  # all of it, flushed before the process left
    assert json.loads(done.stdout)["requests"]


def test_errors_as_a_process_still_exit_2_with_one_line() -> None:
    done = _run("report", "--json", str(SAMPLE), "--step", "9999")
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.startswith("context-inspector: request 9999 does not exist")
        and "Traceback" not in done.stderr
    )


def test_the_app_and_the_tour_are_not_cut_short() -> None:
    assert "report" in QUICK_EXIT and "sessions" in QUICK_EXIT
    assert "tour" not in QUICK_EXIT  # the app restores the terminal as it ends


def test_report_json_loads_no_app_no_renderer_no_tokenizer() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from inspector.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['report', '--json', {str(SAMPLE)!r}]) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich', 'tiktoken', 'watchfiles'}))"
    )
    assert python_lines(code) == ["[]"]


def test_report_json_without_cache_or_files_starts_without_what_it_does_not_use() -> None:
    """Without the cache, a settings file or a policy file, `report --json` imports neither
    hashlib (OpenSSL: 6 ms), tempfile (with random: 7 ms) nor tomllib (2-4 ms): each is imported
    where it is used (the cache's keys and writes, a segment's summary key, a file read)."""
    lazy = "{'hashlib', 'tempfile', 'tomllib', '_hashlib', 'random'}"
    code = (
        "import contextlib, io, os, sys\n"
        "os.environ['XDG_CONFIG_HOME'] = os.path.join(os.sep, 'nonexistent-ctxi-config')\n"
        "from inspector.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['report', '--json', '--no-cache', {str(SAMPLE)!r}]) == 0\n"
        f"print(sorted(set(sys.modules) & {lazy}))\n"
        "import inspector.formats.cache as cache\n"
        "cache.digest('x')\n"
        f"print(sorted(set(sys.modules) & {lazy}))"
    )
    # the first report of a model fills the price cache (`model.cost`: genai-prices, which imports
    # them all); what is checked is the start of every report after it
    python_lines(code)
    # (the check can fail: the cache's key imports hashlib)
    assert python_lines(code) == ["[]", "['_hashlib', 'hashlib']"]


def test_quick_exit_keeps_the_exit_code_of_a_closed_pipe(tmp_path: Path) -> None:
    """Output into a pipe its reader closed early: the report stops without a traceback."""
    p = subprocess.Popen(
        [sys.executable, "-m", "inspector", "report", "--json", str(SAMPLE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) in (0, 120) and "Traceback" not in err


def test_a_one_shot_process_keeps_what_it_loaded_out_of_the_collector() -> None:
    """Run as a process, a command that prints and leaves holds the transcript out of the
    collector's walks (a full walk of a 100 MB session takes 0.2 s, twice in a report under
    another policy); called as a function, it holds nothing."""
    code = (
        "import contextlib, gc, io, sys\n"
        "import inspector.cli as cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert cli.main(['report', '--json', {str(SAMPLE)!r}]) == 0\n"
        "print(gc.get_freeze_count())\n"
        f"sys.argv = ['ctxi', 'report', '--json', {str(SAMPLE)!r}]\n"
        "cli._exit_at_once = lambda code: print(code, gc.get_freeze_count() > 0)\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    cli.main()\n"
        "print(out.getvalue().splitlines()[-1])\n"
    )
    assert python_lines(code) == ["0", "0 True"]
