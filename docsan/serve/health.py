"""HealthScore per upstream: the incident's formula made precise, its alert levels, the adaptive concurrency cap.

The seed's dashboard formula is ``(FreeMem - ReservedMem) / TotalMem * 100 - FragmentationPenalty -
LeakagePenalty``. In KV tokens, with C the pool's capacity, U the tokens the upstream reports in use
(``kv_cache_usage_perc`` × its cache size) and R the tokens the ledger has reserved:

- FreeMem − ReservedMem = C − max(U, R): free as the upstream sees it, less what is reserved but not
  yet visible upstream (R − U, when positive). It is exactly the room admission works with.
- LeakagePenalty = 100 × (U − R) / C when the upstream reports more in use than anything in flight can
  explain, measured only once the ledger has been still for ``settle_s`` (vLLM's gauges lag a release
  by up to a scrape): the seed's "300 MB left behind after each request".
- FragmentationPenalty = :data:`PREEMPTION_PENALTY` points per preemption in the last minute, capped at
  :data:`MAX_FRAGMENTATION_PENALTY`: vLLM preempts (and recomputes) a running sequence when it cannot get
  a free block, which is what fragmentation and over-admission look like from outside.

The score is clamped to 0..100; a stale reading scores 0. Falling below 60 / 40 / 20 logs a warning /
severe / critical line once per crossing. Below 40 the pool's concurrency cap shrinks by 20 % (not below
1) at most once per ``adapt_interval_s``; at 60 or more it grows back by one sequence per interval up to
the tier's ``max_num_seqs``: the seed's adaptive ``max_num_seqs``, done where it can be done at runtime
(vLLM cannot change its own without a restart).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

from docsan.serve.ledger import Pool

log = logging.getLogger("docsan.serve")

PREEMPTION_PENALTY = 5.0
MAX_FRAGMENTATION_PENALTY = 40.0
# (threshold, level name, logging level), worst last.
LEVELS = ((60.0, "warning", logging.WARNING), (40.0, "severe", logging.ERROR), (20.0, "critical", logging.CRITICAL))
SHRINK_BELOW = 40.0
GROW_AT = 60.0
SHRINK_FACTOR = 0.8


@dataclass(slots=True)
class Score:
    value: float
    base: float
    fragmentation: float
    leakage: float


@dataclass(slots=True)
class HealthTracker:
    """Scores one pool after each poll and adapts its cap; keeps what it needs between polls."""

    name: str
    settle_s: float
    adapt_interval_s: float = 10.0
    level: int = 0  # how many thresholds the score is below
    last_adapt: float = -math.inf
    leakage: float = 0.0
    _preemptions: deque[tuple[float, float]] = field(default_factory=deque)

    def score(self, pool: Pool, now: float) -> Score:
        reading = pool.fresh_reading()
        if reading is None or not pool.capacity:
            return Score(0.0, 0.0, 0.0, self.leakage)
        cap = pool.capacity
        used = pool.upstream_used() or 0
        base = 100.0 * (cap - max(used, pool.reserved)) / cap
        if reading.at - pool.last_change >= self.settle_s:
            self.leakage = 100.0 * max(0, used - pool.reserved) / cap
        self._preemptions.append((reading.at, reading.preemptions_total))
        while self._preemptions and reading.at - self._preemptions[0][0] > 60.0:
            self._preemptions.popleft()
        recent = max(0.0, reading.preemptions_total - self._preemptions[0][1])
        frag = min(MAX_FRAGMENTATION_PENALTY, PREEMPTION_PENALTY * recent)
        value = max(0.0, min(100.0, base - frag - self.leakage))
        return Score(value, base, frag, self.leakage)

    def observe(self, pool: Pool, now: float) -> Score:
        """Score the pool, log threshold crossings, adapt its concurrency cap.

        An upstream that is down or not started yet scores 0 but changes nothing: its cap is not what
        is wrong, and its down/up transitions are logged by the poller."""
        s = self.score(pool, now)
        if pool.healthy is not True:
            return s
        level = sum(s.value < t for t, _, _ in LEVELS)
        if level > self.level:
            _, name, lvl = LEVELS[level - 1]
            log.log(
                lvl,
                "%s: HealthScore %.0f below %.0f (%s): free-reserved %.0f, fragmentation -%.0f, leakage -%.0f",
                self.name, s.value, LEVELS[level - 1][0], name, s.base, s.fragmentation, s.leakage,
            )  # fmt: skip
        elif level < self.level:
            log.info("%s: HealthScore %.0f, recovered above %.0f", self.name, s.value, LEVELS[level][0])
        self.level = level
        if now - self.last_adapt >= self.adapt_interval_s:
            if s.value < SHRINK_BELOW and pool.cap > 1:
                pool.cap = max(1, math.floor(pool.cap * SHRINK_FACTOR))
                self.last_adapt = now
                log.warning(
                    "%s: HealthScore %.0f < %.0f: concurrency cap -> %d", self.name, s.value, SHRINK_BELOW, pool.cap
                )
            elif s.value >= GROW_AT and pool.cap < pool.max_num_seqs:
                pool.cap += 1
                self.last_adapt = now
                log.info("%s: HealthScore %.0f: concurrency cap -> %d", self.name, s.value, pool.cap)
        return s
