"""The shared admission ledger on a real redis-server: several "replicas" (ledger instances with their own
connections, in threads or processes) against one capacity and one sequence cap; leases that lapse when their
holder dies; Redis stopped means nothing is admitted (fail closed). The last test runs two `docsan serve`
processes in front of the session's real vLLM server."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from bench.serve_proc import gateway_process, tiers_toml
from docsan.config.serve import LedgerConfig
from docsan.serve.ledger import AdmissionError, Klass, open_ledger
from docsan.serve.ledger_redis import LedgerUnavailable, RedisLedger, SharedPool
from tests.serve_support import RedisServer

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = "http://10.0.0.7:8000"


def _cfg(url: str, **kw: object) -> LedgerConfig:
    # A prefix of its own per test: the session's redis-server is shared by every test.
    return LedgerConfig(store=url, key_prefix=f"test-ledger-{uuid.uuid4().hex[:8]}:", **kw)


def _pool(ledger: RedisLedger, capacity: int = 1024, seqs: int = 4) -> SharedPool:
    """A pool on an upstream that answers (no /metrics: the ledger alone decides, which is what is tested)."""
    pool = ledger.pool(UPSTREAM, capacity_tokens=capacity, block_size=128, max_num_seqs=seqs, queue_max=64,
                       stale_after_s=5, use_metrics=False)  # fmt: skip
    pool.update(healthy=True, reading=None)
    return pool


def test_memory_is_the_default_and_a_redis_url_opens_the_shared_ledger(redis_url: str) -> None:
    assert open_ledger(LedgerConfig()) is None
    with pytest.raises(ValueError, match="Redis URL"):
        LedgerConfig(store="memcached://x")

    async def run() -> None:
        ledger = open_ledger(_cfg(redis_url))
        assert isinstance(ledger, RedisLedger)
        await ledger.close()

    asyncio.run(run())


def test_two_replicas_never_hold_more_than_the_capacity_or_the_cap_together(redis_url: str) -> None:
    """Two ledgers in two threads (each its own event loop and connections), 12 workers each asking for mixed sizes:
    what the replicas hold together, counted by the test between grant and release, never exceeds 1,024 tokens or 4
    sequences, although each alone would admit that much; every request is served in the end and nothing stays."""
    cfg = _cfg(redis_url)
    lock = threading.Lock()
    held = {"tokens": 0, "seqs": 0, "peak_tokens": 0, "peak_seqs": 0}
    granted = [0, 0]
    errors: list[BaseException] = []

    async def replica(i: int) -> None:
        ledger = RedisLedger(cfg)
        pool = _pool(ledger)
        rng = random.Random(i)

        async def worker() -> None:
            for _ in range(4):
                tokens, seqs = rng.choice((128, 256, 512)), rng.choice((1, 1, 2))
                res = await pool.acquire(tokens, seqs, "t4", Klass.REALTIME, 60)
                with lock:
                    held["tokens"] += tokens
                    held["seqs"] += seqs
                    held["peak_tokens"] = max(held["peak_tokens"], held["tokens"])
                    held["peak_seqs"] = max(held["peak_seqs"], held["seqs"])
                    granted[i] += 1
                await asyncio.sleep(rng.uniform(0.005, 0.03))
                with lock:
                    held["tokens"] -= tokens
                    held["seqs"] -= seqs
                res.release()

        try:
            await asyncio.gather(*(worker() for _ in range(12)))
        finally:
            await ledger.close()

    def run(i: int) -> None:
        try:
            asyncio.run(replica(i))
        except BaseException as err:  # noqa: BLE001 (reported by the test)
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert granted == [48, 48]
    assert held["peak_tokens"] <= 1024 and held["peak_seqs"] <= 4
    assert held["peak_tokens"] >= 512  # the replicas did compete for the room

    async def after() -> None:
        ledger = RedisLedger(cfg)
        pool = _pool(ledger)
        await pool.try_acquire(128, 1, "t4")  # any call reads the shared totals
        assert pool.reserved == 128 and pool.in_flight == 1  # only this one: the 96 others were all released
        await ledger.close()

    asyncio.run(after())


def test_a_release_on_one_replica_admits_the_request_waiting_on_the_other(redis_url: str) -> None:
    cfg = _cfg(redis_url)

    async def run() -> None:
        a, b = RedisLedger(cfg), RedisLedger(cfg)
        pa, pb = _pool(a), _pool(b)
        try:
            full = await pa.acquire(1024, 1, "t4", Klass.REALTIME, 0)
            with pytest.raises(AdmissionError) as refused:
                await pb.acquire(128, 1, "t4", Klass.REALTIME, 0.2)
            assert refused.value.code == "memory_limit"
            assert "has 0 KV tokens free of 1024 (1/4 sequences in flight)" in str(refused.value)
            waiter = asyncio.create_task(pb.acquire(256, 1, "t4", Klass.REALTIME, 30))
            await asyncio.sleep(0.2)
            assert not waiter.done() and pb.queue_depth("t4") == 1
            full.release()
            res = await waiter
            assert res.tokens == 256 and pb.reserved == 256
            res.release()
        finally:
            await a.close()
            await b.close()

    asyncio.run(run())


_HOLDER = """
import asyncio, sys
from docsan.config.serve import LedgerConfig
from docsan.serve.ledger import Klass
from docsan.serve.ledger_redis import RedisLedger

