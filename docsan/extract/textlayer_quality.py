"""Is a piece of text real writing in some script, or garbage only OCR (or another decoding) can fix?

A text layer can exist and still be useless: a font without a Unicode map
extracts as ``(cid:12)``, ``GLYPH<3>``, U+FFFD, private-use code points or
Latin-1 mojibake (``§ìÜ£îüí``), and a bad OCR layer over a scan reads
``«POAH «3E*»CM tanntxim``. Real text, on the other hand, can be in any
script: ``Привет, мир``, ``مرحبا بالعالم``, ``สวัสดีชาวโลก``, ``こんにちは世界``,
Czech or Vietnamese with their diacritics. So the judgement uses only
Unicode's own properties (scripts, letters, combining marks, symbols), never
a word list of one language:

* A whitespace token is a unit. It is **bad** when it holds U+FFFD,
  private-use or control characters, ``(cid:N)``/``GLYPH<>`` markers, a
  symbol wedged between letters (``«3E*»CM``), a combining mark that follows
  no letter, letters of two scripts that are never written together in one
  word (``Aπ``, ``Жx``; Han with kana, and Latin with CJK, are normal), more
  symbols than letters and digits, or (Latin, Greek, Cyrillic) a word made
  mostly of accented capitals and accented letters (``rÜñê``: the shape of
  Latin-1 mojibake); otherwise it is **good**.
* Han ideographs are units one by one: an ideograph in the everyday sets of
  Chinese, Taiwanese or Japanese encodings (GB2312 level 1, Big5 level 1,
  JIS X 0208 level 1: together >99% of running text) is *good*, a rarer one
  *unknown*. Rare ideographs are what a Chinese file decoded with the wrong
  legacy encoding turns into (``瞳叭厨``), so the encoding detector reads the
  same score. Kana and Hangul syllables are units one by one too: good, but
  half-width kana (and their own sound marks) unknown, as rare as rare ideographs.

A text is garbage when good units are under :data:`MIN_GOOD_SHARE` of the
units judged good or bad, or bad units over :data:`MAX_BAD_SHARE` of all (rare
ideographs are rare, not broken: CJK Extension A text is not garbage). The
stricter :attr:`Quality.plausible` counts them against, for the encoding
detector. Dot leaders set in an unmapped font
(a run of U+FFFD after a real label, as in the FY2013 budget table) are one
bad token per line among many good labels and numbers, so such a page stays
inside both limits, while a page of ``"7+%-`` junk or mojibake does not.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import regex

# Below this share of good units, the text has "almost nothing readable".
MIN_GOOD_SHARE = 0.65
# Above this share of outright bad units, the text is garbage even if the rest reads well.
MAX_BAD_SHARE = 0.15

# Single-character classes and bounded repeats only: linear on any input.
_MARKER = regex.compile(r"\(cid:\d{1,6}\)|GLYPH<[^<>\s]{0,40}>")
_BAD_CHAR = regex.compile(r"[\ufffd\p{Co}\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_HAN = regex.compile(r"\p{Han}")
# Half-width katakana with their own prolonged sound and voicing marks (U+FF70, U+FF9E, U+FF9F: script
# Common, not Katakana): a 1980s terminal form, rare in running text; what Cyrillic read as Shift-JIS gives.
_HALFWIDTH_KANA_CHARS = r"\uff66-\uff9f"
# Kana and Hangul syllables, units one by one: the scripts' letters, the prolonged sound mark both kana
# share (U+30FC, script Common) and every half-width kana (above), so that those are a part of these.
_SYLLABIC_CHARS = rf"\p{{Hiragana}}\p{{Katakana}}\p{{Hangul}}\u30fc{_HALFWIDTH_KANA_CHARS}"
_SYLLABIC = regex.compile(f"[{_SYLLABIC_CHARS}]")
_HALFWIDTH_KANA = regex.compile(f"[{_HALFWIDTH_KANA_CHARS}]")
_LEADERS = frozenset(".·…-_–—")
# A letter, then a symbol that real words never carry inside them, then a letter; or a letter
# touching a guillemet, section or copyright sign (Markdown's "**bold**" and "|cell" are fine).
_ODD_INSIDE = regex.compile(r"\p{L}[«»©®£¥§¤¶^~*|\\{}<>]\p{L}|\p{L}[«»©§¤¶]|[«»©§¤¶]\p{L}")
# A combining mark at the start of a token or after a non-letter (a letter's marks may stack).
_STRAY_MARK = regex.compile(r"(?:^|[^\p{L}\p{M}])\p{M}")
# Letters of the cased alphabets whose mojibake shows up as a word of accented letters.
_ACCENTED = regex.compile(r"[\u00c0-\u00ff\u0100-\u024f]")
_SCRIPT_OF_LETTER = regex.compile(
    r"(?P<Latin>\p{Latin})|(?P<Greek>\p{Greek})|(?P<Cyrillic>\p{Cyrillic})|(?P<Arabic>\p{Arabic})"
    rf"|(?P<Hebrew>\p{{Hebrew}})|(?P<Thai>\p{{Thai}})|(?P<CJK>[\p{{Han}}{_SYLLABIC_CHARS}])"
    r"|(?P<Other>\p{L})"
)
# The ASCII characters _BAD_CHAR matches, and those that _ODD_INSIDE can match between two
# letters (no other ASCII character is in its sets): an ASCII token with none of them needs
# neither pattern. _MARKER can only match where one of its markers starts (a substring test).
_ASCII = [chr(c) for c in range(128)]
_ASCII_BAD_CHARS = frozenset(c for c in _ASCII if _BAD_CHAR.match(c))
_ASCII_ODD = frozenset(c for c in _ASCII if _ODD_INSIDE.search(f"a{c}a"))
_MARKER_CID, _MARKER_GLYPH = "(cid:", "GLYPH<"
# An ASCII token's letters and digits (str.isalnum's, in ASCII exactly [A-Za-z0-9]) and its leaders,
# counted by deleting them with str.translate: one pass in C, not a call per character. The tables
# are lists indexed by code point, so no lookup misses (a miss in a dict table raises a KeyError).
_DELETE_ALNUM = [None if c.isalnum() else c for c in _ASCII]
_DELETE_LEADERS = [None if c in _LEADERS else c for c in _ASCII]
# Scripts that share words with Latin letters in real text (product names, units, codes).
_MIXES_WITH_LATIN = frozenset({"CJK", "Latin"})


@dataclass(frozen=True, slots=True)
class Quality:
    """Unit counts of one text and the verdict drawn from them."""

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
        # Rare ideographs (unknown) are neither: a page of CJK Extension A is rare, not broken.
        judged = self.good + self.bad
        if judged == 0:
            return False
        return self.good / judged < MIN_GOOD_SHARE or self.bad_share > MAX_BAD_SHARE

    @property
    def plausible(self) -> bool:
        """Reads as real text in the strict sense the encoding detector needs: rare ideographs count against."""
        return self.total > 0 and self.good_share >= MIN_GOOD_SHARE and self.bad_share <= MAX_BAD_SHARE

    @property
    def score(self) -> float:
        """One number to compare two readings of the same text: higher reads better."""
        return self.good_share - 2 * self.bad_share

    def describe(self) -> str:
        return f"{self.good}/{self.total} good units, {self.bad} bad"


@lru_cache(maxsize=65536)
def _is_common_han(ch: str) -> bool:
    """In the everyday level-1 set of GB2312, Big5 or JIS X 0208 (see the module docstring)."""
    for codec, lo, hi in (("gb2312", 0xB0, 0xD7), ("big5", 0xA4, 0xC6), ("shift_jis", 0x88, 0x98)):
        try:
            lead = ch.encode(codec)[0]
        except UnicodeEncodeError:
            continue
        if lo <= lead <= hi:
            return True
    return False


def _scripts(token: str) -> set[str]:
    return {m.lastgroup for m in _SCRIPT_OF_LETTER.finditer(token) if m.lastgroup}


def _classify_token(token: str) -> str | None:
    """'good' or 'bad' for a token without Han ideographs; None when it has no letters or digits."""
    if token.isascii():
        return _classify_ascii(token)
    if _BAD_CHAR.search(token) or _MARKER.search(token):
        return "bad"
    letters = sum(map(str.isalpha, token))
    alnum = sum(map(str.isalnum, token))
    if not alnum:
        return None
    # Leader characters (dots, dashes, underscores) are layout, not junk: "cancer?......8".
    symbols = sum(1 for c in token if not (c.isalnum() or c in _LEADERS or unicodedata.category(c)[0] == "M"))
    if symbols > 2 * alnum or _ODD_INSIDE.search(token) or _STRAY_MARK.search(token):
        # Mostly symbols ('"7+%-'), or a symbol between letters ("«3E*»CM", "H^uid"): the shapes of a
        # font without a Unicode map and of bad OCR.
        return "bad"
    scripts = _scripts(token)
    if len(scripts) > 1 and not scripts <= _MIXES_WITH_LATIN:
        return "bad"
    if letters >= 3 and len(_ACCENTED.findall(token)) * 3 > letters * 2:
        return "bad"  # "rÜñê", "ÜèßÜü": accented letters only, as mojibake spells
    return "good"


def _classify_ascii(token: str) -> str | None:
    """:func:`_classify_token` for an ASCII token: no mark, accented letter or script but Latin can be in it.

    So the checks for those are left out, and a symbol is any character that
    is neither a letter, a digit nor a leader: the same verdicts, cheaper on
    the numbers and codes that are many of a page's distinct tokens.
    """
    if token.isalpha():
        return "good"  # the commonest token: a plain word, none of the checks below can fire
    # The patterns only where they can match (a set test or a substring search costs a tenth of a
    # regex search, and most of a page's distinct tokens are numbers and words with punctuation).
    marker = (_MARKER_CID in token or _MARKER_GLYPH in token) and _MARKER.search(token)
    if marker or not _ASCII_BAD_CHARS.isdisjoint(token):
        return "bad"
    rest = token.translate(_DELETE_ALNUM)
    alnum = len(token) - len(rest)
    if not alnum:
        return None
    symbols = len(rest.translate(_DELETE_LEADERS))
    if symbols > 2 * alnum:
        return "bad"
    return "bad" if not _ASCII_ODD.isdisjoint(token) and _ODD_INSIDE.search(token) else "good"


# A token's (good, unknown, bad) units packed into one int, a field every _FIELD bits: assess() sums
# a page's tokens with sum() in C. A field cannot carry into the next: a text has fewer units than
# characters, far under 2**_FIELD.
_FIELD = 64
_MASK = (1 << _FIELD) - 1


def _packed(good: int, unknown: int, bad: int) -> int:
    return good | unknown << _FIELD | bad << 2 * _FIELD


_UNITS_OF_KIND = {"good": _packed(1, 0, 0), "bad": _packed(0, 0, 1), None: 0}


def _token_units(token: str) -> int:
    """The packed (good, unknown, bad) units of one whitespace token."""
    if token.isascii():
        return _UNITS_OF_KIND[_classify_ascii(token)]
    good = unknown = bad = 0
    hans = _HAN.findall(token)
    if hans:
        common = sum(map(_is_common_han, hans))
        good, unknown = common, len(hans) - common
        token = _HAN.sub(" ", token)
    # Each pattern runs only where it can match (half-width kana are syllables): a Chinese page's
    # tokens are long runs of ideographs, and a Latin page's have neither.
    syllables = len(_SYLLABIC.findall(token))
    if syllables:
        halfwidth = len(_HALFWIDTH_KANA.findall(token))
        good += syllables - halfwidth
        unknown += halfwidth
        token = _SYLLABIC.sub(" ", token)
    for piece in token.split():
        kind = _classify_token(piece)
        good += kind == "good"
        bad += kind == "bad"
    return _packed(good, unknown, bad)


class _UnitsCache(dict[str, int]):
    """Token -> its packed units, computed on a miss: running text repeats tokens, across pages too.

    A hit is dict.__getitem__ in C, no Python frame per token; emptied when full, so that a
    long-lived process keeps it bounded.
    """

    MAX_SIZE = 65536

    def __missing__(self, token: str) -> int:
        if len(self) >= self.MAX_SIZE:
            self.clear()
        units = self[token] = _token_units(token)
        return units


_UNITS = _UnitsCache()


def assess(text: str) -> Quality:
    """Count good, unknown and bad units in ``text`` (see the module docstring)."""
    units = sum(map(_UNITS.__getitem__, text.split()))
    return Quality(units & _MASK, units >> _FIELD & _MASK, units >> 2 * _FIELD)


def letters(text: str) -> int:
    """Letters (and the marks that belong to them) in ``text``: what "text kept" is counted in."""
    return sum(1 for c in text if c.isalpha() or unicodedata.category(c) == "Mn")
