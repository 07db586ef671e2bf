"""The persistent cache of what the token passes computed (issue 29, `inspector.tokens.stored`): a
warm open gives the cold one's outputs byte for byte; a restored calibration answers every query
as the computed one; a changed file, setting or code reads no stale entry; `--no-cache` writes
nothing. (conftest points XDG_CACHE_HOME at a folder of each test's.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from inspector.cli import main
from inspector.formats import cache, load
from inspector.model import Transcript
from inspector.tokens import HeuristicEstimator, stored
from inspector.tokens.calibration import OVERHEAD_ID, Calibration
from tests.conftest import FA812, ROOT

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"
COMMANDS = (
    ("report", "--json"),
    ("report", "--json", "--policy", "opencollab"),
    ("findings", "--json"),
    ("calibrate", "--json"),
)


def run(path: Path, capsys: pytest.CaptureFixture[str], *command: str) -> str:
    main([command[0], str(path), *command[1:]])
    return capsys.readouterr().out


def derived() -> list[Path]:
    folder = stored.cache_dir()
    return sorted(folder.glob("*" + cache.SUFFIX)) if folder.exists() else []


def _all_answers(cal: Calibration) -> list[object]:
    """Everything a calibration answers, request by request."""
    tr = cal.transcript
    out: list[object] = [cal.predictions(), cal.spend, cal.strip_thinking, cal.first_report]
    for k in range(1, len(tr.requests) + 1):
        weights = cal.weights(k)
        out += [
            k,
            weights,
            cal.ledger_total(k),
            cal.predicted(k),
            cal.context(k),
            cal.overhead(k),
            cal.model_at(k).as_dict(),
            cal.ratios(k),
            [cal.weight_of(k, mid) for mid in weights],
            cal.weight_at(k, OVERHEAD_ID),
        ]
    return out


def _round_trip(cal: Calibration) -> Calibration:
    """`cal` written as an entry holds it and read back."""
    entry = stored._Entry(calibrations={"delta:heuristic": stored._state_of(cal)})
    back = stored._DECODER.decode(stored._ENCODER.encode(entry)).calibrations["delta:heuristic"]
    got = stored._restored(cal.transcript, HeuristicEstimator(), back)
    assert got is not None
    return got


@pytest.mark.parametrize("upto", [None, 1, 40])
def test_a_restored_calibration_answers_as_the_computed_one(upto: int | None) -> None:
    """Whole, and from a pass that stopped early (asked beyond, it runs the pass again and goes
    on): the same weights, totals, predictions, models, ratios."""
    t = load(SAMPLE)
    want = _all_answers(Calibration(t, HeuristicEstimator()))
    cal = Calibration(t, HeuristicEstimator())
    if upto is None:
        cal.predictions()
    else:
        cal.model_at(upto)
    restored = _round_trip(cal)
    assert restored._done == (upto or len(t.requests))
    assert _all_answers(restored) == want


def test_warm_outputs_are_the_cold_ones_byte_for_byte(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cold = {c: run(session, capsys, *c, "--no-cache") for c in COMMANDS}
    assert derived() == [] and not cache.cache_dir().exists()  # --no-cache wrote nothing
    # calibrate runs the whole pass first (the others then read its entry), then the others fill
    # theirs; then every command again, served from the entries
    for c in (COMMANDS[3], *COMMANDS, *COMMANDS):
        assert run(session, capsys, *c) == cold[c], c
    [entry] = derived()
    assert entry.stem.split("-")[0] == cache.key(session).split("-")[0]  # type: ignore[union-attr]
    held = cache.read_entry(entry.stem, stored.cache_dir(), stored.MAGIC, stored._DECODER.decode)
    assert held is not None and list(held.calibrations) == ["delta:heuristic"] and held.harness
    assert held.calibrations["delta:heuristic"].done == len(load(session).requests)


@pytest.mark.skipif(not FA812.exists(), reason="real transcript corpus not found (../shared/corpus)")
def test_a_corpus_session_warm_is_cold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A compaction: the report runs the pass part of the way (the entry holds that part), then
    findings and calibrate go beyond it."""
    cold = {c: run(FA812, capsys, *c, "--no-cache") for c in COMMANDS}
    for c in (*COMMANDS, *COMMANDS):
        assert run(FA812, capsys, *c) == cold[c], c
    assert len(derived()) == 1


