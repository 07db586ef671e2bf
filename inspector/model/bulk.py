"""Building many model objects at once (a reader's load, a calibration pass), and keeping what
lives long out of the collector's walks."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_held = False
"""Set by `hold_for_good`: what is built is kept out of the collector's walks for good."""
_holding = False
"""Set once this module has frozen anything (then `gc.get_freeze_count`, which walks every frozen
object, is never asked, and nothing frozen is let go)."""

FULL_COLLECTION_EVERY = 100
"""For an app: young-generation collections between two full ones, at least (Python's default
is 10; a full one walks every object the app holds)."""


def hold_for_good() -> None:
    """Keep every object made so far, and what each later bulk build makes, out of the collector's
    walks for good: for a process that frees nothing it built before it ends (a command that prints
    and leaves). Its full walks of a 100 MB session's million objects take 0.2 s each."""
    global _held, _holding
    _held = _holding = True
    gc.freeze()


def hold_loaded() -> None:
    """Keep every object alive now out of the collector's walks, for an app about to show the
    session it has just loaded, and make full collections rarer (`FULL_COLLECTION_EVERY`).

    A transcript lives as long as the app and holds no reference cycle (the tests hold every
    reader to that), so it is freed as before when dropped; what the app builds later is
    collected as usual. Without it, an app stepping through a 100 MB session stalls 0.3 s every
    few requests while the collector walks the transcript's objects."""
    global _holding
    _holding = True
    gc.freeze()
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, FULL_COLLECTION_EVERY))


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while many small objects are made and few freed (collections
    would only rescan what was just built, again and again as it grows). Afterwards what was built
    goes straight to the oldest generation (freeze then unfreeze moves objects without scanning;
    only when nothing is frozen: unfreezing lets go of all), so the young collections that follow
    do not rescan it. After `hold_for_good` it is held with the rest; after `hold_loaded` it is
    collected as usual (what is frozen is never counted: `gc.get_freeze_count` walks all of it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if _held:
                gc.freeze()
            elif not _holding and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
