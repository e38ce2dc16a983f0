"""The admission ledger: never more KV demand on an upstream than it holds.

One :class:`Pool` per upstream (a vLLM server; tiers that share a ``base_url`` share its
cache, so they share one pool). A request reserves ``prompt + max_tokens`` tokens rounded up
to whole KV blocks, times ``n`` sequences, when it is sent, and releases them when its
response ends, fails, times out or its client disconnects (:class:`Reservation` is idempotent
and releases on garbage paths too: ``async with`` or ``finally``).

Room is the smaller of two views: the ledger's (capacity minus what is reserved) and the
upstream's own (capacity minus what its ``vllm:kv_cache_usage_perc`` says is used, from a
reading no older than ``stale_after_s``; an older one counts as full, since vLLM's gauges lag
and a silent upstream is no evidence of room). ``max_num_seqs`` (shrunk by the health score,
:mod:`docsan.serve.health`) caps the sequences in flight.

A request that does not fit waits in a bounded queue ordered by class (priority, then
real-time, then deferred jobs) and arrival. The head of the queue is served first even when
a smaller request behind it would fit: letting small requests pass would starve the long
ones, which is the seed's "some requests never get enough memory".

The ledger lives in the gateway process (``[serve.ledger] store = "memory"``, the default) or in a
Redis that gateway replicas share (:mod:`docsan.serve.ledger_redis`: the same pools, their account
kept there).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from docsan.config.serve import LedgerConfig

if TYPE_CHECKING:
    from docsan.serve.ledger_redis import RedisLedger


class Klass(IntEnum):
    """Queue order: lower first."""

    PRIORITY = 0
    REALTIME = 1
    DEFERRED = 2


class AdmissionError(Exception):
    """A request cannot be admitted; ``status`` and ``code`` are what the gateway answers with."""

    def __init__(
        self, message: str, status: int = 503, retry_after: float | None = None, code: str = "upstream_unavailable"
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.code = code


@dataclass(slots=True)
class Reading:
    """One poll of an upstream's /metrics (the vLLM gauges docsan admits by)."""

    at: float
    kv_usage: float  # 0..1, vllm:kv_cache_usage_perc
    waiting: float  # vllm:num_requests_waiting
    running: float
    preemptions_total: float
    # What the server says its cache holds (vllm:cache_config_info), when it says.
    kv_tokens: int | None = None
    block_size: int | None = None


@dataclass(eq=False, slots=True)
class Reservation:
    pool: Pool
    tokens: int
    seqs: int
    tier: str
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.pool._release(self)

    async def __aenter__(self) -> Reservation:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


@dataclass(order=True, slots=True)
class _Waiter:
    klass: int
    seq: int
    tokens: int = field(compare=False)
    seqs: int = field(compare=False)
    tier: str = field(compare=False)
    future: asyncio.Future[Reservation] = field(compare=False)


