"""Sessions in Redis, shared by several gateway replicas, with the same bounds as the memory store.

Each session is one string key (``PREFIX + id``: the encoded :class:`SessionState`) with a
time-to-live; a sorted set (``PREFIX + ":lru"``, score: last use) and a hash (``PREFIX + ":bytes"``)
index them, and ``PREFIX + ":total"`` counts their bytes. Reads and writes are Lua scripts, so each
is atomic on the server whatever the replicas do at the same time: a write stores the value,
updates the index, forgets the sessions whose keys expired, then evicts the least recently used
while there are more than ``max_sessions`` or more than ``max_bytes``.

The script touches keys it computes from the index, so the store needs one Redis (or one Redis
Cluster slot: give ``key_prefix`` a hash tag such as ``{docsan}:``). Any Redis error or a time-out
of ``timeout_s`` is :class:`StoreUnavailable` (the request gets 503).
"""

from __future__ import annotations

import time
from typing import Any

from redis.exceptions import RedisError

from docsan.config.serve import SessionsConfig
from docsan.serve.redis_client import connect, where
from docsan.serve.sessions import PutResult, SessionState, StoreUnavailable

# KEYS: value, lru, bytes, total. ARGV: id, prefix, now, ttl.
_GET = """
local value = redis.call('GET', KEYS[1])
if not value then
  local size = redis.call('HGET', KEYS[3], ARGV[1])
  if size then
    redis.call('HDEL', KEYS[3], ARGV[1])
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('DECRBY', KEYS[4], size)
  end
  return false
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[4]) * 1000))
return value
"""

# KEYS: value, lru, bytes, total. ARGV: id, prefix, now, ttl, value, max_sessions, max_bytes.
# Returns {stored (0/1), evicted, sessions, bytes}.
_PUT = """
local id, prefix, now, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local value, max_sessions, max_bytes = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local size = string.len(value)
local function forget(victim)
  local s = redis.call('HGET', KEYS[3], victim)
  if s then redis.call('DECRBY', KEYS[4], s) end
  redis.call('HDEL', KEYS[3], victim)
  redis.call('ZREM', KEYS[2], victim)
  redis.call('DEL', prefix .. victim)
end
if size > max_bytes then
  return {0, 0, redis.call('ZCARD', KEYS[2]), tonumber(redis.call('GET', KEYS[4]) or '0')}
end
forget(id)
redis.call('SET', KEYS[1], value, 'PX', math.floor(ttl * 1000))
redis.call('ZADD', KEYS[2], now, id)
redis.call('HSET', KEYS[3], id, size)
redis.call('INCRBY', KEYS[4], size)
local evicted = 0
for _, victim in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl)) do
  forget(victim)
  evicted = evicted + 1
end
local total = tonumber(redis.call('GET', KEYS[4]) or '0')
local count = redis.call('ZCARD', KEYS[2])
while count > max_sessions or total > max_bytes do
  local victim = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not victim or victim == id then break end
  forget(victim)
  evicted = evicted + 1
  total = tonumber(redis.call('GET', KEYS[4]) or '0')
  count = redis.call('ZCARD', KEYS[2])
end
return {1, evicted, count, total}
"""


class RedisStore:
    """The session store of every gateway replica that names the same Redis URL and key prefix."""

    name = "redis"

    def __init__(self, cfg: SessionsConfig) -> None:
        self.cfg = cfg
        self.prefix = cfg.key_prefix
        self.client = connect(cfg.store, cfg.timeout_s)
        self._get = self.client.register_script(_GET)
        self._put = self.client.register_script(_PUT)
        self._keys = (self.prefix + ":lru", self.prefix + ":bytes", self.prefix + ":total")

    async def get(self, session: str) -> SessionState | None:
        keys = [self.prefix + session, *self._keys]
        value = await self._call(self._get, keys, [session, self.prefix, time.time(), self.cfg.ttl_s])
        return None if value is None else SessionState.decode(value)

    async def put(self, session: str, state: SessionState) -> PutResult:
        keys = [self.prefix + session, *self._keys]
        args = [session, self.prefix, time.time(), self.cfg.ttl_s, state.encode(), self.cfg.max_sessions,
                self.cfg.max_bytes]  # fmt: skip
        stored, evicted, count, total = await self._call(self._put, keys, args)
        return PutResult(bool(stored), int(evicted), int(count), int(total))

    async def _call(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return await script(keys=keys, args=args)
        except (RedisError, OSError) as err:
            raise StoreUnavailable(f"session store {where(self.client)} did not answer: {type(err).__name__}: {err}") \
                from None  # fmt: skip

    async def close(self) -> None:
        await self.client.aclose()
