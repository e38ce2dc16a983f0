"""The package import graph points one way: no module imports a layer above its own.

Read from the source (every ``import``, also those inside functions), not
from ``sys.modules``, so a lazy import cannot hide an upward edge. The layers,
bottom first (docs/pipeline.md draws them):

0. ``errors``, ``paths``, ``lazy_exports``, ``collector``: the errors a user can act on, where docsan keeps its
   files, the packages' public names imported on first use, and the collector settings of docsan's own processes;
1. ``model``: what everything is made of (and its JSON form, whose errors are InputErrors);
2. ``text``, ``geometry``, ``render``, ``report``, ``config``: shared rules and data;
3. ``tables``: table algorithms (on the model, the text rules, the geometry);
   ``chat``: a chat message's text and shape, turns, the guard against emptied messages;
4. ``extract`` and ``budget``: inputs to documents; token counting and fitting;
5. ``stages``: every registered pipeline stage;
6. ``pipeline``, ``config_toml``: running and listing the stages;
7. ``api``, ``batch``, ``chunking``, ``report_html``, ``client``: the library's entry points for one input and
   a batch, and the gateway's sessions protocol on the client side;
8. ``corpus`` and the ``docsan`` package itself: a batch in worker processes or on Ray, cross-document dedup;
9. ``runner``, ``schema``, ``adapters``: the shared request path, guard, route, run; the JSON Schemas
   of the outputs; the LangChain and LlamaIndex adapters;
10. ``serve``: the gateway, on the runner's request path;
11. ``cli``: the front end, which nothing in the library imports.

Units of one layer do not import each other either (``extract`` and
``budget`` stay independent), and within ``stages`` a stage imports no other
stage: what two stages share lives below them (``docsan/text/wrapping.py``
holds the page-break test that reflow and furniture both ask), only the
``Stage`` protocol in ``stages/base.py`` is common ground.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS: dict[str, int] = {
    "docsan.errors": 0,
    "docsan.paths": 0,
    "docsan.lazy_exports": 0,
    "docsan.collector": 0,
    "docsan.model": 1,
    "docsan.text": 2,
    "docsan.geometry": 2,
    "docsan.render": 2,
    "docsan.report": 2,
    "docsan.config": 2,
    "docsan.tables": 3,
    "docsan.chat": 3,
    "docsan.extract": 4,
    "docsan.budget": 4,
    "docsan.stages": 5,
    "docsan.pipeline": 6,
    "docsan.config_toml": 6,
    "docsan.api": 7,
    "docsan.batch": 7,
    "docsan.chunking": 7,
    "docsan.report_html": 7,
    "docsan.client": 7,
    "docsan.corpus": 8,
    "docsan": 8,
    "docsan.runner": 9,
    "docsan.schema": 9,
    "docsan.adapters": 9,
    "docsan.serve": 10,
    "cli": 11,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _unit(module: str) -> str | None:
    """The layer unit a module belongs to: the longest prefix listed in LAYERS."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return prefix
    return None


def _imports(path: Path, module: str) -> set[str]:
    """Every docsan or cli module that ``path`` imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from docsan.x import y" may name a submodule y: count it as docsan.x.y when one exists.
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _exists(sub) else base)
    return {m for m in found if m.split(".")[0] in {"docsan", "cli"}}


def _exists(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _sources() -> list[tuple[Path, str]]:
    return [(p, _module_name(p)) for top in ("docsan", "cli") for p in sorted((ROOT / top).rglob("*.py"))]


def test_every_module_has_a_layer() -> None:
    missing = [name for _, name in _sources() if _unit(name) is None]
    assert not missing, f"modules outside every layer of tests/test_layers.py (add their package): {missing}"


def test_no_module_imports_a_higher_layer_or_a_sibling_unit() -> None:
    bad = []
    for path, name in _sources():
        unit = _unit(name)
        assert unit is not None
        for target in sorted(_imports(path, name)):
            other = _unit(target)
            if other is None or other == unit:
                continue
            # The package's __init__ is the public facade: it re-exports its own layer's entry points.
            sideways = LAYERS[other] == LAYERS[unit] and unit != "docsan"
            if LAYERS[other] > LAYERS[unit] or sideways:
                bad.append(f"{name} (layer {LAYERS[unit]}, {unit}) imports {target} (layer {LAYERS[other]}, {other})")
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def _other_stages(path: Path, name: str) -> set[str]:
    """The other stage modules (or the registry) a stage module imports; the Stage protocol is allowed."""
    targets = _imports(path, name)
    return {t for t in targets if _unit(t) == "docsan.stages" and t not in (name, "docsan.stages.base")}


def test_a_stage_imports_no_other_stage() -> None:
    bad = [
        f"{name} imports {target}"
        for path, name in _sources()
        if name.startswith("docsan.stages.")
        for target in sorted(_other_stages(path, name))
    ]
    assert not bad, "a stage importing another stage (move what they share to a lower layer):\n" + "\n".join(bad)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path) -> None:
    # The test above is only as good as _imports: it must see an import inside a function.
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from docsan.runner.ask import prepare\n    import cli.main\n", encoding="utf-8")
    assert _imports(source, "docsan.stages.mod") == {"docsan.runner.ask", "cli.main"}
    package = tmp_path / "__init__.py"
    package.write_text("from .neardup import NearDuplicates\nfrom ..budget import Tokenizer\n", encoding="utf-8")
    assert _imports(package, "docsan.stages") == {"docsan.stages.neardup", "docsan.budget"}
    stage = tmp_path / "furniture.py"
    stage.write_text("from docsan.stages.base import Stage\nfrom .reflow import FIT_RATIO\n", encoding="utf-8")
    assert _other_stages(stage, "docsan.stages.furniture") == {"docsan.stages.reflow"}
