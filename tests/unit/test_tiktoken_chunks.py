"""`TiktokenEstimator.texts` cuts long texts into chunks and tokenizes each distinct chunk once:
the cuts must be places no piece of either encoding's pattern spans, so the counts stay exact."""

from __future__ import annotations

import random

import pytest
import regex

from inspector.formats.detect import load
from inspector.tokens import tiktoken_estimator as tk
from inspector.tokens.base import serialize
from inspector.tokens.calibration.features import _texts_of
from tests.conftest import FA812, corpus_file

PATTERNS = [regex.compile(tk._PAT_CL100K), regex.compile(tk._PAT_O200K)]


def _cuts(text: str) -> set[int]:
    parts = tk.chunks(text)
    assert "".join(parts) == text
    out, at = set(), 0
    for part in parts[:-1]:
        at += len(part)
        out.add(at)
    return out


def _check(text: str) -> int:
    """The cuts of `text` (chunked whatever its length), each checked against both patterns."""
    cuts = _cuts(text)
    for pattern in PATTERNS:
        ends = {m.end() for m in pattern.finditer(text)}
        assert cuts <= ends, (pattern.pattern[:20], text)
    return len(cuts)


def test_cuts_are_piece_boundaries_on_made_up_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tk, "CHUNKED_CHARS", 0)
    alphabet = [*"\n\n  \t\\nn's/.A1é\u0301\r}{:\"-x\u00a0\u2028", "\\n", "\\n ", "\n/", "n's", "\n  ", "'re"]
    rng = random.Random(29)
    cuts = sum(
        _check("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))) for _ in range(20_000)
    )
    assert cuts > 10_000


def test_cuts_are_piece_boundaries_and_counts_exact_on_a_real_session() -> None:
    transcript = load(str(corpus_file(str(FA812.relative_to(FA812.parents[2])))))
    texts = {serialize(m) for m in transcript.messages} | {
        t for m in transcript.messages for t in _texts_of(m)
    }
    long = [t for t in texts if len(t) >= tk.CHUNKED_CHARS]
    assert sum(_check(t) for t in long) > 1_000
    est = tk.TiktokenEstimator()
    encode = est.encoding.encode_ordinary
    ordered = sorted(texts)
    assert est.texts(ordered) == [len(encode(t)) for t in ordered]


def test_short_texts_are_not_cut() -> None:
    assert tk.chunks("a\nb\\n c") == ["a\nb\\n c"]
    assert tk.chunks("") == [""]
