"""The gateway's Redis connections (the session store, the shared ledger): how they are opened and named."""

from __future__ import annotations

import redis.asyncio as aioredis


def connect(url: str, timeout_s: float) -> aioredis.Redis:
    """A client whose every call fails after ``timeout_s`` instead of being retried: the gateway's callers
    fail closed (a 503) rather than holding a request while Redis does not answer."""
    return aioredis.Redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry_on_timeout=False
    )


def where(client: aioredis.Redis) -> str:
    """``client``'s server for messages and /ready: the URL without its password."""
    kw = client.connection_pool.connection_kwargs
    return f"redis {kw.get('host', kw.get('path', '?'))}:{kw.get('port', '')}/{kw.get('db', 0)}"
