"""``docsan config``: print the full default configuration as TOML."""

from __future__ import annotations

import sys

from docsan.config_toml import default_toml


def config() -> None:
    """Print every option with its default, as a TOML file to edit and pass with --config."""
    sys.stdout.write(default_toml())
