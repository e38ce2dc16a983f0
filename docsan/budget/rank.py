"""BM25 relevance of paragraphs to a question, for Chinese and English alike.

Terms: Snowball-stemmed (PyStemmer), lowercased words for scripts that
separate words by spaces, so ``comments`` and ``comment``, ``delayed`` and
``delay`` meet; overlapping character bigrams for scripts that do not (Han,
kana, Hangul), plus single characters for one-character runs. Bigrams are the
classic dictionary-free choice for CJK retrieval (Lucene's CJKAnalyzer): a
query word like 营业收入 matches the same bigrams wherever it appears.
Both choices were measured (bench/bench_rank.py, reported in
docs/benchmarks.md): stemming kept the asked fact in 100 % of generated
English histories at tight budgets where plain words kept 85-90 %; a Chinese
word segmenter (rjieba) changed nothing measurable and was not adopted.
The Snowball English stemmer leaves words of other scripts as they are, and
stems other Latin-script languages a little too eagerly but the same way in
the question and the paragraphs, which is what matching needs.

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
from functools import cache
from typing import Any

import regex

from docsan.text.batchcache import MIB, BatchCache, text_bytes
from docsan.text.chardata import CJK_LETTERS

# Either a run of CJK letters, or a run of word characters that are not
# CJK and not "_". Two single character classes: linear time.
_TERM = regex.compile(rf"([{CJK_LETTERS}]+)|([^\W_{CJK_LETTERS}]+)")

# The usual BM25 constants (Robertson & Zaragoza): k1 saturates repeated
# terms, b normalises for paragraph length.
K1 = 1.5
B = 0.75
# Stems are remembered per word: a request's paragraphs repeat their words,
# and a dict lookup is ten times cheaper than a call into the stemmer. Bounded
# so a server's memory does not grow with every word it has seen.
_STEM_CACHE_MAX = 200_000


@cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: the Snowball stemmers in C

    return Stemmer.Stemmer("english")


_stems: dict[str, str] = {}


def _stem(word: str) -> str:
    """The Snowball stem of ``word`` casefolded."""
    stem = _stems.get(word)
    if stem is None:
        if len(_stems) >= _STEM_CACHE_MAX:
            _stems.clear()
        stem = _stems[word] = _stemmer().stemWord(word.casefold())
    return stem


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


# CJK terms: overlapping bigrams. A segmenter (rjieba) was measured and kept
# no asked fact more on the corpus or the generated histories, for 0.25 s
# more start-up per process (bench/bench_rank.py); bigrams need no dictionary.
_cjk_terms = _bigrams


def terms(text: str) -> list[str]:
    """The index terms of ``text``: stemmed lowercased words, CJK character bigrams."""
    out: list[str] = []
    for cjk, word in _TERM.findall(text):
        if cjk:
            out.extend(_cjk_terms(cjk))
        else:
            out.append(_stem(word))
    return out


# What one term of a kept counter costs, at most about: its share of the counter's table (30 bytes) and its
# string (a CJK bigram's, 76-78; a stemmed word's is shared with _stems). Measured 60 on average (tracemalloc,
# 4,000 paragraphs of the replay traffic, Chinese and English).
_TERM_BYTES = 100


def _counts_bytes(text: str, counts: Counter[str]) -> int:
    """An estimate of a kept entry of _TERM_COUNTS: its terms and its text."""
    return _TERM_BYTES * len(counts) + text_bytes(text)


# Term counts per text, kept across calls: a chat client re-sends its whole history with every turn, so
# most paragraphs were ranked for the request before. 16,384 entries held 25 MiB on the replay traffic
# (docs/benchmarks.md, "The gateway's memory and the collector settings"); the byte bound keeps long
# paragraphs from taking more.
_TERM_COUNTS: BatchCache[str, Counter[str]] = BatchCache(16384, 16 * MIB, _counts_bytes)


def _term_counts(texts: list[str]) -> list[Counter[str]]:
    return [Counter(terms(t)) for t in texts]


def bm25_scores(query: str, texts: Sequence[str], *, k1: float = K1, b: float = B) -> list[float]:
    """Okapi BM25 score of each text for ``query`` (0.0 when no query term occurs)."""
    docs = _TERM_COUNTS.get_many(list(texts), _term_counts)
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
