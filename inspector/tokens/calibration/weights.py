"""Integer weights: how one message's weight changes over the requests (`_Versions`), and a total
split into integers by shares (`apportion`)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence


class _Versions:
    """A weight that changes at some requests: weight from `at[i]` on is `value[i]`."""

    __slots__ = ("at", "value")

    def __init__(self, at: list[int] | None = None, value: list[int] | None = None) -> None:
        self.at: list[int] = at if at is not None else []
        self.value: list[int] = value if value is not None else []

    def set(self, k: int, v: int) -> None:
        if self.at and self.at[-1] == k:
            self.value[-1] = v
        else:
            self.at.append(k)
            self.value.append(v)

    def get(self, k: int) -> int | None:
        at = self.at
        if at and k >= at[-1]:
            return self.value[-1]
        i = bisect.bisect_right(at, k) - 1
        return self.value[i] if i >= 0 else None

    @property
    def last(self) -> int:
        return self.value[-1] if self.value else 0


def apportion(total: int, shares: Sequence[float]) -> list[int]:
    """Integers proportional to `shares` that add up to `total` (largest remainder, ties to the first)."""
    n = len(shares)
    if n == 0:
        return []
    if n == 2 and total >= 0:
        two = _apportion_two(total, shares[0], shares[1])
        if two is not None:
            return two
    return _apportion_any(total, shares)


def _apportion_two(total: int, a: float, b: float) -> list[int] | None:
    """`_apportion_any(total, [a, b])` for `total` >= 0, written out: the pass apportions two
    shares at nearly every request (a response and its tool's result), and this is a third of the
    general case's time (`python -m benchmarks.calibration_pass`). None where the shares sum to
    nothing (then the general case). A test holds the two equal."""
    a = max(a, 0.0)
    b = max(b, 0.0)
    s = a + b
    if s <= 0:
        return None
    ra = total * a / s
    rb = total * b / s
    fa = math.floor(ra)
    fb = math.floor(rb)
    rest = total - fa - fb
    if rest >= 2:
        return [fa + 1, fb + 1]
    if rest == 1:
        return [fa + 1, fb] if fa - ra <= fb - rb else [fa, fb + 1]
    return [fa, fb]


def _apportion_any(total: int, shares: Sequence[float]) -> list[int]:
    """`apportion` of any number of shares (at least one)."""
    n = len(shares)
    pos = [max(s, 0.0) for s in shares]
    s = sum(pos)
    if s <= 0:
        pos = [1.0] * n
        s = float(n)
    if total < 0:
        # negative totals only reach here for deficits; apportion the magnitude and negate
        return [-v for v in apportion(-total, pos)]
    raw = [total * p / s for p in pos]
    base = [math.floor(r) for r in raw]
    rest = total - sum(base)
    if rest:
        order = sorted(range(n), key=lambda i: (base[i] - raw[i], i))
        for i in order[:rest]:
            base[i] += 1
    return base
