"""The cost model: a frozen view of its coefficients (`Coefficients`) and the online ridge
regression that learns them from report differences and response outputs (`CostModel`)."""

from __future__ import annotations

import math
from operator import itemgetter, mul

from .features import Features
from .priors import (
    _FREE,
    _SQRT_2PI,
    NOISE_SD,
    NOISE_SHARE,
    PRIORS,
    ROBUST_C,
    UNSEEN_MEAN,
    UNSEEN_SHARE,
    WIDE,
    Kind,
    _bounds,
    _clamp,
    _is_content,
    prior,
    prior_sd,
)


class Coefficients:
    """A frozen view of the cost model: feature name -> coefficient (clamped)."""

    def __init__(self, coef: dict[str, float] | None = None, ratio: float = 1.0) -> None:
        self._coef = coef if coef is not None else {}
        self._ratio = ratio

    def coef(self, name: str) -> float:
        got = self._coef.get(name)
        return got if got is not None else _clamp(name, prior(name, self._ratio)[0])

    def predict(self, x: Features) -> float:
        coef = self._coef
        try:
            # the same products, summed in the same order, at C speed (every name known)
            total: float = sum(map(mul, map(coef.__getitem__, x), x.values()))
            return total
        except KeyError:
            return sum(self.coef(n) * v for n, v in x.items())

    def kind_ratio(self, kind: Kind) -> float:
        return self.coef(kind.value)

    def content(self, x: Features) -> float:
        """What the texts of `x` cost by themselves: their base tokens at the learned ratio of
        their kind (and tool) and shape, without the framing terms (which can be negative)."""
        total = 0.0
        coef = self._coef
        for n, v in x.items():
            if _is_content(n):
                got = coef.get(n)
                total += (got if got is not None else self.coef(n)) * v
        return max(total, 0.0)

    def as_dict(self) -> dict[str, float]:
        out = {n: _clamp(n, prior(n, self._ratio)[0]) for n in PRIORS}
        out.update(self._coef)
        return out


