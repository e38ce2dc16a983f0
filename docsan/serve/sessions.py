"""Session stores: each session's history as it was last sent upstream, bounded in count, bytes and time.

The protocol (docs/sessions.md, :mod:`docsan.serve.session_flow`) needs two operations from a
store: read a session (and count it as used), and write its new state. A state is the context hash
of the history the client has sent so far (:mod:`docsan.chat.context_hash`) with the cleaned,
trimmed messages the gateway sent upstream for it, written as one value, so a hash never meets
another history's messages. Bounds, enforced on every write: ``max_sessions``, ``max_bytes`` (of the
messages' JSON, all sessions together), least recently used first; ``ttl_s`` since last use. An
evicted or expired session is simply unknown: the client's next delta gets 409 and it resends.

:class:`MemoryStore` lives in the gateway process (the default). :mod:`docsan.serve.sessions_redis`
keeps the same states in one Redis that several gateway replicas share. A store that cannot answer
raises :class:`StoreUnavailable`: the request gets 503, never a guessed history.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from docsan.config.serve import SessionsConfig


class StoreUnavailable(Exception):
    """The session store did not answer (Redis down or slow)."""


@dataclass(frozen=True, slots=True)
class SessionState:
    """One session: the hash of what its client sent so far, and the messages the gateway holds for it."""

    context_hash: str
    messages: list[dict[str, Any]]

    def encode(self) -> bytes:
        return json.dumps({"hash": self.context_hash, "messages": self.messages}, ensure_ascii=False).encode()

    @classmethod
    def decode(cls, data: bytes | str) -> SessionState:
        value = json.loads(data)
        return cls(value["hash"], value["messages"])


@dataclass(frozen=True, slots=True)
class PutResult:
    """What a write did: stored or not (larger than ``max_bytes`` alone), sessions evicted, the store's size."""

    stored: bool
    evicted: int
    sessions: int
    bytes: int


class SessionStore(Protocol):
    """What the gateway needs from a session store; every method may raise :class:`StoreUnavailable`."""

    name: str
    cfg: SessionsConfig

    async def get(self, session: str) -> SessionState | None: ...

    async def put(self, session: str, state: SessionState) -> PutResult: ...

    async def close(self) -> None: ...


class MemoryStore:
    """Sessions in this process: an LRU dictionary with a byte count and a sliding time-to-live."""

    name = "memory"

    def __init__(self, cfg: SessionsConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.clock = clock
        # session → (encoded state, last use); the first entry is the least recently used.
        self._items: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self.bytes = 0

    async def get(self, session: str) -> SessionState | None:
        item = self._items.get(session)
        if item is None:
            return None
        data, used = item
        if self.clock() - used > self.cfg.ttl_s:
            self._drop(session)
            return None
        self._items[session] = (data, self.clock())
        self._items.move_to_end(session)
        return SessionState.decode(data)

    async def put(self, session: str, state: SessionState) -> PutResult:
        data = state.encode()
        if len(data) > self.cfg.max_bytes:
            return PutResult(False, 0, len(self._items), self.bytes)
        if session in self._items:
            self._drop(session)
        self._items[session] = (data, self.clock())
        self.bytes += len(data)
        evicted = self._expire()
        while len(self._items) > self.cfg.max_sessions or self.bytes > self.cfg.max_bytes:
            self._drop(next(iter(self._items)))
            evicted += 1
        return PutResult(True, evicted, len(self._items), self.bytes)

    def _expire(self) -> int:
        """Drop the sessions past their time-to-live (the oldest are first)."""
        now, n = self.clock(), 0
        while self._items:
            session, (_, used) = next(iter(self._items.items()))
            if now - used <= self.cfg.ttl_s:
                break
            self._drop(session)
            n += 1
        return n

    def _drop(self, session: str) -> None:
        data, _ = self._items.pop(session)
        self.bytes -= len(data)

    def __len__(self) -> int:
        return len(self._items)

    async def close(self) -> None:
        self._items.clear()
        self.bytes = 0


def open_store(cfg: SessionsConfig) -> SessionStore:
    if cfg.store == "memory":
        return MemoryStore(cfg)
    from docsan.serve.sessions_redis import RedisStore

    return RedisStore(cfg)
