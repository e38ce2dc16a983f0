"""Joining pieces of text (OCR words, table-cell lines) without spacing CJK apart.

Latin words need a space between them; next to a CJK character no space is
written (``费用 分 类`` is wrong, ``费用分类`` is right; Chinese typesetting
also writes ``2017年9月`` and ``常关缉违字[2019]13号`` without spaces).
"""

from __future__ import annotations

import regex

# Han, kana, hangul, CJK and full-width punctuation: no space is needed next to these.
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u3000-\u303f\uff00-\uffef]")


def is_cjk(ch: str) -> bool:
    return bool(ch) and _CJK.match(ch) is not None


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