async def main():
    ledger = RedisLedger(LedgerConfig(store=sys.argv[1], key_prefix=sys.argv[2], lease_s=2))
    pool = ledger.pool(sys.argv[3], capacity_tokens=1024, block_size=128, max_num_seqs=4, queue_max=4,
                       stale_after_s=5, use_metrics=False)
    pool.update(healthy=True, reading=None)
    await pool.acquire(1024, 1, "t4", Klass.REALTIME, 0)
    print("held", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_a_replica_that_dies_frees_its_room_when_its_lease_lapses(redis_url: str) -> None:
    """A replica process holds the whole capacity with 2 s leases: while it lives, its renewals keep the room
    taken well past 2 s; once it is SIGKILLed (nothing released), the room comes back within a lease."""
    cfg = _cfg(redis_url, lease_s=2)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, redis_url, cfg.key_prefix, UPSTREAM], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"

        async def run() -> None:
            ledger = RedisLedger(cfg)
            pool = _pool(ledger)
            try:
                with pytest.raises(AdmissionError, match="memory limit"):
                    await pool.acquire(128, 1, "t4", Klass.REALTIME, 4)  # twice the lease: renewed meanwhile
                holder.send_signal(signal.SIGKILL)
                holder.wait(10)
                killed = time.monotonic()
                res = await pool.acquire(1024, 1, "t4", Klass.REALTIME, 30)
                back = time.monotonic() - killed
                assert res.tokens == 1024 and pool.reserved == 1024 and back < 30
                res.release()
            finally:
                await ledger.close()

        asyncio.run(run())
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_redis_stopped_fails_closed_and_the_leases_are_held_again_when_it_returns(tmp_path: Path) -> None:
    """Redis killed: the waiting request and new ones get 503 ledger_unavailable (nothing admitted), a release is
    kept; Redis back (empty: no persistence): the lease still in flight is held again, the kept release is not, and
    requests are admitted by the restored totals."""
    redis = RedisServer(tmp_path).start()

    async def run() -> None:
        ledger = RedisLedger(_cfg(redis.url, timeout_s=0.5))
        pool = _pool(ledger)
        try:
            kept = await pool.acquire(256, 1, "t4", Klass.REALTIME, 0)
            dropped = await pool.acquire(512, 1, "t4", Klass.REALTIME, 0)
            waiter = asyncio.create_task(pool.acquire(1024, 1, "t4", Klass.REALTIME, 30))
            await asyncio.sleep(0.1)
            redis.stop()
            with pytest.raises(LedgerUnavailable) as waited:
                await waiter
            with pytest.raises(LedgerUnavailable) as refused:
                await pool.acquire(128, 1, "t4", Klass.REALTIME, 30)
            for err in (waited.value, refused.value):
                assert err.status == 503 and err.code == "ledger_unavailable" and err.retry_after
                assert "shared KV ledger (redis 127.0.0.1:" in str(err) and "nothing is admitted" in str(err)
            assert ledger.state()["up"] is False and ledger.state()["error"]
            dropped.release()  # while Redis is down
            redis.start()
            deadline = time.monotonic() + 20
            while not (ledger.state()["up"] and pool.reserved == 256) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert ledger.state()["up"] is True and pool.reserved == 256 and pool.in_flight == 1
            with pytest.raises(AdmissionError, match="memory limit"):
                await pool.acquire(1024, 1, "t4", Klass.REALTIME, 0.1)
            res = await pool.acquire(768, 1, "t4", Klass.REALTIME, 0)
            assert pool.reserved == 1024
            res.release()
            kept.release()
        finally:
            await ledger.close()
            redis.stop()

    asyncio.run(run())


