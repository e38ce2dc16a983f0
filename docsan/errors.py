"""Errors a user can act on. Each carries the input's name and a one-line problem."""

from __future__ import annotations


class DocsanError(Exception):
    """Base class: ``str(err)`` is the one line the CLI prints."""


class InputError(DocsanError):
    """The input cannot be read: empty, not a PDF, encrypted, truncated, unsupported."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")


class ConfigError(DocsanError):
    """The configuration (TOML file or flags) is invalid."""
