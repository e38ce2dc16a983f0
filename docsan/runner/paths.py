"""Where the runner keeps its files (the converted embedded model, the deferred queue): under docsan's home."""

from __future__ import annotations

from docsan.paths import docsan_home

__all__ = ["docsan_home"]
