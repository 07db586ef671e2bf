"""An Estimator for the shaping pipeline at one request, backed by a calibration's weights."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.model import Message

from ..base import Estimator
from .cost_model import Coefficients
from .features import OVERHEAD_ID

if TYPE_CHECKING:
    from .core import Calibration


class CalibratedEstimator:
    """An Estimator for the shaping pipeline at one request: calibrated weights for ledger messages.

    An unchanged ledger message (the very object, or an equal one) weighs its calibrated weight;
    a changed one (truncated, cleared, summarized by a layer) is sized from the base estimator
    by the ratio learned for its kind of content (the delta mode's cost model, the proportional
    mode's scale), never more than the original's weight when its text got shorter.
    """

    def __init__(
        self, calibration: Calibration, k: int, base: Estimator, standing: dict[str, int] | None = None
    ) -> None:
        """`standing`: weights that stand in for the calibrated ones of those ledger messages
        (what a harness cleared only in what it sent weighs whole; `Replay._as_sent`)."""
        self.name = f"calibrated-{calibration.mode}({base.name})"
        self._cal = calibration
        self._k = k
        self._base = base
        self._standing = standing or {}
        self._index = calibration.transcript.messages_by_id()
        # Weights are looked up one message at a time where the calibration can (no dict of the
        # whole ledger per request); else the calibration's cached dict, shared and read only.
        lazy = calibration._lazy_positions(k)
        self._pos, self._len = lazy if lazy is not None else ({}, 0)
        self._weights = calibration.shared_weights(k) if lazy is None else None
        self._read: dict[str, int | None] = {}
        """Weights read one by one so far (a layer sizes a message and its changed copy, which
        share an id, many times over)."""
        self._reached = False
        """The calibration's pass has run to k."""
        self._coefs: Coefficients | None = None
        """`model_at(k)`, once asked for."""

    def text(self, text: str) -> int:
        return self._cal.changed_text(self._k, text, self._base)

    def _weight(self, mid: str) -> int | None:
        """`Calibration.weights(k).get(mid)`: the weight of a ledger message (or the overhead)."""
        if self._standing:
            stood = self._standing.get(mid)
            if stood is not None:
                return stood
        if self._weights is not None:
            return self._weights.get(mid)
        read = self._read
        if mid in read:
            return read[mid]
        w: int | None = None
        if mid == OVERHEAD_ID or self._pos.get(mid, self._len) < self._len:
            if not self._reached:
                self._cal._upto(self._k)  # (the estimator may be made before the pass ran)
                self._reached = True
            w = self._cal._read_weight(self._k, mid)
        read[mid] = w
        return w

    def message(self, message: Message) -> int:
        if message.id == OVERHEAD_ID:
            return self._weight(OVERHEAD_ID) or 0
        # weights are kept for exactly the ledger's ids: a ledger message is the transcript's own object
        cal = self._cal
        w = self._weight(message.id)
        orig = self._index.get(message.id) if w is not None else None
        if orig is not None and w is not None and (message is orig or cal._same_as_own(message, orig)):
            return w
        if self._coefs is None and cal.mode == "delta":
            self._coefs = cal.model_at(self._k)
        pred = cal.changed_message(self._k, message, self._base, self._coefs)
        if orig is not None and w is not None and cal._text_len(message) <= cal._text_len(orig):
            pred = min(pred, w)
        return pred
