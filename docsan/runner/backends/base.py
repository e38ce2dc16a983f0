"""The backend interface: run one guarded, routed request on a tier and return the answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from docsan.runner.tiers import Tier

# Receives each new piece of answer text as it is generated (streaming).
OnText = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    # The chat messages (remote servers apply their own chat template to these) ...
    messages: list[dict[str, str]]
    # ... and the exact token ids they become with the served model's template (local engines run these,
    # so the count the router used is the count the engine sees).
    prompt_ids: list[int]
    max_tokens: int
    # Greedy: answers from a document should be reproducible.
    temperature: float = 0.0


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    # "stop" (the model ended), "length" (max_tokens reached), ...
    finish_reason: str | None
    seconds: float
    # Seconds to the first answer text: the latency a user feels when streaming.
    first_token_seconds: float | None


class Backend(Protocol):
    name: str

    def generate(self, tier: Tier, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        """Run ``request`` on ``tier``; call ``on_text`` with each piece of text as it arrives."""
        ...

    def close(self) -> None: ...
