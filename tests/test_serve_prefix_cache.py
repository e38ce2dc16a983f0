"""vLLM's prefix cache and the gateway, against the real vLLM server (the gateway tests' one, blocks of 128).

A repeated prompt is served from the cache in whole KV blocks: vLLM computes again only the tail past the last
full block (all of the last block when the prompt ends on a block's edge: the last token's logits are needed).
That tail, not the prompt's length, is what a repeated request costs, and what bench/bench_serve.py's
like-for-like comparison rests on: the 8k document's cleaned prompt, shorter than the raw one but with a longer
tail, took vLLM longer (docs/benchmarks.md, issue 10). The gateway must keep the cache hitting: the same request
sent twice reaches vLLM as the same bytes (no request id, timestamp or reordering in what it forwards).
"""

from __future__ import annotations

from typing import Any

import httpx

from bench.bench_serve import prefix_cache_counters
from tests.serve_support import TEST_ENGINE, gateway_config, running_gateway

BLOCK = TEST_ENGINE.block_size
CHAT = "/v1/chat/completions"


def _probe(name: str) -> str:
    """About 700 tokens, distinct from every other test's prompt from its first words (nothing of it cached)."""
    return f"Prefix-cache probe {name}. " + " ".join(f"item {i} of the list is {i * 7 % 31}." for i in range(60))


def _uncached(client: httpx.Client, vllm: str, url: str, body: dict[str, Any]) -> tuple[httpx.Response, float]:
    """The response, and the prompt tokens vLLM computed for it (not served from its prefix cache)."""
    before = prefix_cache_counters(client, vllm)
    r = client.post(url + CHAT, json=body)
    r.raise_for_status()
    after = prefix_cache_counters(client, vllm)
    return r, (after[0] - before[0]) - (after[1] - before[1])


def _tail(prompt_tokens: int) -> int:
    return prompt_tokens - BLOCK * ((prompt_tokens - 1) // BLOCK)


def test_a_repeated_prompt_computes_only_its_tail_past_the_last_full_block(vllm_url: str) -> None:
    with httpx.Client(timeout=300) as client:
        model = client.get(vllm_url + "/v1/models").json()["data"][0]["id"]
        body = {"model": model, "messages": [{"role": "user", "content": _probe("A")}], "max_tokens": 1}
        r, first = _uncached(client, vllm_url, vllm_url, body)
        prompt = r.json()["usage"]["prompt_tokens"]
        assert prompt > 2 * BLOCK  # whole blocks to hit, and a tail
        assert first == prompt
        r, second = _uncached(client, vllm_url, vllm_url, body)
    assert r.json()["usage"]["prompt_tokens"] == prompt
    assert second == _tail(prompt)


def test_the_same_request_twice_through_the_gateway_reaches_vllm_as_the_same_bytes(tmp_path, recording_proxy) -> None:
    url, rec = recording_proxy
    rec.chats.clear()
    noisy = _probe("B").replace(" of the list", "\u200b of the\x0c list")  # text the gateway cleans
    body = {"messages": [{"role": "user", "content": noisy}], "max_tokens": 1, "temperature": 0}
    with running_gateway(gateway_config(tmp_path, url)) as gw, httpx.Client(timeout=300) as client:
        first, _ = _uncached(client, rec.upstream, gw, body)
        second, uncached = _uncached(client, rec.upstream, gw, body)
    assert first.json()["docsan"]["tokens_removed_by"]["cleaning"] > 0
    assert len(rec.chats) == 2 and rec.chats[0] == rec.chats[1]
    prompt = second.json()["usage"]["prompt_tokens"]
    assert prompt > 2 * BLOCK
    assert uncached == _tail(prompt)
