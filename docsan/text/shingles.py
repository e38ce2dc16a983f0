"""Shingles for near-duplicate detection, per script: character n-grams for CJK, word n-grams elsewhere.

CJK is written without spaces, so words are unknown; overlapping character
5-grams capture short words and their order. Space-separated scripts use
word 3-grams (a character n-gram there would mostly encode spelling).
A mixed paragraph is cut into script segments and each is shingled its own
way; numbers join the segment they stand in ("降低17%" stays CJK).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import regex

from docsan.text.chardata import CJK_LETTERS, CJK_WEIGHT

# One token per maximal run of CJK letters, or per alphanumeric word;
# punctuation and spaces are dropped. Alternatives of single character
# classes, each with one quantifier: linear.
_TOKEN = regex.compile(
    rf"(?P<cjk>[{CJK_LETTERS}]+)|(?P<word>[[\p{{L}}\p{{M}}\p{{N}}]--[{CJK_LETTERS}]]+)", flags=regex.V1
)
_ANY_CJK = regex.compile(rf"[{CJK_LETTERS}]")
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
# The same words in ASCII text (no marks there, the only digits 0-9): most paragraphs are ASCII. The class
# that defines them; _ascii_words finds them by a byte table made from it.
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
# _ASCII_WORD's words found by bytes.translate and split instead (see _ascii_words): each byte that is no
# character of such a word, every byte of a UTF-8 sequence outside ASCII included, becomes a space.
_ASCII_WORD_BYTES = bytes(c if _ASCII_WORD.fullmatch(chr(c)) else ord(" ") for c in range(256))
# A character outside ASCII that can be part of a word (or a CJK letter): where a text has none, its
# non-ASCII characters are all punctuation, symbols or spaces ("’", "–", "•": a fifth of the corpus's
# paragraphs), which separate words like ASCII punctuation, so its words are _ASCII_WORD's.
_NON_ASCII_WORD = regex.compile(rf"[[\p{{L}}\p{{M}}\p{{N}}{CJK_LETTERS}]--[\x00-\x7f]]", flags=regex.V1)
# A text's characters outside ASCII, found by the standard library's engine: _NON_ASCII_WORD (a class of
# non-ASCII characters only) is then asked about those alone, not about every character of the text (the
# regex module tests each against its property sets, several times the cost of this scan).
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


@dataclass(frozen=True, slots=True)
class Shingled:
    """A span's shingles, its normalised form, and whether it was long enough to have n-grams."""

    shingles: frozenset[str]
    normalized: str
    # False when every segment is shorter than its n-gram size: such spans
    # are compared by their normalised text, never by MinHash (otherwise
    # they would all share a degenerate signature).
    has_ngrams: bool
    # Letters and digits, a CJK character counting CJK_WEIGHT; spaces and punctuation not at all.
    # The weight puts "the same amount of text" at about the same length in both scripts, so one
    # ``min_chars`` serves both. Counted once here: the stage reads it for every unit in every round.
    length: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        cjk = 0 if self.normalized.isascii() else len(_ANY_CJK.findall(self.normalized))  # isascii: O(1)
        object.__setattr__(self, "length", len(self.normalized) - self.normalized.count(" ") + (CJK_WEIGHT - 1) * cjk)


