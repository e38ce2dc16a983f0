"""Where a block's lines sit along the page's reading axis."""

from __future__ import annotations

import pytest

from docsan.geometry import is_vertical, line_centres
from docsan.model import BBox, Block


@pytest.mark.parametrize(
    ("block", "centres"),
    [
        # Stacked lines spread evenly over the box's height.
        (Block("one\ntwo\nthree\nfour", bbox=BBox(50, 600, 550, 760), font_size=10), [620.0, 660.0, 700.0, 740.0]),
        # One printed row (no thicker than 1.8 font sizes): every line at the row's centre.
        (Block("left\nright", bbox=BBox(50, 100, 550, 118), font_size=10), [109.0, 109.0]),
        # Sideways text: read along x, its width the thickness (one row here).
        (Block("Annual report\n2024", bbox=BBox(10, 100, 28, 700), font_size=10), [19.0, 19.0]),
        # Sideways and stacked: spread over the width.
        (Block("Annual report\n2024", bbox=BBox(10, 100, 50, 700), font_size=20), [20.0, 40.0]),
        (Block("no box\nat all"), [0.0, 0.0]),
    ],
)
def test_line_centres(block: Block, centres: list[float]) -> None:
    assert line_centres(block) == centres
    # The caller's own is_vertical gives the same centres.
    assert line_centres(block, is_vertical(block)) == centres
