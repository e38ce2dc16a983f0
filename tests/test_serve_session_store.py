"""The session stores and the context hash without a gateway: bounds by count, bytes and time; Redis for real."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from docsan.chat.context_hash import EMPTY, context_hash, extend, is_context_hash
from docsan.client import HASH_HEADER, SESSION_HEADER, SessionTracker
from docsan.config.serve import SessionsConfig
from docsan.serve.sessions import MemoryStore, SessionState, open_store

HISTORY = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "name": "alice", "content": [{"type": "text", "text": "Größe von 杭州?"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "line\nwith \"quotes\" and \\ and \t"},
]  # fmt: skip


def test_context_hash_is_the_documented_chain() -> None:
    """Computed as docs/sessions.md spells it, with nothing of docsan's: the same 64 hex digits."""
    h = hashlib.sha256(b"docsan-context-v1").hexdigest()
    for m in HISTORY:
        text = json.dumps(m, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        h = hashlib.sha256((h + "\n" + text).encode("utf-8")).hexdigest()
    assert context_hash(HISTORY) == h and is_context_hash(h)
    assert context_hash([]) == EMPTY
    # Chained: the hash of a longer history follows from the shorter one's and the new messages.
    assert extend(context_hash(HISTORY[:2]), HISTORY[2:]) == h
    # Key order does not matter, content does.
    assert context_hash([{"content": "Answer briefly.", "role": "system"}]) == context_hash(HISTORY[:1])
    assert context_hash([{"role": "system", "content": "Answer briefly!"}]) != context_hash(HISTORY[:1])


def test_tracker_sends_the_delta_only_after_the_gateway_named_the_prefix() -> None:
    t = SessionTracker("s1")
    send, headers = t.request(HISTORY[:2])
    assert send == HISTORY[:2] and headers == {SESSION_HEADER: "s1"}
    t.update(HISTORY[:2], {HASH_HEADER: context_hash(HISTORY[:2])})
    send, headers = t.request(HISTORY)
    assert send == HISTORY[2:] and headers[HASH_HEADER] == context_hash(HISTORY[:2])
    # An edited earlier message: the prefix is not the held one any more, so everything goes.
    edited = [{"role": "system", "content": "Answer at length."}, *HISTORY[1:]]
    assert t.request(edited)[0] == edited
    # The same messages again (a retry): never an empty delta.
    assert t.request(HISTORY[:2])[0] == HISTORY[:2]
    # A response without the header (not stored): back to whole histories.
    t.update(HISTORY, {})
    assert t.request(HISTORY)[0] == HISTORY


def _state(tag: str, size: int = 10) -> SessionState:
    return SessionState(context_hash([{"role": "user", "content": tag}]), [{"role": "user", "content": "x" * size}])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_memory_store_evicts_least_recently_used_by_count_and_by_bytes_and_expires() -> None:
    clock = Clock()
    one = len(_state("a").encode())
    store = MemoryStore(SessionsConfig(max_sessions=3, max_bytes=4 * one + 10, ttl_s=60), clock=clock)

    async def scenario() -> None:
        for name in "abc":
            assert (await store.put(name, _state(name))).stored
        assert await store.get("a") is not None  # a is now the most recently used
        result = await store.put("d", _state("d"))
        assert result.evicted == 1 and result.sessions == 3
        assert await store.get("b") is None and await store.get("a") is not None
        # By bytes: one large history pushes out the least recently used until the total fits.
        big = _state("e", size=2 * one)
        result = await store.put("e", big)
        assert result.stored and store.bytes <= 4 * one + 10 and result.evicted >= 1
        assert await store.get("e") == big
        # Larger than the whole store: not stored, nothing else evicted.
        before = len(store)
        assert not (await store.put("huge", _state("h", size=10 * one))).stored
        assert len(store) == before and await store.get("huge") is None
        # Time to live, sliding on use.
        clock.now += 50
        assert await store.get("e") is not None
        clock.now += 20
        assert await store.get("e") is not None  # used 20 s ago
        assert await store.get("d") is None  # unused for 70 s
        # Replacing a session keeps one entry and counts its bytes once.
        await store.put("e", _state("e2"))
        assert store.bytes == sum(len(d) for d, _ in store._items.values())

    asyncio.run(scenario())


def test_redis_store_shares_sessions_between_two_clients_with_the_same_bounds(redis_url: str) -> None:
    prefix = "test-store:"
    one = len(_state("a").encode())
    cfg = SessionsConfig(store=redis_url, max_sessions=3, max_bytes=4 * one + 10, ttl_s=1.0, key_prefix=prefix)

    async def scenario() -> None:
        a, b = open_store(cfg), open_store(cfg)  # two replicas
        try:
            assert a.name == "redis"
            assert (await a.put("s1", _state("s1"))).stored
            assert await b.get("s1") == _state("s1")
            for name in ("s2", "s3"):
                await b.put(name, _state(name))
            await a.get("s1")  # s2 is now the least recently used
            result = await a.put("s4", _state("s4"))
            assert result.evicted == 1 and result.sessions == 3
            assert await b.get("s2") is None and await b.get("s1") is not None
            result = await b.put("s5", _state("s5", size=2 * one))
            assert result.stored and result.bytes <= 4 * one + 10
            assert not (await a.put("huge", _state("h", size=10 * one))).stored
            await asyncio.sleep(1.3)  # past ttl_s: the keys expire in Redis itself
            assert await a.get("s5") is None
            after = await a.put("s6", _state("s6"))
            assert after.sessions == 1 and after.bytes == len(_state("s6").encode())
        finally:
            await a.close()
            await b.close()

    asyncio.run(scenario())


def test_store_setting_is_memory_or_a_redis_url() -> None:
    with pytest.raises(ValueError, match="Redis URL"):
        SessionsConfig(store="postgres://x")
    assert SessionsConfig(store="rediss://h:6380/1").store.startswith("rediss")
