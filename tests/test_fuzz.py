"""Fuzzing ``clean``: mutated corpus PDF bytes, text bytes in many encodings, chat JSON.

For every case: no exception but docsan's own one-line errors, no forbidden
code point in the output, and the output cleaned again as text is a fixed
point (idempotence). ``make test`` runs a short pass (``DOCSAN_FUZZ_EXAMPLES``
cases per input kind, 25 by default); ``make fuzz`` a long one. Each case
is bounded in time by hypothesis' deadline.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import docsan
from docsan.config import Config
from docsan.errors import DocsanError
from docsan.extract import load_bytes
from tests.conftest import CORPUS
from tests.test_hostile import forbidden

EXAMPLES = int(os.environ.get("DOCSAN_FUZZ_EXAMPLES", "25"))
# OCR off: a mutated scan would make each case an OCR run; OCR has its own tests.
CONFIG = Config().with_overrides(extract={"ocr": "never"})
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=30_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("DOCSAN_FUZZ_RANDOM") is None,
)
SEEDS = sorted(p for p in CORPUS.glob("*.pdf") if 0 < p.stat().st_size < 400_000) if CORPUS.is_dir() else []
ENCODINGS = ["utf-8", "utf-16", "utf-16-le", "gb18030", "big5", "shift_jis", "cp1252", "cp1251", "latin-1"]


def _clean(data: bytes, name: str) -> None:
    try:
        # A chat whose message is left empty by cleaning is refused by the chat guard, after the stages.
        first = docsan.clean_document(load_bytes(data, name, CONFIG.extract), CONFIG)
    except DocsanError as err:
        assert "\n" not in str(err) and str(err).startswith(name)
        return
    assert forbidden(first.text) == []
    if not first.text.strip():
        return
    # The output, cleaned again as text, reaches a fixed point at once.
    second = docsan.clean_text(first.text, CONFIG).text
    assert docsan.clean_text(second, CONFIG).text == second
    assert forbidden(second) == []


def _mutate(data: bytes, rnd: random.Random, n: int) -> bytes:
    buf = bytearray(data)
    for _ in range(n):
        if not buf:
            break
        op = rnd.randrange(3)
        i = rnd.randrange(len(buf))
        if op == 0:
            buf[i] = rnd.randrange(256)
        elif op == 1:
            del buf[i : i + rnd.randrange(1, 64)]
        else:
            buf[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 16)))
    return bytes(buf)


@pytest.mark.skipif(not SEEDS, reason="shared corpus not found")
@FUZZ
@given(seed=st.integers(0, 2**32 - 1), edits=st.integers(1, 40))
# Found by `make fuzz`: one edit leaves PyMuPDF no page count and pdfplumber no /Root (a traceback).
@example(seed=3403, edits=1)
# A mutated dictionary key: MuPDF raises its own error class while the page's content is measured.
@example(seed=8, edits=4)
# Edits that delete the whole file.
@example(seed=66, edits=10)
def test_mutated_pdf_bytes(seed: int, edits: int) -> None:
    rnd = random.Random(seed)
    path = SEEDS[rnd.randrange(len(SEEDS))]
    _clean(_mutate(path.read_bytes(), rnd, edits), path.name)


@FUZZ
@given(text=st.text(max_size=2000), encoding=st.sampled_from(ENCODINGS))
def test_text_in_many_encodings(text: str, encoding: str) -> None:
    _clean(text.encode(encoding, errors="ignore"), "fuzz.txt")


@FUZZ
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes(data: bytes) -> None:
    _clean(data, "fuzz.bin")


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "bogus"]), "content": st.text(max_size=300)}
)


@FUZZ
@given(messages=st.lists(_message, max_size=8), wrap=st.booleans())
# A message of one control character: empty after cleaning, refused in one line by the chat guard.
@example(messages=[{"role": "user", "content": "\x08"}], wrap=False)
def test_chat_json(messages: list[dict[str, str]], wrap: bool) -> None:
    obj: object = {"model": "m", "messages": messages} if wrap else messages
    _clean(json.dumps(obj).encode(), "chat.json")
