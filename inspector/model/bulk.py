"""Building many model objects at once (a reader's load, a calibration pass)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while many small objects are made and few freed (collections
    would only rescan what was just built, again and again as it grows). Afterwards what was built
    goes straight to the oldest generation (freeze then unfreeze moves objects without scanning;
    only when nothing else is frozen), so the young collections that follow do not rescan it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
