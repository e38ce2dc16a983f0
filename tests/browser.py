"""Debian's headless Chromium, driven by Playwright's Python client (which never downloads a browser of its own).

``scripts/install-system-deps.sh`` installs ``chromium``; where it is
missing the browser tests skip, except under CI, where that is an error.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("DOCSAN_CHROMIUM", "/usr/bin/chromium"))
# As root Chromium needs --no-sandbox; the rest keep it off the network (this machine has none) and quiet.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    missing = None
    if not CHROMIUM.is_file():
        missing = f"{CHROMIUM} not found (Debian package chromium; scripts/install-system-deps.sh)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing = "the playwright package (dev extra) is not installed"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need {missing}")
        pytest.skip(missing)


@contextmanager
def chromium_page(width: int = 1300, height: int = 1600) -> Iterator[tuple[Any, list[str]]]:
    """A fresh page in a fresh profile, and the list its console errors and page errors go to."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
            viewport={"width": width, "height": height},
            offline=True,
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            yield page, errors
        finally:
            context.close()
