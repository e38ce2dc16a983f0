"""Bytes to text: the encoding of a text or chat file, detected, recorded, or refused.

A wrong guess is silent damage: a cp1252 ``Résumé … Köln`` once came out as
``Rsum … Kln`` and a Latin-1 ``Señor`` as ``Se駉r`` (read as GB18030), with
exit 0 and nothing in the report. The order of evidence:

1. ``--encoding NAME`` (``ExtractConfig.encoding``): decoded strictly with it; bytes
   that do not decode are an error naming the offset, not replacement characters.
2. A byte order mark (UTF-8, UTF-16, UTF-32).
3. Valid UTF-8 (ASCII included): by far the commonest, and invalid UTF-8 is
   rarely valid by accident. UTF-8 with a few broken sequences among many
   good ones is still UTF-8; the broken bytes become U+FFFD, which normalize
   removes and reports.
4. UTF-16 without a byte order mark: NUL bytes on one side of most code units.
5. Otherwise charset-normalizer lists the encodings the bytes are valid in,
   with its mess ratio; each candidate's text is scored by
   ``textlayer_quality`` (scripts, letters, common ideographs), and the
   best reading wins. Candidates that read equally well but spell different
   text are a tie: the one first in :data:`PREFERRED` wins (cp1252 over
   cp1250 for Western text: the same bytes, the commoner encoding), and the
   others are named in the report. When no candidate reads as plausible
   text, the file is refused with a one-line error that suggests
   ``--encoding``: a guess would be damage nobody sees.

The choice is returned with a one-line note for the report.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from docsan.errors import InputError
from docsan.extract.textlayer_quality import assess

# Tie-break order among candidates that read equally well: the encodings uploads come in, commonest first
# within each script (GB18030 before Big5: the incident's uploads were mainland Chinese).
PREFERRED: tuple[str, ...] = (
    "cp1252",
    "gb18030",
    "big5",
    "cp932",
    "euc_jp",
    "cp949",
    "cp1251",
    "koi8_r",
    "cp1250",
    "iso8859_2",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp874",
    "cp1258",
    "latin_1",
)
# Tried besides charset-normalizer's own list: it sometimes leaves out the obvious one on short text.
_ALWAYS_TRY = ("cp1252", "gb18030", "big5", "cp932", "cp949", "cp1251", "koi8_r")
# Two readings this close in score are a tie (see the module docstring).
TIE = 0.02
# UTF-8 with at most this share of broken sequences among its multi-byte characters is still UTF-8.
MAX_BROKEN_UTF8 = 0.25
# charset-normalizer's mess ratio above which a candidate is not considered at all.
MAX_CHAOS = 0.3
# How many bytes the detector reads: enough to judge, bounded on a large file.
SAMPLE_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    note: str


def _codec(name: str) -> str:
    return codecs.lookup(name).name


def decode(data: bytes, name: str, encoding: str | None = None) -> Decoded:
    """Decode ``data`` (a file called ``name``) as described in the module docstring."""
    if encoding:
        try:
            return Decoded(data.decode(encoding), _codec(encoding), f"decoded as {_codec(encoding)} (--encoding)")
        except LookupError:
            raise InputError(name, f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as err:
            raise InputError(name, f"not valid {_codec(encoding)}: bad byte at offset {err.start}") from None
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return Decoded(data.decode(codec), _codec(codec), f"decoded as {_codec(codec)} (byte order mark)")
            except UnicodeDecodeError as err:
                raise InputError(name, f"byte order mark says {codec}, but byte {err.start} is not valid") from None
    # Before UTF-8: ASCII in UTF-16 is valid UTF-8 too (a NUL after every letter).
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        return utf16
    try:
        return Decoded(data.decode("utf-8"), "utf-8", "decoded as utf-8")
    except UnicodeDecodeError:
        pass
    mostly = _mostly_utf8(data)
    if mostly is not None:
        return mostly
    return _detect(data, name)


def _mostly_utf8(data: bytes) -> Decoded | None:
    text = data.decode("utf-8", errors="replace")
    broken = text.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = sum(1 for ch in text if ord(ch) > 0x7F and ch != "\ufffd")
    if multibyte and broken <= MAX_BROKEN_UTF8 * multibyte:
        note = f"decoded as utf-8; {broken} invalid byte sequence(s) replaced by U+FFFD (removed by normalize)"
        return Decoded(text, "utf-8", note)
    return None


def _utf16_without_bom(data: bytes) -> Decoded | None:
    if len(data) < 4 or len(data) % 2 or b"\x00" not in data:
        return None
    even, odd = data[0::2], data[1::2]
    # ASCII in UTF-16: the high byte of most units is zero, on the side the byte order puts it.
    codec = "utf-16-be" if even.count(0) > 0.3 * len(even) > odd.count(0) else None
    codec = "utf-16-le" if odd.count(0) > 0.3 * len(odd) > even.count(0) else codec
    if codec is None:
        return None
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        return None
    return Decoded(text, codec, f"decoded as {codec} (no byte order mark; detected by its zero bytes)")


def _detect(data: bytes, name: str) -> Decoded:
    from charset_normalizer import from_bytes
    from charset_normalizer.md import mess_ratio

    sample = data[:SAMPLE_BYTES]
    names = [m.encoding for m in from_bytes(sample) if m.chaos <= MAX_CHAOS]
    candidates: dict[str, tuple[float, str]] = {}
    for enc in dict.fromkeys([*names, *_ALWAYS_TRY]):
        if enc.startswith(("utf_16", "utf_32")):
            continue  # a byte order mark or zero bytes decide those (above)
        try:
            text = sample.decode(enc, errors="strict" if len(sample) == len(data) else "ignore")
        except (UnicodeDecodeError, LookupError):
            continue
        quality = assess(text)
        if quality.plausible:
            # Script scoring decides between readings; charset-normalizer's mess ratio (odd
            # casing, symbol runs: KOI8-R read as cp1251) breaks what scripts alone cannot.
            candidates[_codec(enc)] = (quality.score - mess_ratio(text, MAX_CHAOS), text)
    plausible = candidates
    if not plausible:
        raise InputError(
            name,
            "cannot tell the text encoding (no candidate reads as text); pass --encoding NAME "
            "(e.g. cp1252, gb18030, big5, shift_jis)",
        )
    best = max(score for score, _ in plausible.values())
    tied = [enc for enc, (score, _) in plausible.items() if score >= best - TIE]
    rank = {_codec(e): i for i, e in enumerate(PREFERRED)}
    tied.sort(key=lambda e: rank.get(e, len(rank)))
    chosen = tied[0]
    text = plausible[chosen][1]
    others = sorted({e for e in tied[1:] if plausible[e][1] != text})
    if len(sample) != len(data):
        try:
            text = data.decode(chosen)
        except UnicodeDecodeError as err:
            problem = f"detected {chosen}, but byte {err.start} is not valid in it; pass --encoding"
            raise InputError(name, problem) from None
    note = f"decoded as {chosen} (not UTF-8; detected by charset-normalizer and script scoring)"
    if others:
        note += f"; also plausible: {', '.join(others)} (pass --encoding to choose)"
    return Decoded(text, chosen, note)
