"""The remote backend: each tier is an OpenAI-compatible server (``vllm serve``), reached over HTTP.

Streaming uses the chat-completions server-sent events; the final usage chunk
(``stream_options.include_usage``) gives the server's own token counts.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from docsan.runner.backends.base import Generation, GenerationRequest, OnText
from docsan.runner.errors import BackendError
from docsan.runner.tiers import Tier


class RemoteBackend:
    name = "remote"

    def __init__(
        self, base_url: str | None = None, *, connect_timeout_s: float = 10.0, read_timeout_s: float = 120.0
    ) -> None:
        # A base URL given here (--base-url) serves every tier; otherwise each tier's own base_url.
        self.base_url = base_url
        self.timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._client = httpx.Client(timeout=self.timeout)
        self._models: dict[str, str] = {}

    def url(self, tier: Tier) -> str:
        base = self.base_url or tier.base_url
        if not base:
            raise BackendError(f"tier {tier.name} has no base_url: set runner.tiers.{tier.name}.base_url or --base-url")
        base = base.rstrip("/")
        return base if base.endswith("/v1") else base + "/v1"

    def generate(self, tier: Tier, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        url = self.url(tier)
        t0 = time.perf_counter()
        try:
            body: dict[str, Any] = {
                "model": tier.engine.model or self._served_model(url),
                "messages": request.messages,
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
            }
            if on_text is None:
                resp = self._client.post(f"{url}/chat/completions", json=body)
                _raise_for_status(resp, url)
                data = resp.json()
                choice = data["choices"][0]
                usage = data.get("usage") or {}
                return Generation(
                    text=choice["message"]["content"] or "",
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                    finish_reason=choice.get("finish_reason"),
                    seconds=time.perf_counter() - t0,
                    first_token_seconds=None,
                )
            return self._stream(url, body, on_text, t0)
        except httpx.ConnectError as err:
            raise BackendError(f"cannot connect to {url} ({err}): is tier {tier.name}'s vLLM server running?") from None
        except httpx.TimeoutException:
            raise BackendError(
                f"{url} did not answer within {self.timeout.read:g} s (read timeout; raise runner.read_timeout_s)"
            ) from None
        except (KeyError, IndexError, ValueError) as err:
            raise BackendError(f"{url} sent an answer that is not OpenAI chat-completions format: {err}") from None

    def _stream(self, url: str, body: dict[str, Any], on_text: OnText, t0: float) -> Generation:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        parts: list[str] = []
        first: float | None = None
        finish: str | None = None
        usage: dict[str, Any] = {}
        with self._client.stream("POST", f"{url}/chat/completions", json=body) as resp:
            if resp.status_code >= 400:
                resp.read()
            _raise_for_status(resp, url)
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue  # SSE comments, keep-alives, blank separators
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        first = first if first is not None else time.perf_counter() - t0
                        parts.append(piece)
                        on_text(piece)
                    finish = choice.get("finish_reason") or finish
        return Generation(
            text="".join(parts),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=finish,
            seconds=time.perf_counter() - t0,
            first_token_seconds=first,
        )

    def _served_model(self, url: str) -> str:
        """The model id the server serves (GET /v1/models), when the tier profile names none."""
        if url not in self._models:
            resp = self._client.get(f"{url}/models")
            _raise_for_status(resp, url)
            models = resp.json().get("data") or []
            if not models:
                raise BackendError(f"{url} serves no model")
            self._models[url] = str(models[0]["id"])
        return self._models[url]

    def close(self) -> None:
        self._client.close()


def _raise_for_status(resp: httpx.Response, url: str) -> None:
    if resp.status_code < 400:
        return
    try:
        data = resp.json()
    except ValueError:
        data = None
    message = None
    if isinstance(data, dict):
        # vLLM 0.32 (like OpenAI): {"error": {"message": ...}}; older vLLM: {"object": "error", "message": ...}
        err = data.get("error")
        message = err.get("message") if isinstance(err, dict) else data.get("message")
    message = message or resp.text[:200] or resp.reason_phrase
    kind = "rejected the request" if resp.status_code < 500 else "failed"
    raise BackendError(f"{url} {kind}: HTTP {resp.status_code}: {message}")