class Pool:
    """The ledger of one upstream; all methods run on the event loop (no locks needed)."""

    def __init__(
        self,
        url: str,
        *,
        capacity_tokens: int,
        block_size: int,
        max_num_seqs: int,
        queue_max: int,
        stale_after_s: float,
        use_metrics: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.capacity = capacity_tokens
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        # The concurrency cap actually applied (the health score shrinks it below max_num_seqs).
        self.cap = max_num_seqs
        self.queue_max = queue_max
        self.stale_after_s = stale_after_s
        self.use_metrics = use_metrics
        self.clock = clock
        self.reserved = 0
        self.in_flight = 0
        self.reading: Reading | None = None
        # Health: None until the first poll answered; then True/False by the last /health.
        self.healthy: bool | None = None
        self.last_change = clock()
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()

    # --- sizes -----------------------------------------------------------------------------------

    def tokens_for(self, prompt_tokens: int, max_tokens: int, n: int = 1) -> int:
        """KV tokens a request can occupy: prompt + answer in whole blocks, for each of its ``n`` sequences."""
        blocks = math.ceil((prompt_tokens + max_tokens) / self.block_size)
        return blocks * self.block_size * max(1, n)

    def fresh_reading(self) -> Reading | None:
        r = self.reading
        if r is None or self.clock() - r.at > self.stale_after_s:
            return None
        return r

    def upstream_used(self) -> int | None:
        """Tokens the upstream reports in use (scaled to its own cache size when it reports one); None: stale."""
        r = self.fresh_reading()
        if r is None:
            return None
        return math.ceil(r.kv_usage * (r.kv_tokens or self.capacity))

    def free_tokens(self) -> int:
        """Room for a new reservation: both views, the stricter wins; a stale upstream view is no room."""
        ledger_used = self.reserved
        if self.use_metrics:
            used = self.upstream_used()
            if used is None:
                return 0
            ledger_used = max(ledger_used, used)
        return max(0, self.capacity - ledger_used)

    def queue_depth(self, tier: str | None = None) -> int:
        return sum(1 for w in self._waiters if not w.future.done() and (tier is None or w.tier == tier))

    def _upstream_busy(self) -> bool:
        r = self.fresh_reading()
        # vLLM queueing requests of its own means it has no room, whatever the gauges say.
        return self.use_metrics and r is not None and r.waiting > 0

    def fits(self, tokens: int, seqs: int) -> bool:
        return (
            self.healthy is True
            and self.in_flight + seqs <= self.cap
            and tokens <= self.free_tokens()
            and not self._upstream_busy()
        )

    # --- admission -------------------------------------------------------------------------------

    async def try_acquire(self, tokens: int, seqs: int, tier: str) -> Reservation | None:
        """A reservation now, or None; never jumps a waiting request."""
        if self.queue_depth():
            return None
        return await self._grant(tokens, seqs, tier)

    async def _grant(self, tokens: int, seqs: int, tier: str) -> Reservation | None:
        """A reservation if the request fits now (a shared ledger asks its Redis: :mod:`docsan.serve.ledger_redis`)."""
        return self._reserve(tokens, seqs, tier) if self.fits(tokens, seqs) else None

    async def acquire(self, tokens: int, seqs: int, tier: str, klass: Klass, wait_s: float) -> Reservation:
        """Reserve ``tokens`` for ``seqs`` sequences, waiting up to ``wait_s``; raise :class:`AdmissionError`."""
        if self.healthy is False:
            raise AdmissionError(f"tier {tier}: upstream {self.url} is down", status=502)
        if self.healthy is None:
            raise AdmissionError(f"tier {tier}: upstream {self.url} is not ready yet", retry_after=5)
        if tokens > self.capacity:
            raise AdmissionError(self._memory_message(tier, tokens, "the tier holds at most this in all"),
                                 code="memory_limit")  # fmt: skip
        first = not any(not w.future.done() and w.klass <= klass for w in self._waiters)
        if first:
            granted = await self._grant(tokens, seqs, tier)
            if granted is not None:
                return granted
        if self.queue_depth() >= self.queue_max:
            raise AdmissionError(
                self._memory_message(tier, tokens, f"{self.queue_max} requests already waiting"), retry_after=wait_s,
                code="memory_limit",
            )  # fmt: skip
        waiter = _Waiter(int(klass), next(self._seq), tokens, seqs, tier, asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiters, waiter)
        self._queued()
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for returns a result that lands in the iteration its task
            # is cancelled and drops the cancellation (cpython gh-86296), so a gone client would keep its grant.
            async with asyncio.timeout(wait_s):
                return await asyncio.shield(waiter.future)
        except TimeoutError:
            if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
                return waiter.future.result()  # granted in the same instant the wait ran out
            waiter.future.cancel()
            self.dispatch()
            raise AdmissionError(
                self._memory_message(tier, tokens, f"waited {wait_s:g} s"), retry_after=max(1.0, wait_s),
                code="memory_limit",
            ) from None  # fmt: skip
        except asyncio.CancelledError:
            # The client went away while waiting: give back what was granted meanwhile, let the next one in.
            if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
                waiter.future.result().release()
            waiter.future.cancel()
            self.dispatch()
            raise

    def _queued(self) -> None:
        """A request joined the queue: nothing to do here (the next release, poll or cancellation dispatches); a
        shared ledger starts asking its Redis, since other replicas' releases are not events here."""

    def _memory_message(self, tier: str, tokens: int, why: str) -> str:
        return (
            f"memory limit: tier {tier} ({self.url}) has {self.free_tokens()} KV tokens free of "
            f"{self.capacity} ({self.in_flight}/{self.cap} sequences in flight), this request needs {tokens} "
            f"({why}); retry later or send fewer tokens"
        )

    def _reserve(self, tokens: int, seqs: int, tier: str) -> Reservation:
        self.reserved += tokens
        self.in_flight += seqs
        self.last_change = self.clock()
        return Reservation(self, tokens, seqs, tier)

    def _release(self, res: Reservation) -> None:
        self.reserved -= res.tokens
        self.in_flight -= res.seqs
        self.last_change = self.clock()
        self.dispatch()

    def dispatch(self) -> None:
        """Grant waiting requests in order while the head fits (after a release, a poll or a cancellation)."""
        while self._waiters:
            head = self._waiters[0]
            if head.future.done():
                heapq.heappop(self._waiters)
                continue
            if not self.fits(head.tokens, head.seqs):
                return
            heapq.heappop(self._waiters)
            head.future.set_result(self._reserve(head.tokens, head.seqs, head.tier))

    def fail_waiters(self, error: AdmissionError) -> None:
        """The upstream went down: nobody waiting will be served by it."""
        for w in self._waiters:
            if not w.future.done():
                w.future.set_exception(error)
        self._waiters.clear()

    def update(self, *, healthy: bool, reading: Reading | None) -> None:
        """A poll result: record it, fail the waiters of a dead upstream, let in those that fit now."""
        was = self.healthy
        self.healthy = healthy
        if reading is not None:
            self.reading = reading
            if reading.block_size:
                self.block_size = reading.block_size
        if not healthy and was is not False:
            self.fail_waiters(AdmissionError(f"upstream {self.url} is down", status=502))
        self.dispatch()


def open_ledger(cfg: LedgerConfig) -> RedisLedger | None:
    """None: each pool keeps its own account in this process; else the Redis ledger whose pools replicas share."""
    if cfg.store == "memory":
        return None
    from docsan.serve.ledger_redis import RedisLedger

    return RedisLedger(cfg)
