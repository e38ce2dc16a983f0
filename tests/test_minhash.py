"""docsan's MinHash and LSH parameters are datasketch's values, computed without importing datasketch (and SciPy)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import xxhash
from datasketch import MinHash, MinHashLSH

from docsan.text.minhash import band_keys, gauss_legendre, lsh_params, signatures
from docsan.text.shingles import shingle


def _datasketch(sets: list[list[str]], num_perm: int, seed: int) -> np.ndarray:
    data = [[s.encode("utf-8", "surrogatepass") for s in group] for group in sets]
    return np.array(
        [m.hashvalues for m in MinHash.bulk(data, num_perm=num_perm, seed=seed, hashfunc=xxhash.xxh32_intdigest)]
    )


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (64, 7), (16, 1)])
def test_signatures_equal_datasketch_on_random_sets(num_perm: int, seed: int) -> None:
    rng = random.Random(seed)
    # Sets of every size up to past one chunk boundary, CJK and lone surrogates included.
    sets = [
        ["".join(rng.choice("abc xyz中文\udc80") for _ in range(rng.randint(1, 9))) for _ in range(rng.randint(1, 400))]
        for _ in range(120)
    ]
    assert (signatures(sets, num_perm, seed) == _datasketch(sets, num_perm, seed)).all()


def test_signatures_equal_datasketch_on_corpus_shingles(corpus) -> None:
    from docsan.extract import load

    doc = load(corpus / "zh_resume_near_duplicate_paragraphs_2p.pdf")
    sets = [sorted(shingle(b.text).shingles) for p in doc.pages for b in p.blocks if b.text.strip()]
    assert (signatures(sets, 128, 1) == _datasketch(sets, 128, 1)).all()


def test_an_empty_set_has_the_empty_signature() -> None:
    assert (signatures([[]], 8, 1) == np.uint32(0xFFFFFFFF)).all()


@pytest.mark.parametrize("num_perm", [16, 32, 64, 128, 256])
def test_lsh_parameters_equal_datasketch(num_perm: int) -> None:
    for threshold in np.round(np.arange(0.05, 1.0, 0.05), 2):
        try:
            lsh = MinHashLSH(threshold=float(threshold), num_perm=num_perm)
        except ValueError:  # datasketch refuses a single band
            continue
        assert lsh_params(float(threshold), num_perm) == (lsh.b, lsh.r), threshold


@pytest.mark.parametrize("n", [1, 2, 3, 9, 33, 65, 129, 513])
def test_gauss_legendre_is_leggauss(n: int) -> None:
    nodes, weights = gauss_legendre(n)
    expected_nodes, expected_weights = np.polynomial.legendre.leggauss(n)
    assert np.abs(nodes - expected_nodes).max() <= 1e-15
    assert np.abs(weights - expected_weights).max() <= 1e-11 * expected_weights.max()
    # Exact for polynomials up to degree 2n - 1.
    for degree in (0, 2 * n - 2, 2 * n - 1):
        assert abs(weights @ nodes**degree - (1 - (-1) ** (degree + 1)) / (degree + 1)) < 1e-12


def test_similar_signatures_share_band_keys_and_different_ones_do_not() -> None:
    a = shingle("the quick brown fox jumps over the lazy dog near the river bank today").shingles
    b = shingle("the quick brown fox jumps over the lazy dog near the river bank now").shingles
    c = shingle("an entirely different sentence about tax forms and filing deadlines").shingles
    sig = signatures([sorted(a), sorted(b), sorted(c)], 128, 1)
    bands, rows = lsh_params(0.7, 128)
    keys = [set(band_keys(s, bands, rows)) for s in sig]
    assert keys[0] & keys[1] and not keys[0] & keys[2]


@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("n", [0, 1, 2, 40, 127, 128, 300])
def test_band_index_candidates_are_the_signatures_sharing_a_band(
    n: int, collide: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The buckets are numbered by a hash of each band (docsan.text.banding), checked: the candidates are exact.

    ``collide``: a multiplier of 1 hashes a band to its band number plus the sum of its values, so different
    bands collide, and the exact numbering takes over.
    """
    from docsan.text import banding
    from docsan.text.banding import BandIndex

    exact_ids, exact = banding._exact_ids, []
    if collide:
        monkeypatch.setattr(banding, "_MULTIPLIER", np.uint64(1))
        monkeypatch.setattr(banding, "_exact_ids", lambda *a: exact.append(a) or exact_ids(*a))
    bands, rows = lsh_params(0.6, 128)
    rng = np.random.default_rng(n)
    # Values from a tiny alphabet, so that bands often agree, also one band of a signature with another band of
    # another one: those must not be candidates (a bucket is a band and its values).
    sig = rng.integers(0, 2, size=(n, 128), dtype=np.uint64)
    sig[:, rows:] |= rng.integers(0, 2, size=(n, 128 - rows), dtype=np.uint64) << np.uint64(40)
    index = BandIndex(sig, bands, rows)
    for i in range(n):
        shared = {
            j
            for j in range(i)
            if any((sig[i, k * rows : (k + 1) * rows] == sig[j, k * rows : (k + 1) * rows]).all() for k in range(bands))
        }
        assert index.query(i) == shared, i
        index.insert(i)
    if n >= 2:  # where two signatures' bands meet, a sum collides: the exact numbering ran
        assert bool(exact) == collide
