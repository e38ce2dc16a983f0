"""The length router: pick the tier for a request by its final prompt tokens, or defer it.

Seed's policy: L1 (<2k) on T4, L2 (2k–8k) on A10G, L3 (>8k) on A100 — but only priority
requests use L3 in real time; the others go to the deferred queue. A request whose
prompt fits its tier but whose prompt + max_tokens does not is re-routed to the next
tier that holds it (or refused when a tier was forced).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from docsan.runner.errors import GuardError
from docsan.runner.guard import CONTEXT_LENGTH_EXCEEDED, check_fits, check_hard_limit, resolve_max_tokens
from docsan.runner.tiers import Tier


@dataclass(frozen=True, slots=True)
class Decision:
    tier: str
    prompt_tokens: int
    max_tokens: int
    deferred: bool
    # The tokens the chosen tier serves (its max_model_len, capped by the engine's model).
    limit: int
    forced: bool = False
    priority: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def effective_limit(tier: Tier, model_limits: Mapping[str, int] | None) -> int:
    """The tier's max_model_len, capped by what its engine really serves (the embedded model's 8192 positions,
    or the max_model_len a tier's vLLM server reports)."""
    cap = (model_limits or {}).get(tier.name)
    return min(tier.engine.max_model_len, cap) if cap else tier.engine.max_model_len


def named_tier(name: str, tiers: Mapping[str, Tier]) -> Tier:
    """The tier called ``name`` (``--tier``, ``docsan plan``); a name that is none is refused naming the choices."""
    if name not in tiers:
        raise GuardError(f"unknown tier {name!r}: choose one of {', '.join(tiers)}", param="tier")
    return tiers[name]


def route(
    prompt_tokens: int,
    requested_max_tokens: object,
    tiers: dict[str, Tier],
    *,
    forced: str | None = None,
    priority: bool = False,
    coerce: bool = False,
    hard_limit: int,
    model_limits: Mapping[str, int] | None = None,
) -> Decision:
    """Decide tier, max_tokens and deferral; raise :class:`GuardError` for anything refused."""
    notes: list[str] = []
    if forced is not None:
        tier = named_tier(forced, tiers)
    else:
        serving = [t for t in tiers.values() if t.serves(prompt_tokens)]
        if not serving:
            raise GuardError(
                f"no tier serves a prompt of {prompt_tokens} tokens, which exceeds limit of every tier "
                f"(tiers: {_ranges(tiers)})",
                param="messages",
                code=CONTEXT_LENGTH_EXCEEDED,
            )
        tier = serving[0]
    mt = resolve_max_tokens(requested_max_tokens, tier.default_max_tokens, coerce=coerce)
    if mt.note:
        notes.append(mt.note)
    check_hard_limit(prompt_tokens, mt.value, hard_limit)
    largest = max(tiers.values(), key=lambda t: effective_limit(t, model_limits))
    check_fits(prompt_tokens, mt.value, effective_limit(largest, model_limits), f"every tier (largest: {largest.name})")
    if forced is not None:
        check_fits(prompt_tokens, mt.value, effective_limit(tier, model_limits), f"tier {tier.name}")
    elif prompt_tokens + mt.value > effective_limit(tier, model_limits):
        # vLLM would accept the prompt and cut the answer short; move to a tier that holds both.
        bigger = next(
            (t for t in tiers.values()
             if t.min_prompt_tokens >= tier.min_prompt_tokens
             and prompt_tokens + mt.value <= effective_limit(t, model_limits)),
            largest,
        )  # fmt: skip
        notes.append(
            f"re-routed {tier.name} → {bigger.name}: prompt {prompt_tokens} + max_tokens {mt.value} exceeds "
            f"{tier.name}'s limit {effective_limit(tier, model_limits)}"
        )
        tier = bigger
    deferred = tier.priority_only and not priority
    if deferred:
        notes.append(f"tier {tier.name} is real-time for priority requests only: deferred to the queue")
    return Decision(
        tier=tier.name,
        prompt_tokens=prompt_tokens,
        max_tokens=mt.value,
        deferred=deferred,
        limit=effective_limit(tier, model_limits),
        forced=forced is not None,
        priority=priority,
        notes=notes,
    )


def _ranges(tiers: dict[str, Tier]) -> str:
    return ", ".join(f"{t.name} [{t.min_prompt_tokens}, {t.max_prompt_tokens or '∞'})" for t in tiers.values())


def history_budget(
    tiers: dict[str, Tier],
    requested_max_tokens: object,
    *,
    priority: bool = False,
    hard_limit: int,
    model_limits: Mapping[str, int] | None = None,
) -> int | None:
    """The most prompt tokens a growing chat history may take and still be served in real time.

    A session's history is trimmed to this (docs/sessions.md): the largest tier that serves the request
    without deferring it (priority requests may use every tier), below its ``max_prompt_tokens`` and
    leaving room for the answer. None when no such tier can hold an answer at all.
    """
    usable = [t for t in tiers.values() if priority or not t.priority_only] or list(tiers.values())
    tier = max(usable, key=lambda t: (effective_limit(t, model_limits), t.max_prompt_tokens or math.inf))
    valid = isinstance(requested_max_tokens, int) and not isinstance(requested_max_tokens, bool)
    answer = requested_max_tokens if valid and requested_max_tokens > 0 else tier.default_max_tokens
    assert isinstance(answer, int)
    budget = min(effective_limit(tier, model_limits), hard_limit) - answer
    if tier.max_prompt_tokens is not None:
        budget = min(budget, tier.max_prompt_tokens - 1)
    return budget if budget > 0 else None