def shingle(text: str, *, cjk_n: int = 5, word_n: int = 3) -> Shingled:
    """Case-folded, punctuation- and space-free shingles of ``text``."""
    text = text.casefold()
    words = _words_without_cjk(text)
    if words is not None:
        # Fast path, most paragraphs: one script, words only (same result as below).
        if len(words) >= word_n:
            # The word_n shifted lists unpacked from a list, not a generator: 2,600 instructions fewer a text
            # (the corpus: 150 instead of 160 M for the n-gram sets).
            grams = frozenset(map(" ".join, zip(*[words[i:] for i in range(word_n)], strict=False)))
            return Shingled(grams, " ".join(words), True)
        joined = " ".join(words)
        return Shingled(frozenset([joined]) if words else frozenset(), joined, False)
    segments = _segments(text)
    grams: set[str] = set()
    has_ngrams = False
    parts = []
    for cjk, pieces in segments:
        if cjk:
            s = "".join(pieces)
            n = cjk_n
            if len(s) >= n:
                has_ngrams = True
                grams.update(s[i : i + n] for i in range(len(s) - n + 1))
            else:
                grams.add(s)
            parts.append(s)
        else:
            n = word_n
            if len(pieces) >= n:
                has_ngrams = True
                grams.update(" ".join(pieces[i : i + n]) for i in range(len(pieces) - n + 1))
            else:
                grams.add(" ".join(pieces))
            parts.append(" ".join(pieces))
    return Shingled(frozenset(grams), " ".join(parts), has_ngrams)


def _words_without_cjk(text: str) -> list[str] | None:
    """The words of casefolded ``text`` when it holds no CJK letter (its one segment, see :func:`_segments`), else None.

    Found by :func:`_ascii_words` where every non-ASCII character is punctuation or a symbol.
    """
    if text.isascii() or _NON_ASCII_WORD.search("".join(_NON_ASCII.findall(text))) is None:  # isascii: O(1)
        return _ascii_words(text)
    return _WORD.findall(text) if _ANY_CJK.search(text) is None else None


def _ascii_words(text: str) -> list[str]:
    """``_ASCII_WORD.findall(text)``: its maximal runs of ASCII letters and digits, by byte operations.

    Every other character becomes one or more spaces (_ASCII_WORD_BYTES), so splitting at whitespace gives
    the same runs; the byte translation and the split cost about a third of the regex scan's instructions
    (corpus: 138 -> 48 M over the 3,626 texts that take this path).
    """
    return text.encode("utf-8", "surrogatepass").translate(_ASCII_WORD_BYTES).decode("ascii").split()


def _segments(text: str) -> list[tuple[bool, list[str]]]:
    """(is CJK, pieces) per script segment of casefolded ``text``: CJK runs or words; a number joins its segment."""
    segments: list[tuple[bool, list[str]]] = []
    for m in _TOKEN.finditer(text):
        tok = m.group()
        cjk = m.lastgroup == "cjk"
        if segments and (segments[-1][0] == cjk or tok.isdigit()):
            segments[-1][1].append(tok)
        else:
            segments.append((cjk, [tok]))
    return segments


def novel_length(text: str, known: frozenset[str], *, cjk_n: int = 5, word_n: int = 3) -> int:
    """The longest stretch of ``text`` no shingle of ``known`` covers, weighted as :attr:`Shingled.length`.

    ``k`` tokens inserted or changed in the middle of a text make ``k + n - 1``
    consecutive new n-grams, so a run of ``r`` new n-grams is ``r - n + 1``
    new tokens (CJK characters weigh three, a word its letters). One pass
    over the n-grams in order: linear.
    """
    best = 0
    text = text.casefold()
    words = _words_without_cjk(text)
    segments = _segments(text) if words is None else [(False, words)] if words else []
    for cjk, pieces in segments:
        tokens = list("".join(pieces)) if cjk else pieces
        n = cjk_n if cjk else word_n
        sep = "" if cjk else " "
        if len(tokens) < n:
            grams = [sep.join(tokens)]
            n = len(tokens) or 1
        else:
            grams = [sep.join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        run_start = None
        for i, gram in enumerate([*grams, None]):
            if gram is not None and gram not in known:
                run_start = i if run_start is None else run_start
                continue
            if run_start is not None:
                new = tokens[run_start + n - 1 : i] or tokens[run_start:i]
                weight = 3 * sum(1 for t in new if not t.isdigit()) + sum(1 for t in new if t.isdigit())
                best = max(best, weight if cjk else sum(len(t) for t in new))
                run_start = None
    return best
