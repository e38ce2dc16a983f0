"""The request guard: a bad max_tokens or an over-long request is refused before any engine sees it.

The seed's incident: old SDKs sent no max_tokens, some phones sent 0, and requests of
prompt + answer beyond what a deployment serves reached vLLM, which accepts a prompt that
fits and then silently cuts the answer at max_model_len.
"""

from __future__ import annotations

from dataclasses import dataclass

from docsan.runner.errors import GuardError

# OpenAI's error code for a prompt + answer over the model's context.
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"


@dataclass(frozen=True, slots=True)
class MaxTokens:
    value: int
    # Set when the value is not what the request sent: missing, or coerced from a bad value.
    note: str | None = None


def resolve_max_tokens(requested: object, default: int, *, coerce: bool = False) -> MaxTokens:
    """``None`` → ``default``; a positive int is kept; 0, negatives and non-integers are refused (or coerced)."""
    if requested is None:
        return MaxTokens(default, f"max_tokens missing: using the tier default {default}")
    valid = isinstance(requested, int) and not isinstance(requested, bool) and requested > 0
    if valid:
        assert isinstance(requested, int)
        return MaxTokens(requested)
    problem = "must be an integer" if not isinstance(requested, int) or isinstance(requested, bool) else "must be ≥ 1"
    if coerce:
        return MaxTokens(default, f"max_tokens={requested!r} {problem}: replaced by the tier default {default}")
    raise GuardError(
        f"max_tokens={requested!r} refused: max_tokens {problem} (or omit it for the tier default)",
        param="max_tokens",
        code="invalid_value",
    )


def check_hard_limit(prompt_tokens: int, max_tokens: int, hard_limit: int) -> None:
    total = prompt_tokens + max_tokens
    if total > hard_limit:
        raise GuardError(
            f"prompt {prompt_tokens} + max_tokens {max_tokens} = {total} tokens exceeds limit {hard_limit}: "
            "shorten the document (--budget) or lower --max-tokens",
            param="messages",
            code=CONTEXT_LENGTH_EXCEEDED,
        )


def check_fits(prompt_tokens: int, max_tokens: int, limit: int, where: str) -> None:
    """Refuse a request whose prompt + answer does not fit ``limit`` tokens (a model length)."""
    total = prompt_tokens + max_tokens
    if total > limit:
        hint = (
            f"lower --max-tokens to {limit - prompt_tokens}"
            if prompt_tokens < limit
            else f"shorten the document to under {limit} tokens (--budget)"
        )
        raise GuardError(
            f"prompt {prompt_tokens} + max_tokens {max_tokens} = {total} tokens "
            f"exceeds limit {limit} of {where}: {hint}",
            param="messages",
            code=CONTEXT_LENGTH_EXCEEDED,
        )
