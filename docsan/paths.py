"""Where docsan keeps its own files: the converted embedded model, the deferred queue, caches."""

from __future__ import annotations

import os
from pathlib import Path


def docsan_home() -> Path:
    """``$DOCSAN_HOME``, else ``$XDG_CACHE_HOME/docsan``, else ``~/.cache/docsan``.

    One variable moves everything, so tests and CI can point docsan at a scratch folder.
    """
    env = os.environ.get("DOCSAN_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "docsan"
