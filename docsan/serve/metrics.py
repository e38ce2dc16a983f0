"""The gateway's Prometheus metrics (one registry per app, so several apps can live in one process).

Counters and histograms are updated as requests pass; the per-tier gauges are read from the live
pools when /metrics is scraped, so they are never stale between polls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from docsan.serve.sessions import PutResult
from docsan.serve.upstream import Upstream

# Gateway overhead is milliseconds; the top buckets catch an 8k-token document's cleaning.
OVERHEAD_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5)
WAIT_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60)


class TierGauges(Collector):
    """docsan_tier_* and docsan_queue_depth, read from each tier's upstream at scrape time."""

    def __init__(self, tiers: Callable[[], Iterable[tuple[str, Upstream]]]) -> None:
        self.tiers = tiers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        specs = {
            "docsan_tier_kv_reserved_tokens": "KV tokens reserved by requests in flight on the tier's upstream",
            "docsan_tier_kv_capacity_tokens": "KV tokens the tier's upstream holds (config, server report or plan)",
            "docsan_tier_kv_used_tokens": "KV tokens the upstream itself reports in use (last fresh reading)",
            "docsan_tier_health_score": "HealthScore 0-100 of the tier's upstream (docs/serve.md)",
            "docsan_queue_depth": "requests of the tier waiting for KV room",
            "docsan_tier_in_flight": "sequences in flight on the tier's upstream",
            "docsan_tier_concurrency_cap": "sequences the gateway lets run at once on the upstream (adaptive)",
            "docsan_upstream_up": "1 when the tier's upstream answered its last /health",
        }
        families = {name: GaugeMetricFamily(name, doc, labels=["tier"]) for name, doc in specs.items()}
        for tier, up in self.tiers():
            pool = up.pool
            values = {
                "docsan_tier_kv_reserved_tokens": pool.reserved,
                "docsan_tier_kv_capacity_tokens": pool.capacity,
                "docsan_tier_kv_used_tokens": pool.upstream_used() or 0,
                "docsan_tier_health_score": up.score.value if up.score else 0.0,
                "docsan_queue_depth": pool.queue_depth(tier),
                "docsan_tier_in_flight": pool.in_flight,
                "docsan_tier_concurrency_cap": pool.cap,
                "docsan_upstream_up": 1.0 if pool.healthy else 0.0,
            }
            for name, value in values.items():
                families[name].add_metric([tier], float(value))
        yield from families.values()


class LedgerGauge(Collector):
    """docsan_ledger_up, read at scrape time; only with a shared (Redis) ledger."""

    def __init__(self, state: Callable[[], dict[str, Any]]) -> None:
        self.state = state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        doc = "1 when the shared KV ledger (Redis) answered its last call; 0: no request is admitted (fail closed)"
        yield GaugeMetricFamily("docsan_ledger_up", doc, value=1.0 if self.state()["up"] else 0.0)


class Metrics:
    def __init__(
        self, tiers: Callable[[], Iterable[tuple[str, Upstream]]], ledger: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "docsan_requests", "chat requests by tier and outcome", ["tier", "outcome"], registry=self.registry
        )
        self.tokens_removed = Counter(
            "docsan_tokens_removed", "prompt tokens removed before the upstream, by step", ["step"],
            registry=self.registry,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "docsan_request_seconds",
            "the gateway's own time per request (parse, sanitize, count, route, respond), without upstream or queue",
            buckets=OVERHEAD_BUCKETS,
            registry=self.registry,
        )
        self.wait_seconds = Histogram(
            "docsan_admission_wait_seconds", "time a request waited for KV room", ["tier"],
            buckets=WAIT_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.session_requests = Counter(
            "docsan_session_requests", "session requests by outcome (appended, replaced, mismatch, unavailable, "
            "not_stored)", ["outcome"], registry=self.registry,
        )  # fmt: skip
        self.sessions_evicted = Counter(
            "docsan_sessions_evicted", "sessions evicted (least recently used, or expired) by this gateway's writes",
            registry=self.registry,
        )  # fmt: skip
        self.sessions = Gauge("docsan_sessions", "sessions in the store after the last write", registry=self.registry)
        self.session_bytes = Gauge(
            "docsan_session_bytes", "bytes of stored histories after the last write", registry=self.registry
        )
        self.registry.register(TierGauges(tiers))
        if ledger is not None:
            self.registry.register(LedgerGauge(ledger))

    def observe_store(self, result: PutResult) -> None:
        self.sessions_evicted.inc(result.evicted)
        self.sessions.set(result.sessions)
        self.session_bytes.set(result.bytes)

    def render(self) -> bytes:
        return generate_latest(self.registry)
