"""The admission ledger in a Redis that gateway replicas share: one capacity and one sequence cap per upstream.

Per upstream URL, three keys (``PREFIX + "{URL}"`` and a suffix; the braces make them one Redis Cluster slot):
``:leases``, a sorted set of lease ids scored by their expiry (milliseconds, Redis's own clock, so the
replicas' clocks never matter); ``:held``, each lease's ``"tokens seqs"``; ``:totals``, the sums of both.
Every operation is one Lua script, atomic on the server whatever the replicas do at the same time, and
each first drops the leases past their expiry, so a replica that died frees its KV room within
``lease_s`` without anyone cleaning up after it:

- reserve: grants a lease when ``max(reserved, upstream used) + tokens <= capacity`` and ``in flight + seqs
  <= cap``, with the capacity, the cap and the upstream's ``/metrics`` reading of the asking replica;
- release: drops leases (idempotent: an expired or released id changes nothing);
- renew: moves the expiry of this replica's leases forward, every :data:`RENEW_S`. A lease that is missing
  while its request still runs (Redis restarted empty, or unreachable for longer than ``lease_s``) is added
  again: that request still holds its KV on the upstream, and an honest total that is over capacity for a
  while only stops new admissions.

What stays per replica: the waiting queue (priority, then arrival, head first) and its wait. Another
replica's release is no event here, so while a request waits its replica asks again every
:data:`RETRY_S`. Room is still also bounded by the upstream's own ``/metrics`` reading, as with the
memory ledger. A Redis error or a time-out of ``timeout_s`` is :class:`LedgerUnavailable`: 503
``ledger_unavailable``, and never an admission without the ledger (fail closed). A release that cannot
reach Redis is kept and sent again; its lease expires meanwhile anyway. A grant whose answer never
arrived (a time-out, a request cancelled while asking) is renewed by nobody and lapses the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from redis.exceptions import RedisError

from docsan.config.serve import LedgerConfig
from docsan.serve.ledger import AdmissionError, Pool, Reservation
from docsan.serve.redis_client import connect, where

log = logging.getLogger("docsan.serve")

# Renewal period: a second is the order of the upstream poll, so the shared totals this replica reports (in
# /metrics and to its HealthScore, which needs every replica's reservations) are as fresh as its /metrics readings;
# against the 15 s default lease it leaves 14 renewals that may fail before a live request loses its lease.
RENEW_S = 1.0
# How often a waiting request asks again: other replicas' releases come as no event. 50 ms adds at most that to a
# wait, and costs one script call (well under a millisecond on the server) per waiting upstream per replica.
RETRY_S = 0.05
# After a failed call, the next try (releases kept, waiters already failed) comes this much later.
BACKOFF_S = 0.5

# KEYS: leases, held, totals. The common head of every script: drop expired leases, read the totals.
_HEAD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function drop(id)
  local held = redis.call('HGET', KEYS[2], id)
  redis.call('ZREM', KEYS[1], id)
  if not held then return end
  local tokens, seqs = string.match(held, '(%d+) (%d+)')
  redis.call('HINCRBY', KEYS[3], 'tokens', -tonumber(tokens))
  redis.call('HINCRBY', KEYS[3], 'seqs', -tonumber(seqs))
  redis.call('HDEL', KEYS[2], id)
end
local function hold(id, tokens, seqs, expiry)
  redis.call('ZADD', KEYS[1], expiry, id)
  redis.call('HSET', KEYS[2], id, tokens .. ' ' .. seqs)
  redis.call('HINCRBY', KEYS[3], 'tokens', tokens)
  redis.call('HINCRBY', KEYS[3], 'seqs', seqs)
end
local function totals()
  local v = redis.call('HMGET', KEYS[3], 'tokens', 'seqs')
  return tonumber(v[1] or '0'), tonumber(v[2] or '0')
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do drop(id) end
"""

# ARGV: id, tokens, seqs, capacity, upstream used, cap, lease ms. Returns {granted (0/1), reserved, seqs in flight}.
_RESERVE = (
    _HEAD
    + """
local tokens, seqs = tonumber(ARGV[2]), tonumber(ARGV[3])
local reserved, inflight = totals()
if inflight + seqs > tonumber(ARGV[6]) or math.max(reserved, tonumber(ARGV[5])) + tokens > tonumber(ARGV[4]) then
  return {0, reserved, inflight}
end
hold(ARGV[1], tokens, seqs, now + tonumber(ARGV[7]))
return {1, reserved + tokens, inflight + seqs}
"""
)

