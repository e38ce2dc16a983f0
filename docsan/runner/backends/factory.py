"""Build the backend a command asked for (``--backend`` / ``runner.backend``)."""

from __future__ import annotations

from collections.abc import Callable

from docsan.config.runner import RunnerConfig
from docsan.runner.backends.base import Backend
from docsan.runner.errors import RunnerError


def make_backend(
    name: str, runner: RunnerConfig, *, base_url: str | None = None, on_convert: Callable[[str], None] | None = None
) -> Backend:
    if name == "embedded":
        from docsan.runner.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(runner.embedded, on_convert=on_convert)
    if name == "inprocess":
        from docsan.runner.backends.inprocess import InProcessBackend

        return InProcessBackend()
    if name == "remote":
        from docsan.runner.backends.remote import RemoteBackend

        return RemoteBackend(base_url, connect_timeout_s=runner.connect_timeout_s, read_timeout_s=runner.read_timeout_s)
    raise RunnerError(f"unknown backend {name!r}: choose embedded, inprocess or remote")
