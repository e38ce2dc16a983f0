"""The cleaning stages, by name.

Each entry points at a class in this package, one module per stage named for
it, whose fields are the stage's options (validated on construction) and whose
``__call__`` takes a :class:`~docsan.model.Document` and returns a
:class:`~docsan.report.StageResult`. Modules are imported only when their
stage is built, so ``import docsan`` stays light (the budget stages load a
tokenizer).
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import ValidationError

from docsan.errors import ConfigError
from docsan.stages.base import Stage

# In the order they run by default (docsan.config.DEFAULT_STAGES), then the two `clean` adds.
REGISTRY: dict[str, str] = {
    "normalize": "docsan.stages.normalize:Normalize",
    "furniture": "docsan.stages.furniture:Furniture",
    "tables": "docsan.stages.table_repair:TableRepair",
    "repeats": "docsan.stages.repeats:Repeats",
    "reflow": "docsan.stages.reflow:Reflow",
    "neardup": "docsan.stages.neardup:NearDuplicates",
    "special_tokens": "docsan.stages.special_tokens:SpecialTokens",
    "budget": "docsan.stages.budget:Budget",
}


def build_stage(name: str, options: dict[str, Any] | None = None) -> Stage:
    """Instantiate the stage called ``name`` with ``options``; ConfigError if either is wrong."""
    try:
        target = REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise ConfigError(f"unknown stage {name!r} (known: {known})") from None
    module_name, cls_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    try:
        return cls(**(options or {}))
    except ValidationError as err:
        # Name the offending option; pydantic's first line only names the class.
        first = err.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"stage {name!r}: bad option {where}: {first['msg'].removeprefix('Value error, ')}") from None
    except TypeError as err:
        raise ConfigError(f"stage {name!r}: bad options: {str(err).splitlines()[0]}") from None


__all__ = ["REGISTRY", "Stage", "build_stage"]
