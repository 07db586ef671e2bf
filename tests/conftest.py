"""Shared test fixtures: where the real corpus is (and a skip when it is absent), and `settle`,
which waits until the app shows what a test looks at."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
FA812 = CORPUS / "claude-code" / "spotter-fa812bfe" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"


def python_lines(code: str) -> list[str]:
    """What `code` prints, run by this Python in a process of its own (from the project root)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, timeout=120
    )
    return done.stdout.splitlines()


def corpus_file(relative: str) -> Path:
    """A corpus file, or a skip with the reason when the corpus is not beside the project."""
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real transcript corpus not found at {CORPUS} (present in CI, absent on a fresh clone)")
    return path


CORPUS_DATA = frozenset({"FACTS.json"})
"""Files of the corpus that are about the transcripts, not transcripts."""


def claude_code_corpus() -> list[Path]:
    """Every Claude Code transcript of the corpus: the JSONL sessions (with their subagent and
    compaction-call files) and the sessions written as one JSON array of records."""
    if not CORPUS.exists():
        return []
    return sorted((CORPUS / "claude-code").rglob("*.jsonl")) + sorted(
        (CORPUS / "claude-code-json-array").glob("*.json")
    )


def real_transcripts() -> list[Path]:
    """Every transcript the project bundles (samples, scenarios, the OpenCollab run) and, where
    the corpus is beside the project, every corpus file."""
    samples = ROOT / "inspector" / "samples"
    found = [
        *sorted(samples.glob("*.jsonl")),
        *sorted(samples.glob("scenarios/*.jsonl")),
        samples / "opencollab-run",
    ]
    if CORPUS.exists():
        found += sorted(
            p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json") and p.name not in CORPUS_DATA
        )
    return found


@pytest.fixture(autouse=True)
def _app_output_is_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the test process standard output is captured, not a terminal: the tests that open the
    app through `main` (with `run_app` replaced) open it as from one. The refusal without a
    terminal is tested in a process of its own (`test_cli_money.py`)."""
    monkeypatch.setattr("inspector.cli._stdout_is_terminal", lambda: True)


@pytest.fixture(autouse=True, scope="session")
def _price_cache_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The prices looked up (`inspector.model.cost`) are kept in a folder of the test run, never in
    the user's cache folder; processes the tests start inherit it."""
    import os

    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture(autouse=True)
def _a_cache_folder_of_its_own(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with an empty cache of loaded transcripts (`inspector.formats.cache`),
    never the user's: a test that runs a command reads the file as a first open would."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """A copy of the bundled long-session sample in a project folder of its own (a file the cache
    tests may touch, rename or grow)."""
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "session.jsonl"
    shutil.copyfile(ROOT / "inspector" / "samples" / "long-session.jsonl", path)
    return path


async def settle(
    pilot: Any,
    request: int | None = None,
    *,
    scanned: bool = False,
    detail: bool = False,
    row: bool = False,
    ready: Callable[[Any], bool] | None = None,
    timeout: float = 12.0,
) -> Any:
    """The app's main screen once it shows `request` (or any request) with its columns drawn, and,
    as asked: the message detail of that request (`detail`; `row`: of the cursor's row too), the
    background scan done (`scanned`: every request, and at least one), no reshaping under way and
    `ready(view)` true. Bounded: an AssertionError says where the app stood after `timeout` s."""
    main = pilot.app.main
    deadline = time.monotonic() + timeout

    def settled() -> bool:
        view = main.view
        if view is None or main.columns.view is not view:
            return False
        if request is not None and view.index != request:
            return False
        shown = main.detail.detail
        if detail and (shown is None or shown.request != view.index):
            return False
        if row and (shown is None or shown.row != main.columns.cursor_row):
            return False
        if scanned and (main.total == 0 or main.scanned < main.total):
            return False
        return not main.reshaping and (ready is None or ready(view))

    while not settled():
        if time.monotonic() > deadline:
            view = main.view
            raise AssertionError(
                f"the app did not settle (request {main.request}, view {view and view.index}, "
                f"scanned {main.scanned} of {main.total})"
            )
        await pilot.pause(0.02)
    await pilot.pause()
    return main
