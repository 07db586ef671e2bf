"""Work the calibration shares instead of redoing: the pieces' masks, the arguments' sizes.

`features.pieces` keeps masks as long as the longest text it met (up to `_MASKS_KEPT`); a text
longer than the kept ones, or beyond the bound, counts as the regex does. `base.compact_json`
remembers each arguments object's size (the harness estimate and the calibration both ask),
bounded, and never answers for another object with the answer of one it met."""

from __future__ import annotations

import pytest

from inspector.tokens import base
from inspector.tokens.calibration import features


def test_pieces_count_as_the_regex_across_mask_growth_and_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(features, "_masks", (0, 0, 0, 0))
    monkeypatch.setattr(features, "_MASKS_KEPT", 8192)
    unit = "ab 12345\n\n  x\t-é 1234567 \x0b"
    for copies in (1, 200, 400, 1000):  # 4,096 bytes kept, then 8,192, then one made for itself
        text = unit * copies
        assert features.pieces(text) == features._pieces_by_regex(text)
    assert features._masks[0] == 8192  # not grown past the bound
    # a short text after a long one: the kept masks, longer than it, give its own count
    assert features.pieces("x  1234\n") == features._pieces_by_regex("x  1234\n") == 5


def test_pieces_digit_runs_counted_only_where_four_digits_stand_together() -> None:
    # no run of four: no digit pass; runs of 4, 7 and 10 digits: 2, 3 and 4 pieces
    assert features.pieces("1 22 333") == features._pieces_by_regex("1 22 333") == 3
    for run, want in ((4, 2), (7, 3), (10, 4)):
        text = "a" + "9" * run
        assert features.pieces(text) == features._pieces_by_regex(text) == 1 + want


def test_compact_json_is_remembered_per_object_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    memo: dict[int, object] = {}
    monkeypatch.setattr(base, "_compact_memo", memo)
    monkeypatch.setattr(base, "COMPACT_MEMO", 3)
    calls: list[object] = []
    written = base.compact_json_of

    def counted(args: dict[str, object]) -> base.CompactJson | None:
        calls.append(args)
        return written(args)

    monkeypatch.setattr(base, "compact_json_of", counted)
    args = {"path": "a.py", "n": [1, 2]}
    first = base.compact_json(args)
    assert first == (25, 25, 0, 4, 6)  # {"path":"a.py","n":[1,2]}; json.dumps adds 4 spaces; 6 quotes
    assert base.compact_json(args) is first
    assert len(calls) == 1  # written once
    other = {"path": "b/longer.py"}  # another object: its own size
    assert base.compact_json(other) == (22, 22, 0, 1, 4)  # {"path":"b/longer.py"}
    assert len(calls) == 2
    for i in range(3):
        base.compact_json({"i": i})
    assert len(memo) <= 3  # bounded: emptied when full
    assert base.compact_json({"x": 1.5}) is None  # refused ones are remembered as refused