# ARGV: ids. Returns {reserved, seqs in flight}.
_RELEASE = (
    _HEAD
    + """
for _, id in ipairs(ARGV) do drop(id) end
local reserved, inflight = totals()
return {reserved, inflight}
"""
)

# ARGV: lease ms, then id, tokens, seqs for each lease this replica holds. Returns {reserved, in flight, re-added}.
_RENEW = (
    _HEAD
    + """
local expiry = now + tonumber(ARGV[1])
local added = 0
for i = 2, #ARGV, 3 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  else
    hold(ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), expiry)
    added = added + 1
  end
end
local reserved, inflight = totals()
return {reserved, inflight, added}
"""
)


class LedgerUnavailable(AdmissionError):
    """The shared ledger's Redis did not answer: nothing is admitted without it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=503, retry_after=2, code="ledger_unavailable")


class RedisLedger:
    """The Redis connection every :class:`SharedPool` of one gateway uses, and whether it answers."""

    name = "redis"

    def __init__(self, cfg: LedgerConfig) -> None:
        self.cfg = cfg
        self.client = connect(cfg.store, cfg.timeout_s)
        self.scripts = {n: self.client.register_script(s) for n, s in
                        (("reserve", _RESERVE), ("release", _RELEASE), ("renew", _RENEW))}  # fmt: skip
        # None until the first call answered; then whether the last one did, and why not.
        self.up: bool | None = None
        self.error: str | None = None
        self.pools: list[SharedPool] = []

    def pool(self, url: str, **kw: Any) -> SharedPool:
        """A pool for the upstream ``url`` (the same keyword arguments as :class:`Pool`), its keeper running."""
        pool = SharedPool(self, url, **kw)
        self.pools.append(pool)
        return pool

    def where(self) -> str:
        return where(self.client)

    def state(self) -> dict[str, Any]:
        return {"store": self.where(), "up": self.up is True, "error": self.error}

    async def call(self, script: str, url: str, args: list[Any]) -> Any:
        """Run one script on ``url``'s keys; any failure is :class:`LedgerUnavailable` (and the ledger is down)."""
        base = f"{self.cfg.key_prefix}{{{url}}}"
        try:
            out = await self.scripts[script](keys=[base + ":leases", base + ":held", base + ":totals"], args=args)
        except (RedisError, OSError) as err:
            message = f"{type(err).__name__}: {err}"
            if self.up is not False:
                log.warning("the shared KV ledger (%s) does not answer: %s", self.where(), message)
            self.up, self.error = False, message
            raise LedgerUnavailable(
                f"the shared KV ledger ({self.where()}) did not answer ({message}): nothing is admitted without it; "
                "retry later"
            ) from None
        if self.up is False:
            log.info("the shared KV ledger (%s) answers again", self.where())
        self.up, self.error = True, None
        return out

    async def close(self) -> None:
        """Stop the keepers, give back what is still held (best effort: the leases expire anyway), disconnect."""
        for pool in self.pools:
            await pool.stop()
        await self.client.aclose()


