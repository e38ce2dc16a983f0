"""The one rule for a token budget, read by the configuration, the budget package, the runner and the CLI.

A budget counts tokens, so "no budget" is None (the key unset, the option not given), never 0: a 0 that
came from a typo or an empty variable is refused instead of silently lifting the limit.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from docsan.errors import ConfigError

MIN_BUDGET_TOKENS = 1


def valid_budget(budget: int) -> int:
    """``budget`` itself when it is one; ValueError otherwise (pydantic reports it with the key's name)."""
    if budget < MIN_BUDGET_TOKENS:
        raise ValueError(f"must be at least {MIN_BUDGET_TOKENS} token, got {budget} (leave it out for no budget)")
    return budget


def check_budget(budget: int, name: str = "budget") -> int:
    """The library's form of :func:`valid_budget`: a :class:`ConfigError` naming the argument."""
    try:
        return valid_budget(budget)
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from None


# A configuration key holding a budget (None beside it, where "no budget" is allowed).
BudgetTokens = Annotated[int, AfterValidator(valid_budget)]
