"""Gateway tests' parts: the real vLLM OpenAI server, a recording proxy in front of it, uvicorn in a thread.

The vLLM server is started once per test session (conftest.py's ``vllm_url``) with the same launcher
``docsan serve`` uses for its embedded upstream, kept small: 2048 positions, 256 MiB of KV cache.
The proxy is a real HTTP server between the gateway and vLLM that records every chat request it
forwards, so a test can say exactly what reached the upstream (or that nothing did).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.serve_proc import RecordingProxy, RedisServer, run_uvicorn  # noqa: F401 (the tests' helpers, from one place)
from docsan.config import Config, config_from_dict
from docsan.config.runner import EmbeddedConfig

MIB = 1024**2
# Small enough to start quickly and stay light beside other sessions; large enough for a 1.5k-token prompt.
TEST_ENGINE = EmbeddedConfig(max_model_len=2048, kv_cache_bytes=256 * MIB, max_num_seqs=4)


def test_tiers(url: str) -> dict[str, dict[str, Any]]:
    """Three tiers scaled to the test server's 2048 positions (the seed's 2k/8k split, shrunk)."""
    return {
        "t4": {"base_url": url, "max_prompt_tokens": 512, "default_max_tokens": 16, "engine": {"max_model_len": 1024}},
        "a10g": {
            "base_url": url, "min_prompt_tokens": 512, "max_prompt_tokens": 1536, "default_max_tokens": 32,
            "engine": {"max_model_len": 2048},
        },
        "a100": {
            "base_url": url, "min_prompt_tokens": 1536, "default_max_tokens": 32, "engine": {"max_model_len": 2048},
        },
    }  # fmt: skip


def gateway_config(tmp_path: Path, url: str, *, serve: dict[str, Any] | None = None, **runner: Any) -> Config:
    tiers = test_tiers(url)
    for name, extra in runner.pop("tiers", {}).items():
        tiers[name] = {**tiers[name], **extra}
    return config_from_dict(
        {
            "extract": {"ocr": "never"},
            "runner": {"queue_path": str(tmp_path / "queue.sqlite3"), "tiers": tiers, **runner},
            "serve": {"poll_interval_s": 0.25, "queue_wait_s": 2.0, **(serve or {})},
        }
    )


@contextmanager
def running_gateway(config: Config, *, config_path: Path | None = None, ready: bool = True) -> Iterator[str]:
    from docsan.serve.app import create_app

    with run_uvicorn(create_app(config, config_path=config_path)) as url:
        if ready:
            wait_ready(url)
        yield url


def wait_ready(url: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if httpx.get(url + "/ready").status_code == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready: {httpx.get(url + '/ready').text}")
