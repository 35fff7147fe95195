"""The in-memory caches' container: a thread-safe map that keeps only its most
recently used entries (``astad.config.memory_cache_size`` of them)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Iterable, TypeVar

V = TypeVar("V")


def snapshot(items: Callable[[], Iterable[V]]) -> list[V]:
    """``list(items())`` of a weak set or dict that another thread may add to meanwhile: iterating one
    runs Python code between its items, and an addition there raises RuntimeError ("changed size
    during iteration"); taken again until a pass sees no change (an addition is rare and quick)."""
    while True:
        try:
            return list(items())
        except RuntimeError:
            pass


class LRU(Generic[V]):
    """A map of at most ``size()`` entries; putting one more forgets the least
    recently used.  Threads may share it: changes hold a lock, and a read is
    made of single (atomic) OrderedDict operations."""

    def __init__(self, size: Callable[[], int]) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        # no lock: each OrderedDict operation is atomic; an entry forgotten between the two is simply gone
        value = self._entries.get(key)
        if value is not None:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                pass
        return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            limit = max(int(self._size()), 0)
            while len(self._entries) > limit:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
