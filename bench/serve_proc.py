"""``docsan serve`` as its own process (as deployed), for the benches and the tests that need one or several."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class GatewayProcess:
    url: str
    proc: subprocess.Popen[str]
    # Every line the gateway wrote to stderr (read by a thread, so its pipe never fills).
    lines: list[str] = field(default_factory=list)


@contextmanager
def gateway_process(config_file: Path, *, ready_timeout_s: float = 180, env: dict[str, str] | None = None) \
        -> Iterator[GatewayProcess]:  # fmt: skip
    """``python -m cli serve --config FILE --port 0`` from this checkout; yields once ``/ready`` says 200,
    stops it (SIGTERM, then SIGKILL) on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--config", str(config_file), "--port", "0"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "serving on " in line:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not found.wait(0.2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"docsan serve did not start: {' | '.join(lines[-5:])}")
        url = next(ln for ln in lines if "serving on " in ln).split("serving on ")[1].split()[0]
        while httpx.get(url + "/ready", timeout=10).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"docsan serve not ready: {httpx.get(url + '/ready', timeout=10).text}")
            time.sleep(0.2)
        yield GatewayProcess(url, proc, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def tiers_toml(url: str, names: tuple[str, ...] = ("t4", "a10g", "a100")) -> str:
    """Every tier pointed at one upstream ``url``."""
    return "".join(f'[runner.tiers.{n}]\nbase_url = "{url}"\n' for n in names)