class SharedPool(Pool):
    """A :class:`Pool` whose reservations and sequences in flight are counted in Redis, for every replica.

    ``reserved`` and ``in_flight`` are the shared totals as of this replica's last call. One keeper task
    per pool sends the releases, renews the leases and grants the waiting requests, so those calls never
    overlap: a renewal cannot add back a lease its release already dropped.
    """

    def __init__(self, ledger: RedisLedger, url: str, *, clock: Callable[[], float] = time.monotonic, **kw: Any) \
            -> None:  # fmt: skip
        super().__init__(url, clock=clock, **kw)
        self.ledger = ledger
        self._leases: dict[Reservation, str] = {}
        self._releasing: list[str] = []
        self._wake = asyncio.Event()
        # Stopped by a flag, not by cancelling: on 3.11 a cancel that meets a wake-up or a time-out in the same
        # instant can be swallowed, and the keeper would run on after its gateway stopped.
        self._stopping = False
        self._keeper = asyncio.get_running_loop().create_task(self._keep(), name=f"docsan-ledger-{url}")

    # --- the shared account ----------------------------------------------------------------------

    def _upstream_allows(self, tokens: int, seqs: int) -> bool:
        """The parts of :meth:`Pool.fits` this replica knows alone: health, and the upstream's own view."""
        if self.healthy is not True or seqs > self.cap or self._upstream_busy():
            return False
        if not self.use_metrics:
            return True
        used = self.upstream_used()
        return used is not None and tokens <= self.capacity - used

    def _totals(self, reserved: Any, in_flight: Any) -> None:
        if (int(reserved), int(in_flight)) != (self.reserved, self.in_flight):
            self.reserved, self.in_flight = int(reserved), int(in_flight)
            self.last_change = self.clock()

    async def _grant(self, tokens: int, seqs: int, tier: str) -> Reservation | None:
        if not self._upstream_allows(tokens, seqs):
            return None
        used = (self.upstream_used() or 0) if self.use_metrics else 0
        lease = uuid.uuid4().hex
        ms = int(self.ledger.cfg.lease_s * 1000)
        granted, reserved, in_flight = await self.ledger.call(
            "reserve", self.url, [lease, tokens, seqs, self.capacity, used, self.cap, ms]
        )
        self._totals(reserved, in_flight)
        if not granted:
            return None
        res = Reservation(self, tokens, seqs, tier)
        self._leases[res] = lease
        return res

    def _release(self, res: Reservation) -> None:
        lease = self._leases.pop(res, None)
        if lease is not None:
            self._releasing.append(lease)
            self._wake.set()

    def _queued(self) -> None:
        self._wake.set()

    def dispatch(self) -> None:
        self._wake.set()

    # --- the keeper --------------------------------------------------------------------------------

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        renew_at = loop.time()
        delay = 0.0
        while not self._stopping:
            # asyncio.timeout, as the rest of serve: no task per wait, and on 3.11 wait_for can drop a cancellation
            # that lands with the wake-up (cpython gh-86296); the keeper stops by its flag either way.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                await self._send_releases()
                if loop.time() >= renew_at:
                    await self._renew()
                    renew_at = loop.time() + RENEW_S
                waiting = await self._grant_waiters()
            except LedgerUnavailable as err:
                self.fail_waiters(err)
                delay = BACKOFF_S
                continue
            except Exception:  # never let the keeper die: the leases would lapse with their requests in flight
                log.exception("the shared KV ledger's keeper for %s failed", self.url)
                delay = BACKOFF_S
                continue
            delay = max(0.0, min(renew_at - loop.time(), RETRY_S if waiting else RENEW_S))

    async def _send_releases(self) -> None:
        if self._releasing:
            batch = list(self._releasing)
            self._totals(*await self.ledger.call("release", self.url, batch))
            del self._releasing[: len(batch)]

    async def _renew(self) -> None:
        args: list[Any] = [int(self.ledger.cfg.lease_s * 1000)]
        for res, lease in self._leases.items():
            args += [lease, res.tokens, res.seqs]
        reserved, in_flight, added = await self.ledger.call("renew", self.url, args)
        self._totals(reserved, in_flight)
        if added:
            log.warning(
                "%s: %d lease(s) had lapsed in the shared KV ledger while their requests ran (Redis restarted "
                "or unreachable for over %g s): held again",
                self.url,
                added,
                self.ledger.cfg.lease_s,
            )

    async def _grant_waiters(self) -> bool:
        """Grant waiting requests in order while the head fits; True while one is still waiting."""
        while self._waiters:
            head = self._waiters[0]
            if head.future.done():
                heapq.heappop(self._waiters)
                continue
            res = await self._grant(head.tokens, head.seqs, head.tier)
            if res is None:
                return True
            if head.future.done():  # it stopped waiting while Redis answered
                res.release()
            else:
                head.future.set_result(res)
        return False

    async def stop(self) -> None:
        """The gateway is stopping: no more keeping; what is still held or being released is given back now."""
        self._stopping = True
        self._wake.set()
        await self._keeper
        self._releasing += self._leases.values()
        self._leases.clear()
        with contextlib.suppress(LedgerUnavailable):
            await self._send_releases()
