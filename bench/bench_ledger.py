"""What the shared (Redis) admission ledger costs against the in-process one: reserve + release cycles per second.

Both ledgers in one run, on the same machine, through the same calls the gateway makes
(``Pool.acquire`` then ``Reservation.release``), against a redis-server this bench starts on a free
loopback port and stops. Two shapes:

- one at a time: a cycle starts when the previous one's reservation is released (what a replica with
  a single client sees: one Redis round trip per admission, the release sent in the background);
- 32 at once, room for 16: half the requests wait for a release, as under load; with Redis the
  releases are batched by the pool's keeper and the waiters granted right after.

The run ends when every release has reached Redis (the shared totals back to 0), so nothing is left out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import serve_report  # noqa: E402
from bench.serve_proc import RedisServer  # noqa: E402
from docsan.config.serve import LedgerConfig  # noqa: E402
from docsan.serve.ledger import Klass, Pool  # noqa: E402
from docsan.serve.ledger_redis import RedisLedger  # noqa: E402

TOKENS = 256
POOL = {"block_size": 128, "queue_max": 1024, "stale_after_s": 5, "use_metrics": False}


async def _cycles(pool: Pool, n: int, workers: int) -> dict[str, Any]:
    """``n`` reserve + release cycles by ``workers`` concurrent clients; the time until all are released."""
    latencies: list[float] = []

    async def worker(count: int) -> None:
        for _ in range(count):
            t = time.perf_counter()
            res = await pool.acquire(TOKENS, 1, "t4", Klass.REALTIME, 60)
            latencies.append(time.perf_counter() - t)
            res.release()
            await asyncio.sleep(0)  # let the others (and a keeper) run, as a request's own work would

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(n // workers) for _ in range(workers)))
    while pool.reserved:  # the shared ledger: until Redis answered the last release (its totals back to 0)
        await asyncio.sleep(0.001)
    seconds = time.perf_counter() - t0
    latencies.sort()
    return {
        "cycles": n,
        "seconds": round(seconds, 3),
        "cycles_per_s": round(n / seconds),
        "acquire_us_p50": round(1e6 * statistics.median(latencies), 1),
        "acquire_us_p99": round(1e6 * latencies[int(0.99 * (len(latencies) - 1))], 1),
    }


async def _run(redis_url: str, n_memory: int, n_redis: int) -> dict[str, Any]:
    shapes = {"one_at_a_time": (1, 1 << 30), "32_at_once_room_for_16": (32, 16 * TOKENS)}
    out: dict[str, Any] = {}
    for shape, (workers, capacity) in shapes.items():
        memory = Pool("http://bench", capacity_tokens=capacity, max_num_seqs=1 << 20, **POOL)
        memory.update(healthy=True, reading=None)
        ledger = RedisLedger(LedgerConfig(store=redis_url, key_prefix=f"bench-{shape}:"))
        shared = ledger.pool("http://bench", capacity_tokens=capacity, max_num_seqs=1 << 20, **POOL)
        shared.update(healthy=True, reading=None)
        try:
            m = await _cycles(memory, n_memory, workers)
            r = await _cycles(shared, n_redis, workers)
        finally:
            await ledger.close()
        out[shape] = {"memory": m, "redis": r, "redis_over_memory": round(r["cycles_per_s"] / m["cycles_per_s"], 4)}
    return out


def run(n_memory: int = 20_000, n_redis: int = 4_000) -> dict[str, Any]:
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        redis = RedisServer(Path(tmp)).start()
        try:
            shapes = asyncio.run(_run(redis.url, n_memory, n_redis))
        finally:
            redis.stop()
    version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()[2]
    return {
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "redis_server": version.removeprefix("v="),
        "nproc": os.cpu_count(),
        "load_average_before_after": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "shapes": shapes,
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "ledger_bench.json")
    p.add_argument("--docs", action="store_true", help="also rewrite the ledger section of docs/benchmarks.md")
    args = p.parse_args(argv)
    serve_report.publish(run(), args.out, "ledger", args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
