"""A bounded least-recently-used cache filled in batches, for per-text results kept across requests.

A chat client re-sends its whole history with every turn: the shingles,
MinHash signatures and token counts of all but the newest messages were
computed for the request before. Keeping them (bounded, least recently used
out) makes a re-sent history cost about its new messages. Computing in
batches keeps the vectorised paths (``MinHash.bulk``, ``encode_batch``) for
what is missing. Thread-safe: a server may clean requests in threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BatchCache(Generic[K, V]):
    """At most ``maxsize`` entries; :meth:`get_many` computes the missing keys in one call of ``compute``."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, keys: list[K], compute: Callable[[list[K]], list[V]]) -> list[V]:
        with self._lock:
            known = {k: self._data[k] for k in keys if k in self._data}
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        if missing:
            known.update(zip(missing, compute(missing), strict=True))
        with self._lock:
            for k in keys:
                self._data[k] = known[k]
                self._data.move_to_end(k)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return [known[k] for k in keys]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
