"""An upstream vLLM OpenAI server as the gateway sees it: its ledger, its health, what it serves.

Each upstream is polled every ``serve.poll_interval_s``: ``/health`` (alive), ``/metrics`` (the
KV gauges admission reads, see :mod:`docsan.serve.ledger`), and ``/v1/models`` until it has said
which model id it serves and its ``max_model_len`` (the router caps the tier's limit by it: a tier
profile that promises more than its server holds would otherwise send requests vLLM refuses).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from docsan.serve.health import HealthTracker, Score
from docsan.serve.ledger import Pool, Reading

log = logging.getLogger("docsan.serve")

# The vLLM 0.32 metrics docsan reads; a line-prefix filter keeps the parse to these few lines of ~50 kB.
USAGE = "vllm:kv_cache_usage_perc"
WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
PREEMPTIONS = "vllm:num_preemptions_total"
CACHE_INFO = "vllm:cache_config_info"
_WANTED = (USAGE + "{", WAITING + "{", RUNNING + "{", PREEMPTIONS + "{", CACHE_INFO + "{")


def parse_metrics(text: str, at: float) -> Reading | None:
    """The gauges from a vLLM /metrics page; None when it has none of them (not a vLLM server).

    Several engines (data parallel) each report their own cache: usage is the fullest engine's,
    counts and cache sizes are summed.
    """
    lines = [ln for ln in text.splitlines() if ln.startswith(_WANTED)]
    if not any(ln.startswith(USAGE) for ln in lines):
        return None
    usage, waiting, running, preempted, kv_tokens, block = 0.0, 0.0, 0.0, 0.0, 0, None
    for family in text_string_to_metric_families("\n".join(lines) + "\n"):
        for s in family.samples:
            if s.name == USAGE:
                usage = max(usage, s.value)
            elif s.name == WAITING:
                waiting += s.value
            elif s.name == RUNNING:
                running += s.value
            elif s.name == PREEMPTIONS:
                preempted += s.value
            elif s.name == CACHE_INFO:
                kv_tokens += int(s.labels.get("kv_cache_size_tokens", "0") or 0)
                block = int(s.labels["block_size"]) if s.labels.get("block_size", "").isdigit() else block
    return Reading(at, usage, waiting, running, preempted, kv_tokens or None, block)


@dataclass(eq=False)
class Upstream:
    """One server (several tiers may share it), with its pool and what its polls said."""

    url: str  # the server's root, without /v1
    pool: Pool
    tiers: list[str]
    # Capacity from the config (kept) or from a fallback (replaced by what the server reports).
    capacity_configured: bool
    served_model: str | None = None
    max_model_len: int | None = None
    last_ok: float | None = None
    last_error: str | None = None
    score: Score | None = None
    # Polls in a row that timed out (reset by any answer).
    timeouts: int = 0
    tracker: HealthTracker = field(init=False)

    def __post_init__(self) -> None:
        self.tracker = HealthTracker(name=f"upstream {self.url} ({', '.join(self.tiers)})", settle_s=2.0)

    @property
    def api(self) -> str:
        return self.url + "/v1"

    def ready(self, stale_after_s: float) -> bool:
        return (
            self.pool.healthy is True and self.last_ok is not None and time.monotonic() - self.last_ok <= stale_after_s
        )

    async def poll(
        self, client: httpx.AsyncClient, *, timeout: float, use_metrics: bool, down_after_timeouts: int
    ) -> None:
        """One round of /health, /metrics and (until known) /v1/models; never raises.

        A poll that times out leaves the upstream as it was until ``down_after_timeouts`` have in a row (its
        last answer ages meanwhile, and ``stale_after_s`` still judges it); any other failure marks it down.
        """
        reading = None
        try:
            (await client.get(self.url + "/health", timeout=timeout)).raise_for_status()
            if use_metrics:
                resp = await client.get(self.url + "/metrics", timeout=timeout)
                resp.raise_for_status()
                reading = parse_metrics(resp.text, time.monotonic())
            if self.served_model is None:
                await self._learn_model(client, timeout)
        except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
            if isinstance(err, httpx.TimeoutException):
                self.timeouts += 1
                if self.timeouts < down_after_timeouts:
                    return
            first = self.last_error is None
            # A time-out's message is empty: its class names it.
            self.last_error = str(err) or type(err).__name__
            if first:
                log.warning("upstream %s (%s) is down: %s", self.url, ", ".join(self.tiers), self.last_error)
            self.pool.update(healthy=False, reading=None)
            self.score = self.tracker.observe(self.pool, time.monotonic())
            return
        if self.last_error is not None:
            log.info("upstream %s answers again", self.url)
        self.last_error = None
        self.timeouts = 0
        self.last_ok = time.monotonic()
        if reading is not None and reading.kv_tokens and not self.capacity_configured:
            self.pool.capacity = reading.kv_tokens
        self.pool.update(healthy=True, reading=reading)
        self.score = self.tracker.observe(self.pool, time.monotonic())

    async def _learn_model(self, client: httpx.AsyncClient, timeout: float) -> None:
        resp = await client.get(self.api + "/models", timeout=timeout)
        resp.raise_for_status()
        models = resp.json().get("data") or []
        if models:
            self.served_model = str(models[0]["id"])
            limit = models[0].get("max_model_len")
            self.max_model_len = int(limit) if isinstance(limit, int) else None

    async def run(
        self, client: httpx.AsyncClient, *, interval: float, timeout: float, use_metrics: bool, down_after_timeouts: int
    ) -> None:
        """Poll until cancelled."""
        while True:
            await self.poll(client, timeout=timeout, use_metrics=use_metrics, down_after_timeouts=down_after_timeouts)
            await asyncio.sleep(interval)
