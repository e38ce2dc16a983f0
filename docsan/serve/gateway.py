"""The gateway's state: one :class:`Snapshot` per configuration, and what outlives reloads.

A request takes the current snapshot when it arrives and keeps it to the end, so a reload never
changes the settings of a request in flight. The upstreams (their ledgers, pollers and health
trackers) are keyed by URL and survive reloads: reservations in flight must be released into
the same ledger they were taken from.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from docsan.config import Config, load_config
from docsan.config.serve import SessionsConfig
from docsan.errors import ConfigError
from docsan.runner.errors import RunnerError
from docsan.runner.modelinfo import DTYPE_BYTES, load_model_info
from docsan.runner.planner import plan
from docsan.runner.queue import DeferredQueue
from docsan.runner.request import RequestPath
from docsan.runner.tiers import Tier, build_tiers
from docsan.serve.embedded_upstream import EmbeddedServer
from docsan.serve.errors import ApiError
from docsan.serve.ledger import Pool, open_ledger
from docsan.serve.metrics import Metrics
from docsan.serve.reload import diff
from docsan.serve.sessions import SessionStore, open_store
from docsan.serve.upstream import Upstream

log = logging.getLogger("docsan.serve")
API_KEYS_ENV = "DOCSAN_API_KEYS"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything a request needs from one configuration; built off the event loop, swapped atomically."""

    config: Config
    path: RequestPath
    api_keys: frozenset[str]
    # Each tier's upstream root URL.
    tier_urls: dict[str, str]

    @property
    def tiers(self) -> dict[str, Tier]:
        return self.path.tiers


def build_snapshot(config: Config, embedded_url: str | None) -> Snapshot:
    """Validate ``config`` for serving and build its request path; raises ConfigError/RunnerError."""
    path = RequestPath(config, model_dir=config.serve.model)
    with_url = [t.name for t in path.tiers.values() if t.base_url]
    if with_url and len(with_url) != len(path.tiers):
        missing = sorted(set(path.tiers) - set(with_url))
        raise ConfigError(
            f"runner.tiers: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no base_url while "
            f"{', '.join(with_url)} do: give every tier its server, or none (the embedded default)"
        )
    if not with_url and embedded_url is None:
        raise ConfigError("no tier has a base_url and no embedded upstream is running")
    urls = {n: (t.base_url or embedded_url or "").rstrip("/").removesuffix("/v1") for n, t in path.tiers.items()}
    path.warm()
    keys = set(config.serve.api_keys)
    keys.update(k.strip() for k in os.environ.get(API_KEYS_ENV, "").split(",") if k.strip())
    return Snapshot(config, path, frozenset(keys), urls)


def uses_embedded(config: Config) -> bool:
    """No tier names a server: the embedded one serves them all."""
    return not any(t.base_url for t in build_tiers(config.runner.tiers).values())


