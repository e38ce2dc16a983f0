"""A bounded least-recently-used cache filled in batches, for per-text results kept across requests.

A chat client re-sends its whole history with every turn: the shingles,
MinHash signatures and token counts of all but the newest messages were
computed for the request before. Keeping them (bounded, least recently used
out) makes a re-sent history cost about its new messages. Computing in
batches keeps the vectorised paths (``minhash.signatures``, the tokenizer's
``count_batch``) for what is missing. Thread-safe: a server may clean requests in threads.

Bounded twice: in entries, and in bytes. A request body may be 8 MiB, so a
bound in entries alone lets long messages take memory without limit; the
bytes are each entry's weight, an estimate of its key's and value's size
that its cache gives (``weigh``, from the text the entry derives from: cheap
to compute, not a measurement), plus :data:`ENTRY_BYTES` of the cache's own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MIB = 1024**2
# What an entry holds besides what its cache weighs: the ordered dict's slot and node (100 bytes, tracemalloc,
# CPython 3.11), and the key's tuple and a small value, which weights leave out.
ENTRY_BYTES = 200


def text_bytes(text: str) -> int:
    """A weight's estimate of a string's size: two bytes a character.

    CPython keeps one to four bytes a character (most kept texts are ASCII, or mixed with CJK); the object's
    header is left to :data:`ENTRY_BYTES`.
    """
    return 2 * len(text)


class BatchCache(Generic[K, V]):
    """At most ``maxsize`` entries of at most ``max_bytes`` together (by ``weigh``), least recently used out.

    :meth:`get_many` computes the missing keys in one call of ``compute``;
    :meth:`get` one key. An entry weighing more than ``max_bytes`` alone is
    returned but not kept: keeping it would evict everything else.
    """

    def __init__(self, maxsize: int, max_bytes: int, weigh: Callable[[K, V], int]) -> None:
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._weigh = weigh
        # Weights are not stored: an entry's is computed again when it goes (weigh is a function of the entry).
        self._data: OrderedDict[K, V] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        """The value of ``key``, from ``compute(key)`` when not kept (one key: no batch to gather)."""
        with self._lock:
            if key in self._data:
                return self._recall(key)
        value = compute(key)
        with self._lock:
            self._keep(key, value)
        return value

    def get_many(self, keys: list[K], compute: Callable[[list[K]], list[V]]) -> list[V]:
        """The values of ``keys``; the missing ones (each once) from one call of ``compute``."""
        with self._lock:
            known = {k: self._recall(k) for k in keys if k in self._data}
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        if missing:
            values = compute(missing)
            with self._lock:
                for k, v in zip(missing, values, strict=True):
                    self._keep(k, v)
            known.update(zip(missing, values, strict=True))
        return [known[k] for k in keys]

    def _recall(self, key: K) -> V:
        """A kept value, now the most recently used (the lock held)."""
        self._data.move_to_end(key)
        return self._data[key]

    def _keep(self, key: K, value: V) -> None:
        """Keep a computed value and evict down to both bounds (the lock held).

        Another thread may have computed and kept the same key meanwhile: its entry stays, counted once.
        """
        if key in self._data:
            self._data.move_to_end(key)
            return
        weight = self._weigh(key, value) + ENTRY_BYTES
        if weight > self.max_bytes:
            return
        self._data[key] = value
        self._bytes += weight
        while len(self._data) > self.maxsize or self._bytes > self.max_bytes:
            self._bytes -= self._weigh(*self._data.popitem(last=False)) + ENTRY_BYTES

    @property
    def bytes(self) -> int:
        """The kept entries' weight together (an estimate, see the module's docstring)."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._data)
