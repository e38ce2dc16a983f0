"""The ``[serve]`` section of the TOML configuration: the gateway (``docsan serve``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MIB = 1024**2
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _check_store(value: str) -> str:
    if value != "memory" and not value.startswith(REDIS_SCHEMES):
        raise ValueError(f'store must be "memory" or a Redis URL (redis://host:port/db), not {value!r}')
    return value


# A store setting (sessions, ledger): "memory" or a Redis URL.
StoreUrl = Annotated[str, AfterValidator(_check_store)]


class SessionsConfig(BaseModel):
    """``[serve.sessions]``: histories kept for clients that send only their new messages (docs/sessions.md)."""

    model_config = ConfigDict(extra="forbid")

    # "memory": in this gateway process; "redis://host:port/db" (or rediss://, unix://): one Redis that several
    # gateway replicas share, so a client may land on any of them.
    store: StoreUrl = "memory"
    # Sessions kept at most; past it the least recently used go first (the incident's phones never evicted).
    max_sessions: int = Field(10_000, gt=0)
    # Bytes of stored history (its JSON) at most, all sessions together; least recently used go first. A
    # session is already trimmed to its tier's budget, so 256 MiB holds thousands of full 8k-token histories.
    max_bytes: int = Field(256 * MIB, gt=0)
    # A session not used for this long is forgotten (its next delta gets 409 and the client resends).
    ttl_s: float = Field(3600.0, gt=0)
    # Redis: one store operation that takes longer fails the request with 503 (never a guessed history).
    timeout_s: float = Field(1.0, gt=0)
    # Redis: the prefix of every key the gateway writes (several deployments can share one Redis).
    key_prefix: str = "docsan:session:"


class LedgerConfig(BaseModel):
    """``[serve.ledger]``: where the KV admission ledger lives (docs/serve.md, "Admission control")."""

    model_config = ConfigDict(extra="forbid")

    # "memory": in this gateway process, so two replicas would each admit up to the whole capacity; "redis://..."
    # (or rediss://, unix://): one Redis that several gateway replicas share, so their reservations and sequences in
    # flight count against one capacity and one cap per upstream.
    store: StoreUrl = "memory"
    # Redis: each reservation is a lease this long, renewed every second while its request is in flight, so a
    # replica that dies frees its KV room after at most this; long enough that a live replica survives Redis or
    # its own event loop stalling for several seconds (more than 14 missed renewals) without losing a lease. At least
    # 2 s: twice the renewal period.
    lease_s: float = Field(15.0, ge=2.0)
    # Redis: one ledger operation that takes longer fails the request with 503 ledger_unavailable (fail closed).
    timeout_s: float = Field(1.0, gt=0)
    # Redis: the prefix of every key the ledger writes (several deployments can share one Redis).
    key_prefix: str = "docsan:ledger:"


class ServeConfig(BaseModel):
    """Everything ``docsan serve`` reads from ``[serve]``; the tiers and limits stay in ``[runner]``."""

    model_config = ConfigDict(extra="forbid")

    # Loopback by default: exposing the gateway is a deliberate `--host 0.0.0.0`.
    host: str = "127.0.0.1"
    # The gateway's port (`docsan serve --port`; 0: any free one, printed at start-up).
    port: int = Field(8080, ge=0, le=65535)
    # A chat request body larger than this is refused with 413 before it is parsed. The incident's phones
    # synced megabyte-sized histories; 8 MiB holds a 300-turn history of pasted pages with room to spare.
    max_body_bytes: int = Field(8 * MIB, gt=0)
    # Uploads to /v1/clean (PDFs are bigger than prompts).
    max_upload_bytes: int = Field(64 * MIB, gt=0)
    # More messages than this in one request is refused (400): each one costs pipeline and template work.
    max_messages: int = Field(2000, gt=0)
    # How long a request that does not fit its tier's KV ledger waits before 503 "memory limit".
    queue_wait_s: float = Field(10.0, ge=0)
    # Requests waiting per upstream beyond this are refused at once (503) instead of queued.
    queue_max: int = Field(64, ge=0)
    # Bearer tokens accepted on /v1/*; empty and no DOCSAN_API_KEYS in the environment: no authentication.
    api_keys: list[str] = Field(default_factory=list)
    # Bearer token for /admin/*, separate from the API keys; unset: the admin endpoints answer 403 (reload by
    # SIGHUP only).
    admin_token: str | None = None
    # The served model's folder (tokenizer + chat template) for exact counts; unset: the bundled SmolLM2.
    model: str | None = None
    # Model names clients may send; empty: the ids the tiers' upstreams report on /v1/models.
    model_names: list[str] = Field(default_factory=list)
    # Seconds between polls of each upstream's /health and /metrics.
    poll_interval_s: float = Field(1.0, gt=0)
    # A metrics reading (or a health answer) older than this counts as "full" (or "not ready"): vLLM's gauges lag.
    stale_after_s: float = Field(5.0, gt=0)
    # Timeout of one poll request.
    poll_timeout_s: float = Field(2.0, gt=0)
    # Polls in a row that must time out before an upstream counts as down. A refused or reset connection is
    # down at once; a slow answer is what a busy vLLM on shared cores gives, and one of them turned a healthy
    # server into 502s for every request (seen at load 20).
    down_after_timeouts: int = Field(3, ge=1)
    # False: admit by the ledger alone, for an upstream that serves no vLLM /metrics.
    upstream_metrics: bool = True
    # Seconds between the deferred-job drainer's looks at the queue.
    drain_interval_s: float = Field(1.0, gt=0)
    # The embedded upstream (no tier has a base_url): how long its vLLM server may take to answer /health.
    embedded_start_timeout_s: float = Field(600.0, gt=0)
    # A streamed answer whose client takes no bytes for this long is ended and its KV room released: a client that
    # opens a stream and never reads it would otherwise hold its reservation (and vLLM's cache) for ever.
    client_send_timeout_s: float = Field(30.0, gt=0)
    # Sessions (x-docsan-session): the bounded store of histories for the incremental protocol.
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    # The KV admission ledger: in this process, or in a Redis that gateway replicas share.
    ledger: LedgerConfig = Field(default_factory=LedgerConfig)