class Gateway:
    """The running gateway: current snapshot, upstreams, HTTP client, job store, metrics."""

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        config_path: Path | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        embedded: EmbeddedServer | None = None,
        owns_embedded: bool = False,
    ) -> None:
        self.snapshot = snapshot
        self.config_path = config_path
        # Stage options given on the command line: a flag keeps its word over the file across reloads.
        self.options = options or {}
        self.embedded = embedded
        self.owns_embedded = owns_embedded
        self.upstreams: dict[str, Upstream] = {}
        self.client: httpx.AsyncClient | None = None
        self.queue = DeferredQueue(snapshot.config.runner.queue_path)
        self.sessions: SessionStore = open_store(snapshot.config.serve.sessions)
        # None: the ledger lives in this process (the default); else the Redis one the replicas share.
        self.ledger = open_ledger(snapshot.config.serve.ledger)
        self.metrics = Metrics(self.tier_upstreams, self.ledger.state if self.ledger is not None else None)
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._reload_lock = asyncio.Lock()
        self.drain_wakeup = asyncio.Event()

    # --- lookups ----------------------------------------------------------------------------------

    def tier_upstreams(self) -> list[tuple[str, Upstream]]:
        snap = self.snapshot
        return [(name, self.upstreams[url]) for name, url in snap.tier_urls.items() if url in self.upstreams]

    def upstream_for(self, snap: Snapshot, tier: str) -> Upstream:
        up = self.upstreams.get(snap.tier_urls[tier])
        if up is None:  # a reload retired this URL after the request took its snapshot
            raise ApiError(503, f"tier {tier}'s upstream was just reconfigured: retry", headers={"retry-after": "1"})
        return up

    def model_limits(self, snap: Snapshot) -> dict[str, int]:
        """Per tier, the max_model_len its server reported (the router caps the profile's by it)."""
        out = {}
        for name, url in snap.tier_urls.items():
            up = self.upstreams.get(url)
            if up is not None and up.max_model_len:
                out[name] = up.max_model_len
        return out

    def model_names(self, snap: Snapshot) -> list[str]:
        """The names a request's ``model`` may carry: configured, else what the upstreams serve."""
        if snap.config.serve.model_names:
            return list(snap.config.serve.model_names)
        names = [up.served_model for up in self.upstreams.values() if up.served_model]
        return list(dict.fromkeys(names))

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        run = self.snapshot.config.runner
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(run.read_timeout_s, connect=run.connect_timeout_s),
            # Idle connections are dropped before vLLM drops them (VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s): reusing one
            # in the instant the server closes it fails the request (chat.py sends it once more in that case).
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64, keepalive_expiry=2.0),
        )
        if self.embedded is not None and self.owns_embedded:
            # Not awaited: the gateway answers (/health, /ready false, 503 "not ready") while vLLM starts.
            await asyncio.to_thread(self.embedded.start)
            log.info("starting the embedded vLLM server at %s (log: %s)", self.embedded.url, self.embedded.log_path)
        self._sync_upstreams(self.snapshot)
        from docsan.serve.jobs import drain

        self._tasks.append(asyncio.create_task(drain(self), name="docsan-drainer"))

    async def stop(self) -> None:
        for task in [*self._pollers.values(), *self._tasks]:
            task.cancel()
        for task in [*self._pollers.values(), *self._tasks]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._pollers.clear()
        self._tasks.clear()
        if self.client is not None:
            await self.client.aclose()
        await self.sessions.close()
        if self.ledger is not None:
            await self.ledger.close()
        if self.embedded is not None and self.owns_embedded:
            await asyncio.to_thread(self.embedded.stop)

    def _sync_upstreams(self, snap: Snapshot) -> None:
        """Create, update or retire upstreams for ``snap``'s tier URLs (pollers follow)."""
        serve = snap.config.serve
        by_url: dict[str, list[Tier]] = {}
        for name, url in snap.tier_urls.items():
            by_url.setdefault(url, []).append(snap.tiers[name])
        for url, tiers in by_url.items():
            capacity, configured = self._capacity(snap, tiers)
            block = min(t.engine.block_size for t in tiers)
            seqs = min(t.engine.max_num_seqs for t in tiers)
            if self.embedded is not None and url == self.embedded.url:
                block, seqs = snap.config.runner.embedded.block_size, snap.config.runner.embedded.max_num_seqs
            up = self.upstreams.get(url)
            if up is None:
                pool = (Pool if self.ledger is None else self.ledger.pool)(
                    url, capacity_tokens=capacity, block_size=block, max_num_seqs=seqs, queue_max=serve.queue_max,
                    stale_after_s=serve.stale_after_s, use_metrics=serve.upstream_metrics,
                )  # fmt: skip
                up = self.upstreams[url] = Upstream(url, pool, [t.name for t in tiers], configured)
                assert self.client is not None
                self._pollers[url] = asyncio.create_task(
                    up.run(self.client, interval=serve.poll_interval_s, timeout=serve.poll_timeout_s,
                           use_metrics=serve.upstream_metrics, down_after_timeouts=serve.down_after_timeouts),
                    name=f"docsan-poll-{url}",
                )  # fmt: skip
            else:
                pool = up.pool
                up.tiers = [t.name for t in tiers]
                if configured:
                    pool.capacity = capacity
                elif (
                    up.capacity_configured
                ):  # the configured capacity was removed: the server's report, else the estimate
                    reported = pool.reading.kv_tokens if pool.reading is not None else None
                    pool.capacity = reported or capacity
                up.capacity_configured = configured
                pool.max_num_seqs, pool.cap = seqs, min(pool.cap, seqs)
                pool.queue_max, pool.stale_after_s, pool.use_metrics = (
                    serve.queue_max, serve.stale_after_s, serve.upstream_metrics,
                )  # fmt: skip
                pool.dispatch()
        for url in set(self.upstreams) - set(by_url):
            task = self._pollers.pop(url, None)
            if task is not None:
                task.cancel()
            del self.upstreams[url]  # reservations still in flight release into the retired pool object

    async def _sync_sessions(self, old: SessionsConfig, new: SessionsConfig) -> None:
        """New bounds apply from the next write; a new store (another URL) starts empty, the old one is closed."""
        if old.store == new.store and old.key_prefix == new.key_prefix:
            self.sessions.cfg = new
            return
        previous, self.sessions = self.sessions, open_store(new)
        await previous.close()

    def _capacity(self, snap: Snapshot, tiers: list[Tier]) -> tuple[int, bool]:
        """(KV tokens, configured?): the config's capacity_tokens, else an estimate the server's report replaces."""
        configured = [t.capacity_tokens for t in tiers if t.capacity_tokens]
        if configured:
            return min(configured), True
        model_dir = snap.path.model_dir
        try:
            info = load_model_info(model_dir)
        except RunnerError:
            return 0, False
        if self.embedded is not None and snap.tier_urls[tiers[0].name] == self.embedded.url:
            per_token = info.kv_bytes_per_token(DTYPE_BYTES["bfloat16"])
            return snap.config.runner.embedded.kv_cache_bytes // per_token, False
        planned = []
        for tier in tiers:
            try:
                planned.append(plan(tier, load_model_info(tier.engine.model) if tier.engine.model else info))
            except RunnerError:
                planned.append(plan(tier, info))
        return max(0, min(p.kv_capacity_tokens for p in planned)), False

    # --- reload -----------------------------------------------------------------------------------

    async def reload(self) -> dict[str, Any]:
        """Re-read the config file; a config that does not validate raises ConfigError and changes nothing."""
        async with self._reload_lock:
            if self.config_path is None:
                raise ConfigError("the gateway was started without --config: there is no file to re-read")
            embedded_url = self.embedded.url if self.embedded is not None else None

            def build() -> Snapshot:
                config = load_config(self.config_path).with_overrides(options=self.options)
                if self.embedded is not None and not uses_embedded(config):
                    raise ConfigError(
                        "the tiers now have base_urls: restart `docsan serve` to leave the embedded upstream"
                    )
                return build_snapshot(config, embedded_url)

            try:
                new = await asyncio.to_thread(build)
            except RunnerError as err:
                raise ConfigError(str(err)) from None
            old = self.snapshot
            changes = diff(old.config, new.config)
            self.snapshot = new
            self._sync_upstreams(new)
            await self._sync_sessions(old.config.serve.sessions, new.config.serve.sessions)
            self.drain_wakeup.set()
            log.info("configuration reloaded from %s: %d change(s)", self.config_path, len(changes["changed"]))
            return {"reloaded": True, "config": str(self.config_path), **changes}
