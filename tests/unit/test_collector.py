"""What lives long is kept out of the collector's walks (`inspector.model.bulk`): a loaded
transcript holds no reference cycle (so holding it is safe: dropped, it is freed as before), the
app holds it and makes full collections rarer, and a bulk build after that is collected as usual."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from inspector.formats import LoaderError
from inspector.tui.live import open_transcript
from tests.conftest import ROOT, python_lines, real_transcripts


@pytest.mark.parametrize("path", real_transcripts(), ids=lambda p: p.name)
def test_a_loaded_transcript_holds_no_reference_cycle(path: Path) -> None:
    for follow in (False, True):
        try:
            opened = open_transcript(path, follow=follow)
        except LoaderError:
            continue  # (a folder cannot be followed)
        assert opened.transcript.messages or opened.transcript.load_issues
        gc.collect()
        del opened
        assert gc.collect() == 0, (path.name, follow)  # all of it freed by reference counting


def test_the_app_holds_the_session_it_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspector.tui.app as app_module
    from inspector.formats import load

    held: list[bool] = []
    monkeypatch.setattr(app_module, "hold_loaded", lambda: held.append(True))
    monkeypatch.setattr(app_module.InspectorApp, "run", lambda self: None)
    app_module.run_app(None)
    assert held == []  # the picker: sessions come and go
    app_module.run_app(load(ROOT / "inspector" / "samples" / "short-session.jsonl"))
    assert held == [True]


def test_after_hold_loaded_bulk_builds_are_collected_as_usual() -> None:
    code = (
        "import gc\n"
        "from inspector.formats import load\n"
        "from inspector.model.bulk import FULL_COLLECTION_EVERY, hold_loaded, paused_gc\n"
        "before = len(gc.get_objects())\n"
        f"t = load({str(ROOT / 'inspector' / 'samples' / 'long-session.jsonl')!r})\n"
        "hold_loaded()\n"
        "held = gc.get_freeze_count()\n"
        "with paused_gc():\n"
        "    built = [[i] for i in range(5000)]\n"
        # nothing held is let go, nothing built is held
        "print(held >= before + len(t.messages), gc.get_freeze_count() == held, gc.isenabled())\n"
        "print(gc.get_threshold()[2] == FULL_COLLECTION_EVERY == 100)\n"
    )
    assert python_lines(code) == ["True True True", "True"]


def test_bulk_builds_after_hold_for_good_are_held_too() -> None:
    code = (
        "import gc\n"
        "from inspector.model.bulk import hold_for_good, paused_gc\n"
        "with paused_gc():\n"
        "    a = [[i] for i in range(5000)]\n"
        "print(gc.get_freeze_count())\n"  # moved to the oldest generation, nothing held
        "hold_for_good()\n"
        "held = gc.get_freeze_count()\n"
        "with paused_gc():\n"
        "    b = [[i] for i in range(5000)]\n"
        "print(gc.get_freeze_count() - held >= 5001, gc.isenabled())\n"
    )
    assert python_lines(code) == ["0", "True True"]
