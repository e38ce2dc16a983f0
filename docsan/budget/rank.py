"""BM25 relevance of paragraphs to a question, for Chinese and English alike.

Terms: lowercased words for scripts that separate words by spaces (Latin,
Cyrillic, Greek, Arabic...) and overlapping character bigrams for scripts
that do not (Han, kana, Hangul), plus single characters for one-character
runs. Bigrams are the classic choice for CJK retrieval (Lucene's CJKAnalyzer):
they need no dictionary, and a query word like 营业收入 matches the same
bigrams wherever it appears.

Why not the served tokenizer's own token ids: BPE tokens depend on context
(" revenue" and "revenue" are different ids, and a Chinese phrase is merged
differently inside a longer run), so the same word in the question and in the
document can share no ids. Why not bm25s: the formula is a dozen lines, and
scoring a few thousand paragraphs in Python takes milliseconds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import regex

from docsan.text.chardata import CJK_LETTERS

# Either a run of CJK letters, or a run of word characters that are not
# CJK and not "_". Two single character classes: linear time.
_TERM = regex.compile(rf"[{CJK_LETTERS}]+|[^\W_{CJK_LETTERS}]+")
_CJK_RUN = regex.compile(rf"[{CJK_LETTERS}]+")

# The usual BM25 constants (Robertson & Zaragoza): k1 saturates repeated
# terms, b normalises for paragraph length.
K1 = 1.5
B = 0.75


def terms(text: str) -> list[str]:
    """The index terms of ``text``: lowercased words, CJK character bigrams."""
    out: list[str] = []
    for match in _TERM.finditer(text):
        run = match.group()
        if _CJK_RUN.fullmatch(run):
            if len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run.casefold())
    return out


def bm25_scores(query: str, texts: Sequence[str], *, k1: float = K1, b: float = B) -> list[float]:
    """Okapi BM25 score of each text for ``query`` (0.0 when no query term occurs)."""
    docs = [Counter(terms(t)) for t in texts]
    q_terms = set(terms(query))
    if not docs or not q_terms:
        return [0.0] * len(docs)
    n = len(docs)
    lengths = [sum(d.values()) for d in docs]
    avg = sum(lengths) / n or 1.0
    df = {t: sum(1 for d in docs if t in d) for t in q_terms}
    # The "+1" form of IDF (Lucene's) stays positive for terms in most paragraphs.
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms if df[t]}
    scores = []
    for d, length in zip(docs, lengths, strict=True):
        norm = k1 * (1 - b + b * length / avg)
        scores.append(sum((w * d[t] * (k1 + 1) / (d[t] + norm) for t, w in idf.items() if t in d), 0.0))
    return scores
