"""Which table cells are figures: counts, amounts, percentages, dates, times.

A row holding a figure is data, never a header row (``ruled.header_rows``),
and a row that continues a table on the next page has figures where the
table's rows have them (``continued``).
"""

from __future__ import annotations

import regex

# Digits with the separators, signs and units figures are printed with: "1,178", "(3.5)", "−2%",
# "$27,794.00", "06/30/2015", "10:45". One pass, no nested quantifiers: linear.
_FIGURE = regex.compile(r"[-+−(]?[\d.,/:%$€£¥ ]*\d[\d.,/:%)]*")


def is_figure(text: str) -> bool:
    return bool(text) and _FIGURE.fullmatch(text.strip()) is not None
