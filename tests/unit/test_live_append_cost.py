"""A live append prices only what it added (issue 29): the gauge's money (`money_at`) of a
transcript that extends one seen before reuses that one's costs for the requests they share priced
alike, and says what a fresh computation says."""

from __future__ import annotations

import msgspec.structs
import pytest

import inspector.model.cost as cost
from inspector.formats import load
from inspector.formats.cache import decode, encode
from inspector.model import Transcript
from tests.conftest import ROOT

SAMPLE = ROOT / "inspector" / "samples" / "long-session.jsonl"


@pytest.fixture
def transcript() -> Transcript:
    t = load(SAMPLE)
    assert len(t.requests) > 20 and sum(r.usage is not None for r in t.requests) > 20
    return t


def fresh(t: Transcript, ks: list[int]) -> list[cost.MoneyAt]:
    cost._MEMO.clear()
    return [cost.money_at(t, k) for k in ks]


def counting(monkeypatch: pytest.MonkeyPatch, t: Transcript) -> list[int]:
    """The requests priced from now on (known by their times, which `_request_total` is given)."""
    priced: list[int] = []
    real = cost._request_total
    index = {r.timestamp: r.index for r in t.requests}
    assert len(index) == len(t.requests)  # each request's time is its own

    def spy(usage: object, model: object, timestamp: str | None, table: object) -> float | None:
        priced.append(index[timestamp])
        return real(usage, model, timestamp, table)  # type: ignore[arg-type]

    monkeypatch.setattr(cost, "_request_total", spy)
    return priced


def test_a_grown_transcript_prices_only_its_new_requests(
    transcript: Transcript, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = len(transcript.requests)
    ks = [1, n - 3, n - 2, n]
    want = fresh(transcript, ks)
    assert want[-1].priced and want[-1].text.startswith("cost $") and " so far" in want[-1].text
    cost._MEMO.clear()
    before = msgspec.structs.replace(transcript, requests=transcript.requests[:-3])
    assert cost.money_at(before, n - 3) == want[1]
    priced = counting(monkeypatch, transcript)
    grown = decode(encode(transcript))  # another object, its requests equal but not the same ones
    assert [cost.money_at(grown, k) for k in ks] == want
    assert priced == [n - 2, n - 1, n]  # the three appended, not the session's n


def test_a_request_whose_usage_changed_is_priced_again_with_every_one_after(
    transcript: Transcript, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = len(transcript.requests)
    j = next(r.index for r in transcript.requests[10:] if r.usage is not None)
    cost._MEMO.clear()
    cost.money_at(transcript, n)
    reqs = list(transcript.requests)
    usage = reqs[j - 1].usage
    assert usage is not None
    reqs[j - 1] = msgspec.structs.replace(
        reqs[j - 1], usage=msgspec.structs.replace(usage, output=usage.output + 1_000_000)
    )
    changed = msgspec.structs.replace(transcript, requests=reqs)
    priced = counting(monkeypatch, transcript)
    got = [cost.money_at(changed, k) for k in (j - 1, j, n)]
    assert priced == list(range(j, n + 1))  # from the changed one on
    monkeypatch.undo()
    assert got == fresh(changed, [j - 1, j, n])
    assert got[2] != fresh(transcript, [n])[0]  # a million output tokens more shows in the total
