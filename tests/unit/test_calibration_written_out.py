"""The cases the calibration package writes out for speed give what the general code gives.

Each copy is kept because `python -m benchmarks.calibration_pass` shows it pays (per call, on the
inputs one pass gives it); these hold every copy equal to the code it copies, input for input."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from inspector.model import Message, Role, TextBlock
from inspector.tokens.calibration.delta import _Pending, _targets, _targets_two
from inspector.tokens.calibration.weights import _apportion_any, _apportion_two, apportion

TOTALS = st.integers(min_value=0, max_value=10_000_000)
SHARES = st.one_of(
    st.floats(min_value=-5_000.0, max_value=5e6, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 3.0]),
)
MESSAGE = Message(id="m", role=Role.USER, blocks=(TextBlock(text="x"),))


@settings(max_examples=3000, deadline=None)
@given(TOTALS, SHARES, SHARES)
@example(10, 1.0, 1.0)
@example(7, 0.0, 0.0)
@example(3, 1.0, 2.0)
@example(0, 5.0, 5.0)
def test_two_shares_apportion_as_the_general_case(total: int, a: float, b: float) -> None:
    fast = _apportion_two(total, a, b)
    general = _apportion_any(total, [a, b])
    if fast is None:
        assert max(a, 0.0) + max(b, 0.0) <= 0
    else:
        assert fast == general
    assert apportion(total, [a, b]) == general
    assert sum(general) == total


def test_the_two_share_case_takes_the_remainder_as_the_general_case_does() -> None:
    # 10 over 1:1 and 7 over 1:1: the remainder goes to the first; 3 over 1:2 splits exactly
    assert _apportion_two(10, 1.0, 1.0) == [5, 5] == _apportion_any(10, [1.0, 1.0])
    assert _apportion_two(7, 1.0, 1.0) == [4, 3] == _apportion_any(7, [1.0, 1.0])
    assert _apportion_two(3, 1.0, 2.0) == [1, 2]
    assert _apportion_two(7, 0.0, 0.0) is None and apportion(7, [0.0, 0.0]) == [4, 3]


COSTS = st.one_of(
    st.floats(min_value=-3_000.0, max_value=2e5, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0]),
)


@settings(max_examples=3000, deadline=None)
@given(TOTALS, COSTS, COSTS, st.sampled_from([0.0, 1.0, 500.0]), st.sampled_from([0.0, 250.0]))
@example(1000, 400.0, 500.0, 0.0, 0.0)
@example(0, 400.0, 500.0, 0.0, 0.0)
@example(100, -50.0, 500.0, 0.0, 0.0)
def test_two_messages_take_their_targets_as_the_general_case(
    total: int, ca: float, cb: float, ka: float, kb: float
) -> None:
    a = _Pending(MESSAGE, ca, ka, {}, 0.0)
    b = _Pending(MESSAGE, cb, kb, {}, 0.0)
    fast = _targets_two(total, a, b)
    general = _targets(total, [a, b])
    if fast is not None:
        assert fast == general
    assert (a.cost, a.known, b.cost, b.known) == (ca, ka, cb, kb)  # neither changes the pending


def test_the_two_message_case_answers_where_the_general_case_ends_in_its_first_round() -> None:
    a = _Pending(MESSAGE, 400.0, 0.0, {}, 0.0)
    b = _Pending(MESSAGE, 500.0, 0.0, {}, 0.0)
    # 100 tokens more than predicted: shared by the uncertain parts (401 and 501)
    assert (
        _targets_two(1000, a, b)
        == _targets(1000, [a, b])
        == [400.0 + 100 * 401 / 902, 500.0 + 100 * 501 / 902]
    )
    # far less than predicted: one would go below zero, so the general case's later rounds decide
    c = _Pending(MESSAGE, 1.0, 0.0, {}, 0.0)
    assert _targets_two(100, c, b) is None
    assert _targets(100, [c, b]) == [0.0, 100.0]


PIECE_CHARS = st.sampled_from(
    list(' \t\n\r\x0b\x0c\x1c\x1faZz09.,-_{}"é€—…\x85\xa0\u1680\u2003\u2028\u205f\u3000\ud800😀')
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(PIECE_CHARS, st.sampled_from(["1234567", "    ", " \n ", "ab cd"])), max_size=40))
@example([])
@example(["1234567", "1234567"])  # one run of 14 digits: five pieces
@example([" ", " ", "a"])
@example(["\n", "a", "\t"])
def test_pieces_counts_what_the_regex_matches(chunks: list[str]) -> None:
    from inspector.tokens.calibration.features import _pieces_by_regex, pieces

    text = "".join(chunks)
    assert pieces(text) == _pieces_by_regex(text)


def test_pieces_counts_what_the_regex_matches_on_the_corpus_results() -> None:
    """Every tool result of the corpus (code, JSON, logs, CJK, emoji): the same count."""
    import pytest

    from inspector.formats import load
    from inspector.model import ToolResultBlock
    from inspector.tokens.calibration.features import _pieces_by_regex, pieces
    from tests.conftest import CORPUS

    files = sorted([*CORPUS.glob("*/*.jsonl"), *CORPUS.glob("*/*-chat.json")])
    if not files:
        pytest.skip(f"the shared corpus is not here ({CORPUS} absent)")
    texts = {
        b.content
        for f in files
        for m in load(str(f)).messages
        for b in m.blocks
        if isinstance(b, ToolResultBlock) and b.content
    }
    assert len(texts) > 500
    assert sum(not t.isascii() for t in texts) > 100
    assert [pieces(t) for t in texts] == [_pieces_by_regex(t) for t in texts]


def test_every_wide_space_is_seen_by_its_bytes() -> None:
    """`pieces` leaves text to the regex where a whitespace beyond ASCII is: every one, and only
    those (each character alone, and each beside the others, which share their leads)."""
    import re

    from inspector.tokens.calibration.features import _ASCII_SPACES, _WIDE_SPACE, _wide_space_in

    spaces = [chr(i) for i in range(0x110000) if re.match(r"\s", chr(i))]
    wide = [c for c in spaces if ord(c) > 127]
    assert {ord(c) for c in spaces if ord(c) <= 127} == set(_ASCII_SPACES)
    assert len(wide) == 19
    assert all(_WIDE_SPACE.match(c) for c in wide)
    others = [chr(i) for i in range(128, 0x110000) if not re.match(r"\s", chr(i))]
    for c in others:
        assert not _wide_space_in(c.encode("utf-8", "surrogatepass")), hex(ord(c))
    near = "".join(chr(i) for i in (0x84, 0x86, 0x9F, 0x1681, 0x1FFF, 0x200B, 0x2014, 0x205E, 0x3001))
    assert not _wide_space_in(near.encode())
    for c in wide:
        assert _wide_space_in(c.encode()), hex(ord(c))
        assert _wide_space_in((near + c + near).encode()), hex(ord(c))
