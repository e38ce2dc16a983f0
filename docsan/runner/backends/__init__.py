"""Backends: where a routed request runs. One interface (:class:`Backend`), three implementations."""

from docsan.runner.backends.base import Backend, Generation, GenerationRequest, OnText

__all__ = ["Backend", "Generation", "GenerationRequest", "OnText"]
