"""Is a page's text layer real text, or garbage that only OCR can replace?

A text layer can exist and still be useless: a font without a Unicode map
extracts as ``(cid:12)``, ``GLYPH<3>``, U+FFFD, private-use code points or
Latin-1 mojibake (``§ìÜ£îüí``), and a bad OCR layer over a scan reads
``«POAH «3E*»CM tanntxim``. We score the page by counting units:

* English: whitespace tokens. A token whose letters form a word in the
  50,000 most frequent English words (wordfreq), or a number, is *good*; an
  ASCII word we do not know (a name, an abbreviation, an OCR typo) is
  *unknown*; a token holding U+FFFD, private-use or control characters,
  ``(cid:N)``/``GLYPH<>`` markers, symbols inside letters, or non-ASCII
  letters that make no known word is *bad*.
* Chinese: every CJK character is a unit; the 3,755 common characters
  (GB2312 level 1, which covers >99% of running modern text) are *good*,
  others *unknown*.

A page is garbage when good units are under half of all units, or bad units
are over a quarter. Dot leaders set in an unmapped font (a run of U+FFFD
after a real label, as in the FY2013 budget table) are one bad token per
line among many good labels and numbers, so such a page stays well inside
both limits, while a page of ``"7+%-`` junk or mojibake does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import regex

# Below this share of good units, the page has "almost no real words".
MIN_GOOD_SHARE = 0.65
# Above this share of outright bad units, the page is garbage even if the rest reads well.
MAX_BAD_SHARE = 0.15

# Single-character classes and bounded repeats only: linear on any input.
_MARKER = regex.compile(r"\(cid:\d{1,6}\)|GLYPH<[^<>\s]{0,40}>")
_BAD_CHAR = regex.compile(r"[\ufffd\p{Co}\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_HAN = regex.compile(r"[\p{Han}]")
_LEADERS = frozenset(".·…-_–—")
_ALNUM_RUN = regex.compile(r"[\p{L}\p{N}]+")
# A letter, then a symbol that real words never carry inside them, then a letter.
_ODD_INSIDE = regex.compile(r"\p{L}[«»©®£¥§¤¶^~*|\\{}<>]\p{L}|\p{L}[«»©§¤¶^~*|\\{}]|[«»©§¤¶^~*|\\{}]\p{L}")
_SINGLE_LETTER_WORDS = {"a", "i", "A", "I"}


@dataclass(frozen=True, slots=True)
class Quality:
    """Unit counts of one page's text and the verdict drawn from them."""

    good: int
    unknown: int
    bad: int

    @property
    def total(self) -> int:
        return self.good + self.unknown + self.bad

    @property
    def good_share(self) -> float:
        return self.good / self.total if self.total else 0.0

    @property
    def bad_share(self) -> float:
        return self.bad / self.total if self.total else 0.0

    @property
    def garbage(self) -> bool:
        if self.total == 0:
            return False
        return self.good_share < MIN_GOOD_SHARE or self.bad_share > MAX_BAD_SHARE

    def describe(self) -> str:
        return f"{self.good}/{self.total} good units, {self.bad} bad"


# The English vocabulary: the 50,000 most frequent words (see the module docstring).
ENGLISH_WORDS = 50_000
# wordfreq's own number filter (wordfreq.numbers.MULTI_DIGIT_RE): its lists leave such words out.
_MULTI_DIGIT = regex.compile(r"\d[\d.,]+")


@cache
def _english_words() -> frozenset[str]:
    return frozenset(top_words("en", ENGLISH_WORDS))