class CostModel(Coefficients):
    """Online ridge regression (recursive least squares) of report differences on content features.

    `wide`: a harness the priors were not chosen on (`CHOSEN_ON`): the wider priors of `WIDE`."""

    def __init__(self, ratio: float = 1.0, wide: bool = False) -> None:
        super().__init__(ratio=ratio)
        self.wide = wide
        self.noise_share = WIDE["noise_share"] if wide else NOISE_SHARE
        self.unseen_share = WIDE["unseen_share"] if wide else UNSEEN_SHARE
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.theta: list[float] = []
        self.P: list[list[float]] = []
        """(prior precision + sum of w x x^T)^-1, in units of the noise variance."""
        self.bounds: list[tuple[float, float]] = []
        """Per coefficient: what `_clamp` keeps it within (-inf/inf where it does not)."""
        self.n = 0
        # a feature joins the regression when first seen (its prior meanwhile); the result is
        # the same as with every feature in from the start, without the rows nothing ever touches
        for name in PRIORS:
            self._coef[name] = _clamp(name, prior_sd(name, ratio, wide)[0])

    def _ensure(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            mean, sd = prior_sd(name, self._ratio, self.wide)
            i = len(self.names)
            self.index[name] = i
            self.names.append(name)
            self.theta.append(mean)
            for row in self.P:
                row.append(0.0)
            self.P.append([0.0] * i + [(sd / NOISE_SD) ** 2])
            self._coef[name] = _clamp(name, mean)
            self.bounds.append(_bounds(name))
        return i

    def snapshot(self) -> Coefficients:
        return Coefficients(dict(self._coef), self._ratio)

    def copy(self) -> CostModel:
        """An independent copy (for a calibration that goes on from this one's state)."""
        model = CostModel.__new__(CostModel)
        model._coef = dict(self._coef)
        model._ratio = self._ratio
        model.wide = self.wide
        model.noise_share = self.noise_share
        model.unseen_share = self.unseen_share
        model.index = dict(self.index)
        model.names = list(self.names)
        model.theta = list(self.theta)
        model.P = [list(row) for row in self.P]
        model.bounds = list(self.bounds)
        model.n = self.n
        return model

    def update(self, x: Features, y: float, robust: bool = True, unseen: bool = False) -> None:
        """Learn from one observed difference `y` explained by features `x`.

        `robust=False` for a hard fact rather than a noisy difference (a report smaller than the
        messages it held, as estimated). `unseen`: `y` may hold content the transcript does not
        (see `UNSEEN_SHARE`)."""
        index = self.index
        idx: list[int] = []
        vals: list[float] = []
        for n, v in x.items():
            if v:
                i = index.get(n)
                idx.append(self._ensure(n) if i is None else i)
                vals.append(v)
        if not idx:
            return
        theta, P = self.theta, self.P
        # The sums below are `sum(theta[i] * v for i, v in nz)`, `[sum(row[i] * v for i, v in nz)
        # for row in P]` and `sum(v * px[i] for i, v in nz)`: the same products summed by `sum` in
        # the same order, at C speed (itemgetter picks the columns, map multiplies).
        if len(idx) == 1:
            j, v0 = idx[0], vals[0]
            err = y - sum((theta[j] * v0,))
            px = [sum((row[j] * v0,)) for row in P]
            xpx = sum((v0 * px[j],))
        else:
            pick = itemgetter(*idx)
            err = y - sum(map(mul, pick(theta), vals))
            px = [sum(map(mul, pick(row), vals)) for row in P]
            xpx = sum(map(mul, vals, pick(px)))
        # robust weight: an error far beyond what the model's own uncertainty and the noise allow
        # (a harness reminder, a hook's output) teaches the ratios little (Cauchy weights)
        noise = NOISE_SD + self.noise_share * abs(y)
        spread = noise * math.sqrt(1.0 + xpx * (NOISE_SD / noise) ** 2)
        z = abs(err) / spread
        w = 1.0 / (1.0 + (z / ROBUST_C) ** 2) if robust else 1.0
        if unseen and robust and err > 0:
            # the odds that the excess is unseen content rather than the model's error
            log_model = -0.5 * z * z - math.log(spread * _SQRT_2PI)
            log_unseen = -err / UNSEEN_MEAN - math.log(UNSEEN_MEAN)
            share = self.unseen_share
            odds = share / (1.0 - share) * math.exp(min(log_unseen - log_model, 700.0))
            w /= 1.0 + odds
            if w <= 0.0:
                self.n += 1
                return
        w *= (NOISE_SD / noise) ** 2
        denom = 1.0 / w + xpx
        coef, names, bounds = self._coef, self.names, self.bounds
        # Row i of P becomes [pij - ki * pj for pij, pj in zip(P[i], px)] where ki is not zero.
        # Where pj is zero that leaves pij as it is (P never holds -0.0: it starts with none, and
        # a difference is -0.0 only from one), unless ki is not finite: then every column.
        live = [j for j, pj in enumerate(px) if pj]
        dense = len(live) == len(px) or not all(map(math.isfinite, px))
        if not dense:
            pcols = [px[j] for j in live]
        for i in live:
            ki = px[i] / denom
            if ki:
                theta[i] += ki * err
                if dense:
                    # (the row written anew: the same differences; a comprehension, whose float
                    # operations 3.11 specializes, takes fewer instructions than map(sub, ...))
                    P[i] = [pij - ki * pj for pij, pj in zip(P[i], px, strict=True)]
                else:
                    row = P[i]
                    for j, pj in zip(live, pcols, strict=True):
                        row[j] -= ki * pj
                b = bounds[i]
                # `_clamp`, without the call (nothing to clamp within `_FREE`)
                coef[names[i]] = theta[i] if b is _FREE else min(max(theta[i], b[0]), b[1])
        self.n += 1