def test_a_changed_file_reads_no_stale_entry(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(session, capsys, "calibrate", "--json")
    [before] = derived()
    with session.open("ab") as fh:  # one message more
        fh.write(SAMPLE.read_bytes().splitlines(keepends=True)[-1].replace(b'"uuid": "', b'"uuid": "x'))
    want = {c: run(session, capsys, *c, "--no-cache") for c in COMMANDS}
    for c in COMMANDS:
        assert run(session, capsys, *c) == want[c], c
    [after] = derived()  # the entry of the file's shorter self was removed
    assert after != before


def test_a_changed_setting_or_code_reads_no_stale_entry(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = load(session)
    k = cache.key(session)
    assert k is not None
    cache.write(k, t)

    def warm() -> Transcript:
        got = cache.cached_load(session, lambda: pytest.fail("read again"))
        assert cache.key_of(got) == k
        return got

    first = warm()
    # a bogus calibration under the heuristic's name, kept: read for the heuristic, never for
    # another mode or estimator, nor by another version of the token code
    n = len(t.requests)
    held = stored._held(first)
    assert held is not None
    held.calibrations["delta:heuristic"] = stored._Calibrated(
        done=1, strip_thinking=True, log=[], predicted=[7] * n, context=[0] * n,
        model=[-1] * n, models=[],
    )  # fmt: skip
    held.changed = True
    stored.write_pending()
    [entry] = derived()
    assert stored.calibration(warm(), HeuristicEstimator()).predicted(1) == 7
    assert stored.calibration(warm(), HeuristicEstimator(), "proportional").predicted(2) != 7
    with monkeypatch.context() as m:
        m.setattr(stored, "CODE", ("tokens/heuristic.py",))
        other = warm()
        held = stored._held(other)
        assert held is not None and held.key != entry.stem and held.calibrations == {}
        assert stored.calibration(other, HeuristicEstimator()).predicted(2) != 7
    pytest.importorskip("tiktoken")
    from inspector.tokens import TiktokenEstimator

    assert 7 not in stored.calibration(warm(), TiktokenEstimator()).predictions()


def test_a_transcript_not_read_through_the_cache_keeps_nothing(session: Path) -> None:
    t = load(session)
    assert cache.key_of(t) is None
    cal = stored.calibration(t, HeuristicEstimator())
    cal.predictions()
    stored.write_pending()
    assert derived() == []


def test_a_broken_entry_is_a_miss(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = run(session, capsys, "calibrate", "--json", "--no-cache")
    run(session, capsys, "calibrate", "--json")
    [entry] = derived()
    entry.write_bytes(stored.MAGIC + msgspec.msgpack.encode({"calibrations": {"delta:heuristic": [1]}}))
    assert run(session, capsys, "calibrate", "--json") == want
    entry.write_bytes(b"not an entry")
    assert run(session, capsys, "calibrate", "--json") == want
    assert derived() and derived()[0].read_bytes().startswith(stored.MAGIC)  # written again


def test_the_entries_are_bounded_by_their_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert 0 < cache.DERIVED_LIMIT < cache.LIMIT_BYTES
    assert cache.DERIVED_LIMIT + cache.TRANSCRIPT_LIMIT == cache.LIMIT_BYTES
    paths = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        paths.append(folder / "session.jsonl")
        shutil.copyfile(SAMPLE, paths[-1])
    run(paths[0], capsys, "calibrate", "--json")
    [one] = derived()
    monkeypatch.setattr(cache, "DERIVED_LIMIT", one.stat().st_size + 1)
    run(paths[1], capsys, "calibrate", "--json")
    [kept] = derived()  # the one used longest ago went
    assert kept != one and kept.stem.split("-")[0] == cache.key(paths[1]).split("-")[0]  # type: ignore[union-attr]


def test_an_entry_written_again_after_its_calibration_was_read_still_holds_it(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command that reads an entry's calibration (filing its log of weights) and then writes the
    entry again (its harness pass was new) must write the log it read, not the emptied list:
    `calibrate` fills the calibration alone, `report` reads it and adds the harness rows, and the
    next `report` reads both. (A restored calibration once shared its log with the entry: the
    third open weighed spotter-fa812bfe's folded messages at 148,034 tokens for 141,197.)"""
    order = (("calibrate", "--json"), ("report", "--json", "--step", "20"), ("report", "--json"))
    cold = {c: run(session, capsys, *c, "--no-cache") for c in order}
    for c in (*order, *order):
        assert run(session, capsys, *c) == cold[c], c
    [entry] = derived()
    held = cache.read_entry(entry.stem, stored.cache_dir(), stored.MAGIC, stored._DECODER.decode)
    assert held is not None and held.harness and held.calibrations["delta:heuristic"].log
