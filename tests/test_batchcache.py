"""The cleaning caches' class: least recently used out, bounded in entries and in (estimated) bytes, thread-safe."""

from __future__ import annotations

import threading

from docsan.text.batchcache import ENTRY_BYTES, BatchCache

# Each entry here weighs its value's length plus the cache's own ENTRY_BYTES.
UNIT = 100 + ENTRY_BYTES


def _weigh(key: str, value: str) -> int:
    return len(value)


def _cache(maxsize: int = 1000, entries: int = 3) -> tuple[BatchCache[str, str], list[str]]:
    """A cache of ``maxsize`` entries and the bytes of ``entries`` of 100 characters; a list for the keys computed."""
    computed: list[str] = []
    return BatchCache(maxsize, entries * UNIT, _weigh), computed


def _value(key: str) -> str:
    return key * 100 if len(key) == 1 else key


def _get(cache: BatchCache[str, str], computed: list[str], key: str) -> str:
    def compute(k: str) -> str:
        computed.append(k)
        return _value(k)

    return cache.get(key, compute)


def test_byte_bound_evicts_least_recently_used() -> None:
    cache, computed = _cache()
    for key in "abc":
        _get(cache, computed, key)
    _get(cache, computed, "a")  # a is now the most recently used: b is the least
    _get(cache, computed, "d")  # over the bytes of three entries: one goes
    assert computed == ["a", "b", "c", "d"] and len(cache) == 3 and cache.bytes == 3 * UNIT
    computed.clear()
    for key in "acd":
        _get(cache, computed, key)
    assert computed == []  # kept
    _get(cache, computed, "b")
    assert computed == ["b"]  # evicted, computed again


def test_heavier_entry_evicts_as_many_as_its_weight_needs() -> None:
    cache, computed = _cache(entries=4)
    for key in "abcd":
        _get(cache, computed, key)
    assert _get(cache, computed, "e" * 250) == "e" * 250  # 2.5 units: the two least recently used go
    assert len(cache) == 3 and cache.bytes == 2 * UNIT + 250 + ENTRY_BYTES
    computed.clear()
    for key in "cd":
        _get(cache, computed, key)
    _get(cache, computed, "a")
    assert computed == ["a"]


def test_entry_heavier_than_the_bound_is_returned_not_kept() -> None:
    cache, computed = _cache()
    for key in "ab":
        _get(cache, computed, key)
    big = "x" * (3 * UNIT)
    assert _get(cache, computed, big) == big
    assert cache.get_many([big, "a"], lambda keys: [_value(k) for k in keys]) == [big, "a" * 100]
    assert len(cache) == 2 and cache.bytes == 2 * UNIT  # the others stay
    computed.clear()
    _get(cache, computed, big)
    assert computed == [big]


def test_entry_count_still_bounded() -> None:
    cache, computed = _cache(maxsize=2, entries=100)
    for key in "abc":
        _get(cache, computed, key)
    assert len(cache) == 2 and cache.bytes == 2 * UNIT
    computed.clear()
    _get(cache, computed, "a")
    assert computed == ["a"]


def test_get_many_computes_the_missing_once_in_one_batch() -> None:
    cache, _ = _cache(entries=10)
    batches: list[list[str]] = []

    def compute(keys: list[str]) -> list[str]:
        batches.append(keys)
        return [_value(k) for k in keys]

    assert cache.get_many(["a", "b"], compute) == ["a" * 100, "b" * 100]
    assert cache.get_many(["c", "a", "c", "d"], compute) == ["c" * 100, "a" * 100, "c" * 100, "d" * 100]
    assert batches == [["a", "b"], ["c", "d"]]
    assert len(cache) == 4 and cache.bytes == 4 * UNIT
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


def test_a_key_computed_by_two_threads_at_once_is_kept_and_counted_once() -> None:
    cache, _ = _cache(entries=10)
    both_computing = threading.Barrier(2, timeout=10)

    def compute(key: str) -> str:
        both_computing.wait()  # neither has kept it yet
        return _value(key)

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("a", compute))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["a" * 100] * 2
    assert len(cache) == 1 and cache.bytes == UNIT


def test_threads_share_one_cache_within_its_bounds() -> None:
    cache, _ = _cache(maxsize=40, entries=30)
    keys = [f"k{i:03d}" + "." * (i % 7) * 20 for i in range(200)]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for n in range(300):
                batch = [keys[(offset + n + j * 13) % len(keys)] for j in range(5)]
                assert cache.get_many(batch, lambda ks: [_value(k) for k in ks]) == [_value(k) for k in batch]
                assert cache.get(batch[0], _value) == _value(batch[0])
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i * 31,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cache) <= 40 and cache.bytes <= 30 * UNIT
    # Which keys are kept, asked without changing what is: a value heavier than the bound is never kept.
    too_big = "x" * (30 * UNIT)
    kept = [k for k in keys if cache.get(k, lambda k: too_big) != too_big]
    assert len(kept) == len(cache)
    assert cache.bytes == sum(len(_value(k)) + ENTRY_BYTES for k in kept)
