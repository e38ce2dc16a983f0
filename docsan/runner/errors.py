"""The runner's errors: each is one line a user can act on (the CLI prints it as is)."""

from __future__ import annotations

from docsan.errors import DocsanError


class RunnerError(DocsanError):
    """The engine, the model or a backend cannot do what was asked."""


class TierError(RunnerError):
    """A tier profile is invalid for its GPU, its backend or its model; the message says what would work."""


class GuardError(RunnerError):
    """A request was refused before reaching any engine (bad max_tokens, over a limit).

    ``param`` names the request field at fault and ``code`` says what is wrong with it, so the gateway
    can answer in OpenAI's error shape (``context_length_exceeded`` for anything over a limit).
    """

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.code = code


class BackendError(RunnerError):
    """A backend failed: connection refused, timeout, an HTTP error from a server."""
