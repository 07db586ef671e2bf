"""What is kept of an object for as long as it lives, keyed by the object itself, not its value.

A transcript is a struct that is not hashable (and hashing one by value would walk every message):
what a module remembers of one (the key it was cached under, what its passes computed) is keyed by
its identity, with a weak reference to tell a live object from a dead one whose id came back.
"""

from __future__ import annotations

import threading
import weakref
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """A map from live objects (by identity, never kept alive by it) to values; thread-safe."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[K], V]] = {}
        self._lock = threading.Lock()

    def __contains__(self, obj: K) -> bool:
        with self._lock:
            hit = self._items.get(id(obj))
        return hit is not None and hit[0]() is obj

    def get(self, obj: K) -> V | None:
        """The value kept for `obj`, None where there is none (or it was kept for a dead object
        whose id `obj` now has)."""
        with self._lock:
            hit = self._items.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else None

    def set(self, obj: K, value: V) -> None:
        """Keep `value` for `obj` (and forget what was kept for objects no longer alive)."""
        with self._lock:
            items = self._items
            for i in [i for i, (ref, _) in items.items() if ref() is None]:
                del items[i]
            items[id(obj)] = (weakref.ref(obj), value)

    def pop_all(self) -> list[V]:
        """The values kept for the objects still alive, all of them forgotten."""
        with self._lock:
            items, self._items = self._items, {}
        return [value for ref, value in items.values() if ref() is not None]
