"""Joining pieces of text (OCR words, table-cell lines) without spacing CJK apart.

Latin words need a space between them; next to a CJK character no space is
written (``费用 分 类`` is wrong, ``费用分类`` is right; Chinese typesetting
also writes ``2017年9月`` and ``常关缉违字[2019]13号`` without spaces).
"""

from __future__ import annotations

from docsan.text.chardata import is_cjk


def join_pieces(pieces: list[str]) -> str:
    """Join ``pieces`` with single spaces, except next to a CJK character."""
    out: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if out and not (is_cjk(out[-1][-1]) or is_cjk(piece[0])):
            out.append(" ")
        out.append(piece)
    return "".join(out)
