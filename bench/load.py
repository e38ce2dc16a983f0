"""A bounded locust run against ``docsan serve`` in front of a real vLLM CPU server, with the replay mix.

    .venv/bin/python bench/load.py                          # make load: 6 users, 1 new per second, 240 s
    .venv/bin/python bench/load.py --users 100 --spawn-rate 10 --duration 3600 --upstream http://vllm:8000

Headless locust (bench/locustfile.py), fixed users, spawn rate and duration, everything on loopback.
The gateway is its own process (as deployed) with the replay's configuration (bench/replay.py); its
resident memory is sampled every 2 s over the run. Reported: requests and outcomes (200, 202, 400 by
design, 503 "memory limit", errors: anything else), the error rate, latency percentiles, the gateway's
RSS at the start, at most and at the end (and its growth over the second half of the run), and whether
any process was killed (by the kernel's OOM killer or anything else). Scaled to this 2-core machine
shared with other sessions: the issue's 100 users for 1 h is the second command above, on a machine
with a GPU vLLM per tier.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psutil  # noqa: E402

from bench import replay_traffic, serve_report  # noqa: E402
from bench.replay import DEFAULT_ANSWER, MAX_MODEL_LEN, gateway_toml  # noqa: E402
from bench.serve_proc import gateway_process  # noqa: E402
from docsan.config.runner import EmbeddedConfig  # noqa: E402
from docsan.serve.embedded_upstream import SERVED_NAME, EmbeddedServer  # noqa: E402

TARGET_ERROR_RATE = 0.001


class RssSampler:
    """The resident set size of one process every ``interval`` seconds, in a thread."""

    def __init__(self, pid: int, interval: float = 2.0) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._t0 = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.samples.append((time.monotonic() - self._t0, self.proc.memory_info().rss))
            except psutil.Error:
                return

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def summary(self) -> dict[str, Any]:
        rss = [r for _, r in self.samples]
        if len(rss) < 4:
            return {"samples": len(rss)}
        half = self.samples[len(self.samples) // 2 :]
        mib = 1024**2
        return {
            "samples": len(rss),
            "rss_mib_start": round(rss[0] / mib, 1),
            "rss_mib_max": round(max(rss) / mib, 1),
            "rss_mib_end": round(rss[-1] / mib, 1),
            # Over the second half (after warm-up and the first requests' caches): a leak shows as growth here.
            "rss_mib_growth_second_half": round((half[-1][1] - half[0][1]) / mib, 1),
            "rss_mib_per_min_second_half": round(_slope(half) * 60 / mib, 2),
        }


def _slope(points: list[tuple[float, int]]) -> float:
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(r for _, r in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    return sum((t - mx) * (r - my) for t, r in points) / var if var else 0.0


def _stats(prefix: Path) -> dict[str, Any]:
    """Locust's own CSV statistics, by request name."""
    out: dict[str, Any] = {}
    with open(f"{prefix}_stats.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out[row["Name"]] = {
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "p50_ms": _num(row["50%"]),
                "p95_ms": _num(row["95%"]),
                "p99_ms": _num(row["99%"]),
                "max_ms": _num(row["Max Response Time"]),
            }
    return out


def _num(value: str) -> float | None:
    try:
        return round(float(value), 1)
    except ValueError:
        return None


def _failures(prefix: Path) -> list[str]:
    path = Path(f"{prefix}_failures.csv")
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as f:
        return [f"{row['Occurrences']}× {row['Error'][:160]}" for row in csv.DictReader(f)][:5]


