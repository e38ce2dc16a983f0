"""Faults around the gateway, each with what the client sees and the recovery, each bounded in time.

- slow clients that open streams and never read them (the realistic KV leak);
- the upstream vLLM killed mid-stream and started again (a separate, short-lived server: the session's
  shared one is never killed);
- a tier's capacity cut by a hot reload while requests are in flight;
- Redis stopped while sessions are in use: tests/test_serve_sessions.py (it records its outcome here too).

Every test records what it saw in ``fault_log``; ``make faults`` writes that to docs/faults.json and the
faults section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from typing import Any

import httpx
import pytest

from bench.serve_proc import run_uvicorn
from docsan.config import load_config
from tests.serve_support import MIB, gateway_config, running_gateway, wait_ready

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.fault]

CHAT = "/v1/chat/completions"
STORY = [{"role": "user", "content": "Tell a very long story about a lighthouse keeper."}]


def _metric(url: str, name: str) -> float:
    """The sum of a metric's samples on ``url``'s /metrics (every label, or those ``name`` starts with)."""
    prefix = name if "{" in name else name + "{"
    total = 0.0
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(prefix) or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _upstream_gauge(metrics: str, name: str) -> float:
    """A docsan_tier_* gauge of the tiers' one upstream, from a /metrics text.

    Tiers that share an upstream report the same ledger: one tier's value is the upstream's (their sum, as
    ``_metric`` gives it, counts it once per tier: 3 for one stream in flight)."""
    for line in metrics.splitlines():
        if line.startswith(name + '{tier="t4"}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} gauge")


def _reserved(gw: str) -> float:
    return _upstream_gauge(httpx.get(gw + "/metrics", timeout=10).text, "docsan_tier_kv_reserved_tokens")


def _wait(predicate: Any, timeout_s: float, what: str) -> float:
    t0 = time.monotonic()
    while not predicate():
        assert time.monotonic() - t0 < timeout_s, f"{what} not within {timeout_s:g} s"
        time.sleep(0.25)
    return time.monotonic() - t0


def _silent_stream(gw: str, body: dict[str, Any]) -> socket.socket:
    """A client that sends a streaming request and then never reads (a 2 KB receive buffer)."""
    host, port = gw.removeprefix("http://").split(":")
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect((host, int(port)))
    data = json.dumps(body).encode()
    head = f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
    s.sendall(head.encode() + b"\r\n\r\n" + data)
    return s


def test_slow_clients_that_never_read_are_cut_off_and_their_kv_released(tmp_path, vllm_url, fault_log) -> None:
    """Two clients open long streams and never read. Once the socket buffers are full every write waits; after
    serve.client_send_timeout_s the gateway ends each stream, closes its upstream request (vLLM aborts the
    sequence and frees its blocks) and releases the reservation. A small kernel send buffer (4 KB, inherited by
    the accepted sockets) and no event-loop write buffer past it (bench/serve_proc.run_uvicorn) make the buffers
    fill after about 60-105 tokens a stream (measured): with the loop's default 64 KiB it took 325-420, and how
    long vLLM takes to generate them on busy cores is what made this test fail under load."""
    from docsan.serve.app import create_app

    config = gateway_config(tmp_path, vllm_url, serve={"client_send_timeout_s": 2.0}, read_timeout_s=600)
    body = {"messages": STORY, "max_tokens": 1500, "ignore_eos": True, "stream": True}
    with run_uvicorn(create_app(config), send_buffer=4096) as gw:
        wait_ready(gw)
        clients = [_silent_stream(gw, body) for _ in range(2)]
        try:
            # Both streams in flight and what they hold, from one scrape: by a later one the first could be cut.
            scrape = {"text": ""}

            def both_admitted() -> bool:
                scrape["text"] = httpx.get(gw + "/metrics", timeout=10).text
                return _upstream_gauge(scrape["text"], "docsan_tier_in_flight") >= 2

            _wait(both_admitted, 120, "both streams admitted")
            held = _upstream_gauge(scrape["text"], "docsan_tier_kv_reserved_tokens")
            t0 = time.monotonic()
            released = _wait(lambda: _reserved(gw) == 0, 300, "the reservations released")
            _wait(lambda: _metric(vllm_url, "vllm:num_requests_running") == 0, 60, "vLLM's sequences aborted")
            freed = time.monotonic() - t0
            after = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 2}, timeout=120)
            slow = _metric(gw, 'docsan_requests_total{outcome="client_slow"')
        finally:
            for c in clients:
                c.close()
    assert held >= 2 * 1536 and after.status_code == 200 and slow == 2
    fault_log["slow_clients"] = {
        "what": "2 clients open a 1,500-token stream each and never read (2 KB receive buffers)",
        "client_sees": "the stream stops, the connection is closed",
        "kv_tokens_held": held,
        "released_after_s": round(released, 1),
        "vllm_sequences_gone_after_s": round(freed, 1),
        "outcome_metric": 'docsan_requests_total{outcome="client_slow"} 2',
        "next_request": after.status_code,
    }


def test_upstream_killed_mid_stream_and_restarted(tmp_path, fault_log) -> None:
    """A vLLM server of this test's own is killed (SIGKILL, its whole process group) while it streams, then
    started again on the same port: the client gets an error event naming the tier and [DONE], new requests
    502 naming the tier and URL, /ready 503; once the server is back, /ready and requests are 200 again."""
    from docsan.config.runner import EmbeddedConfig
    from docsan.serve.embedded_upstream import EmbeddedServer

    cfg = EmbeddedConfig(max_model_len=1024, kv_cache_bytes=64 * MIB, max_num_seqs=2)
    server = EmbeddedServer(cfg).start()
    restarted: EmbeddedServer | None = None
    try:
        server.wait_ready(timeout_s=900)
        config = gateway_config(tmp_path, server.url, read_timeout_s=600)
        with running_gateway(config) as gw:
            body = {"messages": STORY, "max_tokens": 600, "ignore_eos": True, "stream": True}
            with httpx.stream("POST", gw + CHAT, json=body, timeout=120) as r:
                lines = r.iter_lines()
                first = next(ln for ln in lines if ln.startswith("data:"))
                assert server.proc is not None
                os.killpg(server.proc.pid, signal.SIGKILL)
                killed = time.monotonic()
                rest = [ln for ln in lines if ln.startswith("data:")]
            cut_s = time.monotonic() - killed
            down = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 2}, timeout=60)
            ready_down = httpx.get(gw + "/ready")
            reserved_down = _reserved(gw)
            server.proc.wait(30)
            server.proc = None
            restarted = EmbeddedServer(cfg, port=server.port).start()
            restarted.wait_ready(timeout_s=900)
            back_s = _wait(lambda: httpx.get(gw + "/ready").status_code == 200, 60, "/ready 200 again")
            back = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 2}, timeout=120)
    finally:
        server.stop()
        if restarted is not None:
            restarted.stop()
    assert json.loads(first[5:])["docsan"]["tier"]
    error = json.loads(rest[-2][5:])["error"]
    assert rest[-1] == "data: [DONE]" and error["code"] == "upstream_error" and "mid-stream" in error["message"]
    assert "tier " in error["message"] and server.url in error["message"]
    assert down.status_code == 502 and "tier t4" in down.json()["error"]["message"], down.text
    assert server.url in down.json()["error"]["message"]
    assert ready_down.status_code == 503 and ready_down.json()["tiers"]["t4"]["ready"] is False
    assert reserved_down == 0
    assert back.status_code == 200
    fault_log["upstream_killed"] = {
        "what": "the tier's vLLM server SIGKILLed while streaming, then started again on the same port",
        "client_sees": f"in the stream: {error['message'][:120]}..., then [DONE]; new requests: "
        f"{down.status_code} {down.json()['error']['code']}: {down.json()['error']['message'][:100]}",
        "stream_ended_after_s": round(cut_s, 1),
        "ready_while_down": ready_down.status_code,
        "kv_reserved_while_down": reserved_down,
        "ready_again_after_restart_s": round(back_s, 1),
        "request_after_restart": back.status_code,
    }


def test_capacity_cut_by_reload_with_requests_in_flight(tmp_path, vllm_url, fault_log) -> None:
    """t4's capacity goes from 4,096 KV tokens to 128 by a reload while two streams hold 256: they finish on
    what they reserved, into the same ledger; meanwhile a request that needs more than the new capacity is
    refused at once and one that fits waits for room; afterwards nothing stays reserved."""
    path = tmp_path / "docsan.toml"

    def write(capacity: int) -> None:
        path.write_text(
            f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\nread_timeout_s = 600\n'
            f'[runner.tiers.t4]\nbase_url = "{vllm_url}"\ncapacity_tokens = {capacity}\n'
            f'[runner.tiers.a10g]\nbase_url = "{vllm_url}"\n[runner.tiers.a100]\nbase_url = "{vllm_url}"\n'
            '[serve]\nadmin_token = "adm"\npoll_interval_s = 0.25\nqueue_wait_s = 5\n',
            encoding="utf-8",
        )

    write(4096)
    stream = {"messages": STORY, "max_tokens": 64, "ignore_eos": True, "stream": True}
    with running_gateway(load_config(path), config_path=path) as gw:
        with (
            httpx.stream("POST", gw + CHAT, json=stream, timeout=300) as one,
            httpx.stream("POST", gw + CHAT, json=stream, timeout=300) as two,
        ):
            streams = [one.iter_lines(), two.iter_lines()]
            for s in streams:
                next(s)
            before = _reserved(gw)
            write(128)
            reload = httpx.post(gw + "/admin/reload", headers={"authorization": "Bearer adm"}).json()
            too_big = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 200}, timeout=60)
            t0 = time.monotonic()
            waits = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 8}, timeout=120)
            waited = time.monotonic() - t0
            ends = [[ln for ln in s if ln.startswith("data:")][-1] for s in streams]
        after = httpx.post(gw + CHAT, json={"messages": STORY, "max_tokens": 8}, timeout=120)
        reserved_after = _reserved(gw)
        capacity = _metric(gw, 'docsan_tier_kv_capacity_tokens{tier="t4"')
    assert before == 256 and any(c["field"] == "runner.tiers.t4.capacity_tokens" for c in reload["changed"])
    assert too_big.status_code == 503 and "memory limit" in too_big.text and "holds at most" in too_big.text
    # The small request needs one block (128): room only once both streams are done, or 503 after 5 s.
    assert waits.status_code in (200, 503), waits.text
    assert ends == ["data: [DONE]", "data: [DONE]"]
    assert after.status_code == 200 and reserved_after == 0 and capacity == 128
    fault_log["capacity_cut_by_reload"] = {
        "what": "t4's capacity_tokens 4,096 → 128 by POST /admin/reload while two streams hold 256",
        "client_sees": "the two streams finish normally; a request needing 256 gets 503 at once "
        f"({too_big.json()['error']['message'][:90]}...); one needing 128 waits for room "
        f"({waits.status_code} after {waited:.1f} s)",
        "kv_reserved_before_reload": before,
        "kv_reserved_after": reserved_after,
        "capacity_after": capacity,
        "request_after": after.status_code,
    }