@pytest.mark.engine
@pytest.mark.slow
def test_two_gateway_processes_share_one_capacity_and_refuse_all_without_redis(tmp_path, recording_proxy) -> None:
    """Two `docsan serve` processes, one Redis ledger, 150 KV tokens: while a stream admitted by one holds its
    room (about 90 tokens in whole blocks), the other refuses a second request with 503 memory_limit (each with a
    ledger of its own would admit it: checked by removing [serve.ledger]); once the stream ends the other admits.
    Redis killed: 503 ledger_unavailable, nothing sent upstream, /ready 503 saying why, docsan_ledger_up 0.
    Admission by the ledger alone (upstream_metrics = false): vLLM's own gauge would also refuse once it shows the
    first request, and the shared ledger is for the moment before it does."""
    url, rec = recording_proxy
    redis = RedisServer(tmp_path).start()
    path = tmp_path / "docsan.toml"
    path.write_text(
        f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\nread_timeout_s = 600\n'
        f"{tiers_toml(url, extra='capacity_tokens = 150')}[serve]\npoll_interval_s = 0.25\nqueue_wait_s = 0.2\n"
        "upstream_metrics = false\n"
        f'[serve.ledger]\nstore = "{redis.url}"\ntimeout_s = 0.5\n',
        encoding="utf-8",
    )
    long = {"messages": [{"role": "user", "content": "Write a story about a lighthouse."}], "max_tokens": 48,
            "ignore_eos": True}  # fmt: skip
    chat = "/v1/chat/completions"
    try:
        with gateway_process(path) as a, gateway_process(path) as b:
            with httpx.stream("POST", a.url + chat, json={**long, "stream": True}, timeout=600) as first:
                lines = first.iter_lines()
                next(lines)
                refused = httpx.post(b.url + chat, json=long, timeout=120)
                held = httpx.get(b.url + "/metrics").text
                chunks = [ln for ln in lines if ln.startswith("data:")]
            after = httpx.post(b.url + chat, json={**long, "max_tokens": 4}, timeout=120)
            sent = len(rec.chats)
            redis.stop()
            down = httpx.post(b.url + chat, json={**long, "max_tokens": 4}, timeout=120)
            ready = httpx.get(b.url + "/ready")
            metrics = httpx.get(b.url + "/metrics").text
            unsent = len(rec.chats) - sent
    finally:
        redis.stop()
    assert chunks[-1] == "data: [DONE]"
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "memory_limit", refused.text
    # What b counts as reserved and in flight is a's reservation: b holds nothing itself.
    assert "KV tokens free of 150 (1/" in refused.text
    assert 'docsan_tier_kv_reserved_tokens{tier="t4"} 0.0' not in held
    assert 'docsan_tier_in_flight{tier="t4"} 1.0' in held
    assert after.status_code == 200, after.text
    assert down.status_code == 503 and down.json()["error"]["code"] == "ledger_unavailable", down.text
    assert "nothing is admitted" in down.json()["error"]["message"] and "retry-after" in down.headers
    assert unsent == 0
    assert ready.status_code == 503 and ready.json()["ledger"]["up"] is False and ready.json()["ledger"]["error"]
    assert "docsan_ledger_up 0.0" in metrics
    assert 'docsan_requests_total{outcome="ledger_unavailable",tier="t4"} 1.0' in metrics


def test_a_reload_that_changes_the_ledger_says_restart_and_hides_the_password() -> None:
    from docsan.config import config_from_dict
    from docsan.serve.reload import LEDGER_RESTART, diff

    old = config_from_dict({})
    new = config_from_dict({"serve": {"ledger": {"store": "redis://user:s3cret@redis.internal:6379/0"}}})
    changes = diff(old, new)
    assert changes["restart_required"] == [{"field": "serve.ledger.store", "reason": LEDGER_RESTART}]
    assert changes["changed"][0]["new"] == "redis://<credentials>@redis.internal:6379/0"
    assert "s3cret" not in str(changes)
