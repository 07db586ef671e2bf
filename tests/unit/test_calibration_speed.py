"""The calibration pass and what re-runs it (issue 29): work done once, the same figures."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from inspector.model import Message, Request, Role, Segment, TextBlock, Transcript, Usage
from inspector.tokens import accuracy
from inspector.tokens.base import serialize
from inspector.tokens.tiktoken_estimator import TiktokenEstimator


def _transcript() -> Transcript:
    same = "the same reminder, repeated by the harness " * 30
    texts = [same, "ok", same, "fine " * 9, same, "done", "a longer answer " * 20, "thanks"]
    messages = [
        Message(id=f"m{i}", role=Role.USER if i % 2 == 0 else Role.ASSISTANT, blocks=(TextBlock(text=t),))
        for i, t in enumerate(texts)
    ]
    requests = [
        Request(index=k, ledger_len=2 * k - 1, segment=0, usage=Usage(input=1000 * k + 7 * k * k, output=5))
        for k in (1, 2, 3, 4)
    ]
    return Transcript(
        format="synthetic",
        path="synthetic",
        messages=messages,
        segments=[Segment(index=0, message_ids=tuple(m.id for m in messages))],
        requests=requests,
    )


def test_the_tiktoken_baseline_reuses_what_the_proportional_mode_tokenized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # with the tiktoken estimator the proportional mode has tokenized every serialized message
    # already: the baseline reads those counts back instead of tokenizing the texts again
    tr = _transcript()
    asked: list[str] = []
    real = TiktokenEstimator.texts

    def texts(self: TiktokenEstimator, batch: Sequence[str]) -> list[int]:
        asked.extend(batch)
        return real(self, batch)

    monkeypatch.setattr(TiktokenEstimator, "texts", texts)
    rep = accuracy(tr, "tiktoken")
    serialized = {serialize(m) for m in tr.messages}
    again = [t for t in asked if t in serialized]
    assert sorted(again) == sorted(serialized)  # each serialized message tokenized exactly once
    fresh = TiktokenEstimator()
    assert [r.request for r in rep.requests] == [2, 3, 4]
    for row in rep.requests:
        k = row.request
        added = tr.ledger(k)[tr.requests[k - 2].ledger_len :]
        want = tr.requests[k - 2].usage.context + sum(fresh.text(serialize(m)) for m in added)  # type: ignore[union-attr]
        assert row.predicted["baseline_tiktoken"] == want


def test_the_tiktoken_baseline_is_the_same_with_either_estimator() -> None:
    # heuristic: a separate tiktoken estimator tokenizes the texts; tiktoken: the counts are read
    # back from the proportional mode's; the baseline's figures are the same
    tr = _transcript()
    by_heuristic = accuracy(tr, "heuristic")
    by_tiktoken = accuracy(tr, "tiktoken")
    got = [r.predicted["baseline_tiktoken"] for r in by_tiktoken.requests]
    assert got == [r.predicted["baseline_tiktoken"] for r in by_heuristic.requests]
    assert len(got) == 3 and got[0] > 1000


def test_the_proportional_mode_reads_heuristic_estimates_from_the_serialized_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inspector.tokens.calibration import calibrate
    from inspector.tokens.heuristic import HeuristicEstimator

    tr = _transcript()
    est = HeuristicEstimator()
    plain = calibrate(tr, est, "proportional")
    want = ([plain.weights(k) for k in (1, 2, 3, 4)], plain.predictions())
    calls: list[str] = []
    real = HeuristicEstimator.message

    def message(self: HeuristicEstimator, m: Message) -> int:
        calls.append(m.id)
        return real(self, m)

    monkeypatch.setattr(HeuristicEstimator, "message", message)
    shared = calibrate(tr, est, "proportional", [serialize(m) for m in tr.messages])
    assert ([shared.weights(k) for k in (1, 2, 3, 4)], shared.predictions()) == want
    assert calls == []  # no message serialized again
    assert sum(want[0][3].values()) == tr.requests[3].usage.context  # type: ignore[union-attr]
    # without the texts each message is sized by the estimator
    calibrate(tr, est, "proportional")
    assert sorted(calls) == sorted(m.id for m in tr.messages)
