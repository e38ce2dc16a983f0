"""The admission ledger, the health score and the metrics parser, without a server (fast)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from docsan.serve.health import HealthTracker
from docsan.serve.ledger import AdmissionError, Klass, Pool, Reading
from docsan.serve.upstream import parse_metrics

ROOT = Path(__file__).resolve().parent.parent


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _pool(clock: Clock, capacity: int = 1024, seqs: int = 4, usage: float = 0.0) -> Pool:
    pool = Pool("http://up", capacity_tokens=capacity, block_size=128, max_num_seqs=seqs, queue_max=4,
                stale_after_s=5, clock=clock)  # fmt: skip
    pool.update(healthy=True, reading=Reading(clock(), usage, 0, 0, 0, None, None))
    return pool


def test_reservations_round_to_blocks_and_release_once() -> None:
    async def run() -> None:
        pool = _pool(Clock())
        assert pool.tokens_for(100, 100) == 256 and pool.tokens_for(100, 100, n=2) == 512
        res = await pool.acquire(512, 1, "t4", Klass.REALTIME, 0)
        assert pool.reserved == 512 and pool.free_tokens() == 512
        res.release()
        res.release()
        assert pool.reserved == 0 and pool.in_flight == 0

    asyncio.run(run())


def test_a_request_that_does_not_fit_waits_then_gets_memory_limit() -> None:
    async def run() -> None:
        pool = _pool(Clock())
        held = await pool.acquire(768, 1, "t4", Klass.REALTIME, 0)
        with pytest.raises(AdmissionError) as err:
            await pool.acquire(512, 1, "t4", Klass.REALTIME, 0.05)
        assert err.value.status == 503 and "memory limit" in str(err.value) and "256 KV tokens free" in str(err.value)
        waiter = asyncio.create_task(pool.acquire(512, 1, "t4", Klass.REALTIME, 5))
        await asyncio.sleep(0.01)
        assert pool.queue_depth("t4") == 1
        held.release()  # room again: the waiter is granted
        granted = await waiter
        assert pool.reserved == 512 and granted.tokens == 512

    asyncio.run(run())


def test_a_waiter_cancelled_as_it_is_granted_ends_cancelled_and_lets_the_next_one_in() -> None:
    """The client goes away in the loop iteration its waiter is granted: the task must still end cancelled (on
    3.11 ``asyncio.wait_for`` returned the grant and swallowed the cancellation, cpython gh-86296), the grant is
    given back and the next waiter gets the room."""

    async def run() -> None:
        pool = _pool(Clock())
        held = await pool.acquire(1024, 1, "t4", Klass.REALTIME, 0)
        first = asyncio.create_task(pool.acquire(1024, 1, "t4", Klass.REALTIME, 5))
        await asyncio.sleep(0.01)
        second = asyncio.create_task(pool.acquire(512, 1, "t4", Klass.REALTIME, 5))
        await asyncio.sleep(0.01)
        assert pool.queue_depth() == 2
        held.release()  # grants `first` its 1024 tokens now; `second` does not fit behind it
        first.cancel()  # ...and its client is gone before `first` runs again
        with pytest.raises(asyncio.CancelledError):
            await first
        granted = await second
        assert granted.tokens == 512 and pool.reserved == 512 and pool.in_flight == 1
        granted.release()
        assert pool.reserved == 0 and pool.queue_depth() == 0

    asyncio.run(run())


def test_a_grant_that_lands_as_the_wait_runs_out_is_returned_not_leaked() -> None:
    """The timeout fires and, in the same loop iteration, the room frees up and the waiter is granted: the request
    gets the reservation (nothing is held for a request that already got its 503)."""

    async def run() -> None:
        pool = _pool(Clock())
        held = await pool.acquire(1024, 1, "t4", Klass.REALTIME, 0)
        waiter = asyncio.create_task(pool.acquire(512, 1, "t4", Klass.REALTIME, 0.05))
        await asyncio.sleep(0)
        assert pool.queue_depth() == 1
        asyncio.get_running_loop().call_later(0.06, held.release)  # due just after the wait's deadline
        time.sleep(0.2)  # the loop is busy past both: the deadline, then the release, run in one iteration
        granted = await waiter
        assert granted.tokens == 512 and pool.reserved == 512
        granted.release()
        assert pool.reserved == 0

    asyncio.run(run())


def test_priority_goes_first_and_the_head_is_not_overtaken() -> None:
    async def run() -> None:
        pool = _pool(Clock())
        held = await pool.acquire(1024, 1, "t4", Klass.REALTIME, 0)
        order: list[str] = []

        async def want(name: str, tokens: int, klass: Klass) -> None:
            res = await pool.acquire(tokens, 1, "t4", klass, 5)
            order.append(name)
            await asyncio.sleep(0.01)
            res.release()

        tasks = [asyncio.create_task(want("big", 1024, Klass.REALTIME))]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(want("small", 128, Klass.REALTIME)))
        tasks.append(asyncio.create_task(want("vip", 256, Klass.PRIORITY)))
        await asyncio.sleep(0.01)
        assert await pool.try_acquire(128, 1, "t4") is None  # a deferred job never jumps waiting requests
        held.release()
        await asyncio.gather(*tasks)
        assert order == ["vip", "big", "small"]

    asyncio.run(run())


def test_stale_or_full_upstream_means_no_room_and_a_dead_one_fails_waiters() -> None:
    async def run() -> None:
        clock = Clock()
        pool = _pool(clock, usage=0.9)  # the upstream itself reports 90 % used (another client, a leak)
        assert pool.free_tokens() == 1024 - 922
        clock.t += 6  # reading older than stale_after_s
        assert pool.free_tokens() == 0
        waiter = asyncio.create_task(pool.acquire(128, 1, "t4", Klass.REALTIME, 5))
        await asyncio.sleep(0.01)
        pool.update(healthy=False, reading=None)
        with pytest.raises(AdmissionError) as err:
            await waiter
        assert err.value.status == 502
        with pytest.raises(AdmissionError, match="holds at most"):
            pool.healthy = True
            pool.update(healthy=True, reading=Reading(clock(), 0, 0, 0, 0, None, None))
            await pool.acquire(4096, 1, "t4", Klass.REALTIME, 1)

    asyncio.run(run())


def test_health_score_levels_and_adaptive_cap(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    pool = _pool(clock, seqs=10)
    tracker = HealthTracker("t", settle_s=2, adapt_interval_s=0)
    assert tracker.observe(pool, clock()).value == 100
    pool.reserved = 700  # 30 % left: severe
    s = tracker.observe(pool, clock())
    assert round(s.value) == 32 and pool.cap == 8
    assert "below 60" in caplog.text or "below 40" in caplog.text
    # Leakage: the ledger is empty and still, the upstream reports half the cache used.
    pool.reserved = 0
    clock.t += 3
    pool.update(healthy=True, reading=Reading(clock(), 0.5, 0, 0, 3, None, None))
    s = tracker.observe(pool, clock())
    assert s.leakage == pytest.approx(50, abs=0.2) and s.value < 40 and pool.cap == 6
    pool.update(healthy=True, reading=Reading(clock(), 0.0, 0, 0, 3, None, None))
    clock.t += 3
    pool.update(healthy=True, reading=Reading(clock(), 0.0, 0, 0, 3, None, None))
    s = tracker.observe(pool, clock())
    # The leak is gone; the 3 preemptions of the last minute cost 5 points each; the cap grows back one at a time.
    assert (s.leakage, s.fragmentation, s.value, pool.cap) == (0, 15, 85, 7)


def test_parse_vllm_metrics() -> None:
    text = (
        '# HELP vllm:kv_cache_usage_perc x\nvllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
        'vllm:num_requests_waiting{engine="0",model_name="m"} 2.0\n'
        'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
        'vllm:num_preemptions_total{engine="0",model_name="m"} 7.0\n'
        'vllm:cache_config_info{block_size="128",engine="0",kv_cache_size_tokens="11648"} 1.0\n'
        'vllm:other_thing{engine="0"} 5\n'
    )
    r = parse_metrics(text, 1.0)
    assert r is not None
    assert (r.kv_usage, r.waiting, r.running, r.preemptions_total, r.kv_tokens, r.block_size) == (
        0.25, 2.0, 3.0, 7.0, 11648, 128,
    )  # fmt: skip
    assert parse_metrics("process_cpu_seconds_total 3\n", 1.0) is None


def test_ask_dry_run_imports_neither_vllm_nor_torch(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom cli.main import app\n"
        "try:\n    app(['ask', 'fixtures/bilingual_report.pdf', 'What was the Q3 revenue?', '--dry-run', '--json'])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print('heavy:', sorted(m for m in ('torch', 'vllm') if m in sys.modules))\n"
    )
    env = {**os.environ, "DOCSAN_HOME": os.environ.get("DOCSAN_HOME", str(Path.home() / ".cache" / "docsan"))}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert '"tier": "t4"' in out.stdout and "heavy: []" in out.stdout