def _outcomes(gateway: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in httpx.get(gateway + "/metrics", timeout=10).text.splitlines():
        if line.startswith("docsan_requests_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            out[outcome] = out.get(outcome, 0) + float(line.rsplit(" ", 1)[1])
    return out


def run(users: int = 6, spawn_rate: float = 1.0, duration_s: int = 240, seed: int = 1, n: int = 48,
        upstream: str | None = None) -> dict[str, Any]:  # fmt: skip
    load_before = os.getloadavg()[0]
    requests = replay_traffic.generate(seed, n, model=SERVED_NAME)
    server = None
    if upstream is None:
        extra = ["--override-generation-config", json.dumps({"max_new_tokens": DEFAULT_ANSWER})]
        server = EmbeddedServer(EmbeddedConfig(max_model_len=MAX_MODEL_LEN), extra_args=extra).start()
        server.wait_ready(timeout_s=900)
        upstream = server.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            mix = Path(tmp) / "requests.jsonl"
            with open(mix, "w", encoding="utf-8") as f:
                for r in requests:
                    f.write(json.dumps({"body": r.body, "headers": r.headers, "by_design": r.by_design}) + "\n")
            prefix = Path(tmp) / "locust"
            with gateway_process(gateway_toml(Path(tmp), upstream)) as gw, RssSampler(gw.proc.pid) as rss:
                command = [
                    sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
                    "-u", str(users), "-r", str(spawn_rate), "-t", f"{duration_s}s", "--host", gw.url,
                    "--csv", str(prefix), "--only-summary", "--stop-timeout", "120", "--loglevel", "WARNING",
                ]  # fmt: skip
                t0 = time.monotonic()
                proc = subprocess.run(
                    command, cwd=ROOT, env={**os.environ, "DOCSAN_LOAD_REQUESTS": str(mix)}, capture_output=True,
                    text=True, timeout=duration_s + 600, check=False,
                )  # fmt: skip
                seconds = time.monotonic() - t0
                if not Path(f"{prefix}_stats.csv").is_file():
                    tail = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
                    raise SystemExit(f"bench/load.py: locust wrote no statistics: {tail[0]}")
                outcomes = _outcomes(gw.url)
                gateway_alive = gw.proc.poll() is None
            stats = _stats(prefix)
            failures = _failures(prefix)
    finally:
        upstream_alive = server is None or (server.proc is not None and server.proc.poll() is None)
        if server is not None:
            server.stop()
    total = stats.get("Aggregated", {})
    errors = total.get("failures", 0)
    requests_sent = total.get("requests", 0)
    rate = errors / requests_sent if requests_sent else None
    return {
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "users": users,
        "spawn_rate": spawn_rate,
        "duration_s": duration_s,
        "seconds": round(seconds),
        "mix": f"{n} requests of the replay traffic (seed {seed}), cycled",
        "locust_exit": proc.returncode,
        "by_name": stats,
        "errors": errors,
        "error_rate": round(rate, 4) if rate is not None else None,
        "failure_examples": failures,
        "gateway_outcomes": outcomes,
        "gateway_rss": rss.summary(),
        "processes_alive_at_end": {"gateway": gateway_alive, "vllm": upstream_alive},
        "target_error_rate": TARGET_ERROR_RATE,
        "target_met": rate is not None and rate < TARGET_ERROR_RATE and gateway_alive and upstream_alive,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", type=int, default=6)
    p.add_argument("--spawn-rate", type=float, default=1.0)
    p.add_argument("--duration", type=int, default=240, help="seconds (default 240)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--requests", type=int, default=48, help="distinct requests in the mix (default 48)")
    p.add_argument("--upstream", help="an already running vLLM OpenAI server (default: start the embedded one)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "load.json")
    p.add_argument("--docs", action="store_true", help="also rewrite the load section of docs/benchmarks.md")
    args = p.parse_args(argv)
    # Checked before the vLLM server's minutes of start-up, not found missing after them.
    if importlib.util.find_spec("locust") is None:
        sys.exit("bench/load.py: locust is not installed: pip install -e '.[bench]' (make load does)")
    results = run(args.users, args.spawn_rate, args.duration, args.seed, args.requests, args.upstream)
    serve_report.publish(results, args.out, "load", args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