def top_words(lang: str, n: int) -> list[str]:
    """``wordfreq.top_n_list(lang, n)`` read straight from wordfreq's "large" list file.

    Importing wordfreq (langcodes, its tokenizers) and building the list
    cost 0.25 s per process, a sixth of the floor's whole run; streaming the
    file and stopping after ``n`` words costs 0.05 s. A file of another
    format, or a language without a large list, goes through wordfreq itself.
    """
    import gzip
    import importlib.util

    import msgpack

    spec = importlib.util.find_spec("wordfreq")
    path = Path(spec.origin).parent / "data" / f"large_{lang}.msgpack.gz" if spec and spec.origin else None
    if path is None or not path.is_file():
        return _top_words_from_wordfreq(lang, n)
    words: list[str] = []
    with gzip.open(path, "rb") as f:
        # A cBpack file: [header, band, band, ...], bands from most to least frequent.
        unpacker = msgpack.Unpacker(f, raw=False)
        bands = unpacker.read_array_header() - 1
        if unpacker.unpack() != {"format": "cB", "version": 1}:
            return _top_words_from_wordfreq(lang, n)
        for _ in range(bands):
            words += [w for w in unpacker.unpack() if not _MULTI_DIGIT.match(w)]
            if len(words) >= n:
                break
    return words[:n]


def _top_words_from_wordfreq(lang: str, n: int) -> list[str]:
    from wordfreq import top_n_list

    return top_n_list(lang, n)


def _is_common_han(ch: str) -> bool:
    try:
        first = ch.encode("gb2312")[0]
    except UnicodeEncodeError:
        return False
    # GB2312 rows 16-55 (lead bytes 0xB0-0xD7) are the level-1 common characters.
    return 0xB0 <= first <= 0xD7


def _classify_token(token: str) -> str | None:
    """'good', 'unknown', 'bad', or None for a token with no letters or digits."""
    words = _english_words()
    if token.isascii() and token.isalpha():
        # The commonest token, a plain word: none of the checks below can fire
        # but the last two (it is its own single run, of letters only).
        return "good" if (len(token) > 1 and token.lower() in words) or token in _SINGLE_LETTER_WORDS else "unknown"
    if _BAD_CHAR.search(token) or _MARKER.search(token):
        return "bad"
    runs = _ALNUM_RUN.findall(token)
    if not runs:
        return None
    # Leader characters (dots, dashes, underscores) are layout, not junk: "cancer?......8".
    symbols = sum(1 for c in token if not (c.isalnum() or c in _LEADERS))
    if symbols > 2 * sum(len(r) for r in runs) or _ODD_INSIDE.search(token):
        # Mostly symbols ('"7+%-'), or a symbol between letters ("«3E*»CM", "H^uid",
        # "£ug»r"): the shapes of a font without a Unicode map and of bad OCR.
        return "bad"
    if not all(r.isascii() for r in runs):
        # Non-ASCII letters that make no known word: the shape of Latin-1 mojibake ("§ìÜ£îüí").
        return "good" if any(r.lower() in words for r in runs) else "bad"
    for r in runs:
        if r.isdigit() or (len(r) > 1 and r.lower() in words) or r in _SINGLE_LETTER_WORDS:
            return "good"
    # Names, codes (1040NR, CUSTOMER_TAX_ID), OCR typos: real or not, we cannot tell.
    return "unknown"


@lru_cache(maxsize=65536)
def _token_units(token: str) -> tuple[int, int, int]:
    """(good, unknown, bad) units of one whitespace token; cached, as running text repeats tokens."""
    good = unknown = bad = 0
    if token.isascii():
        rest = [token]
    else:
        hans = _HAN.findall(token)
        common = sum(1 for h in hans if _is_common_han(h))
        good, unknown = common, len(hans) - common
        rest = _HAN.sub(" ", token).split() if hans else [token]
    for piece in rest:
        kind = _classify_token(piece)
        good += kind == "good"
        unknown += kind == "unknown"
        bad += kind == "bad"
    return good, unknown, bad


def assess(text: str) -> Quality:
    """Count good, unknown and bad units in ``text`` (see the module docstring)."""
    good = unknown = bad = 0
    for token in text.split():
        g, u, b = _token_units(token)
        good, unknown, bad = good + g, unknown + u, bad + b
    return Quality(good, unknown, bad)
