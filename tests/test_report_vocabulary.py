"""The report's change codes: declared once, documented in docs/report.md, and the only codes changes carry."""

from __future__ import annotations

import importlib
import json

import pytest
import regex

from docsan.model import ChangeKind
from docsan.report import CODES, ChangeCode
from docsan.stages import REGISTRY
from tests.golden_outputs import GOLDEN, ROOT

# | `code` | kind | meaning |
_ROW = regex.compile(r"^\| `([a-z_.]+)` \| (removed|rewritten|finding) \|", flags=regex.MULTILINE)


def _declared() -> dict[str, ChangeCode]:
    """Every code, after importing every module that declares some (the stages, the PDF extractor, corpus dedup)."""
    for target in REGISTRY.values():
        importlib.import_module(target.split(":")[0])
    importlib.import_module("docsan.extract.pdf")
    importlib.import_module("docsan.corpus.dedupe")
    importlib.import_module("docsan.chat.guard")
    return dict(CODES)


def test_docs_list_exactly_the_declared_codes_with_their_kinds() -> None:
    documented = {code: kind for code, kind in _ROW.findall((ROOT / "docs" / "report.md").read_text("utf-8"))}
    declared = {code: c.kind.value for code, c in _declared().items()}
    assert documented == declared


def test_every_code_belongs_to_a_stage_or_the_extraction() -> None:
    # "chat": the guard that runs after every stage on a chat history (docsan/chat/guard.py);
    # corpus_dedupe runs after a document's pipeline, over the corpus index (docsan/corpus/dedupe.py).
    assert {c.stage for c in _declared().values()} <= {*REGISTRY, "extract", "chat", "corpus_dedupe"}


def test_a_code_cannot_be_declared_twice_or_misspelled() -> None:
    existing = _declared()["furniture.page_number"]
    with pytest.raises(ValueError, match="declared twice"):
        ChangeCode(existing.code, ChangeKind.FINDING, "something else")
    with pytest.raises(ValueError, match=r"stage\.rule"):
        ChangeCode("Furniture page number", ChangeKind.REMOVED, "no")
    assert "Furniture page number" not in CODES


def test_every_change_in_the_golden_reports_has_a_declared_code_of_its_stage_and_kind() -> None:
    declared = _declared()
    seen: set[str] = set()
    for path in sorted(GOLDEN.rglob("*.report.json")):
        report = json.loads(path.read_text("utf-8"))
        changes = [*report["extraction"], *(c for s in report["stages"] for c in s["changes"])]
        for change in changes:
            code = declared.get(change["code"])
            assert code is not None, f"{path.name}: undeclared code {change['code']}"
            assert (change["stage"], change["kind"]) == (code.stage, code.kind.value), f"{path.name}: {change}"
            seen.add(code.code)
    # The golden set exercises most of the vocabulary; a code it never shows is still declared and documented.
    assert len(seen) >= 25
