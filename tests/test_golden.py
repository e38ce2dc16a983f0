"""Byte-identical output: ``docsan clean`` on the corpus and the fixtures gives exactly the committed files.

A refactoring must leave every file unchanged. A change of behaviour made on
purpose regenerates them (``make golden``) and says in its commit which
outputs changed and why; tests/golden_outputs.py describes the cases.
"""

from __future__ import annotations

import difflib

import pytest

from tests.golden_outputs import CASES, Case, Unavailable, differences, stored

# How much of the first changed file the failure shows.
_DIFF_LINES = 40


def _first_diff(case: str, files: dict[str, str]) -> str:
    old = stored(case)
    for name in sorted(files):
        if name in old and old[name] != files[name]:
            diff = difflib.unified_diff(
                old[name].splitlines(), files[name].splitlines(), f"golden/{name}", f"now/{name}", lineterm="", n=1
            )
            return "\n".join(list(diff)[:_DIFF_LINES])
    return ""


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.name == "ocr" else []) for c in CASES]
)
def test_clean_output_is_unchanged(case: Case) -> None:
    try:
        files = case.produce()
    except Unavailable as why:
        pytest.skip(str(why))
    changed = differences(case.name, files)
    if changed:
        pytest.fail(
            f"{len(changed)} golden output(s) of case {case.name!r} differ:\n"
            + "\n".join(changed)
            + f"\n\nFirst difference:\n{_first_diff(case.name, files)}\n\n"
            + "If this change is intended, regenerate with `make golden` "
            + f"(or `python -m tests.golden_outputs --write {case.name}`) and commit tests/golden/.",
            pytrace=False,
        )
