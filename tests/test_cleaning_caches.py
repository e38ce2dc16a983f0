"""The caches kept across requests (neardup's shingles and signatures, the chat budget's token and term counts):
a re-sent history hits them, what they return is what computing fresh gives, and cleaning's output is the same
whether they hold everything, nothing, or were just cleared."""

from __future__ import annotations

import json

import numpy as np
import pytest

from docsan.budget import chat_trim, rank
from docsan.extract.chat import chat_document
from docsan.model import Document
from docsan.render import render_text
from docsan.report import StageResult
from docsan.stages import build_stage, neardup
from docsan.stages.neardup import NearDuplicates, Unit
from docsan.text import minhash
from tests.test_neardup import PARA_EN, PARA_EN_EDITED, PARA_EN_OTHER, PARA_ZH

STAGE = NearDuplicates()
CACHES = (neardup._SHINGLES, neardup._SIGNATURES, chat_trim._TOKENS, rank._TERM_COUNTS)
QUESTION = "Which contracts did the committee ask about, and what does the report say about the tunnel?"


@pytest.fixture(autouse=True)
def cold_caches():
    for cache in CACHES:
        cache.clear()
    yield
    for cache in CACHES:
        cache.clear()


def _messages(turns: int) -> list[dict[str, str]]:
    """A chat history of ``turns`` question-answer pairs, with pastes and a re-paste, and a last question."""
    pastes = [f"{PARA_EN}\n\n{PARA_ZH}", PARA_EN_OTHER, f"{PARA_EN_EDITED}\n\nIs this the same?", PARA_ZH]
    out = [{"role": "system", "content": "You answer questions about the pasted report."}]
    for i in range(turns):
        out.append({"role": "user", "content": f"{pastes[i % len(pastes)]}\n\nQuestion {i}: what changed here?"})
        out.append({"role": "assistant", "content": f"Answer {i}: the report says the spending was reviewed again."})
    out.append({"role": "user", "content": QUESTION})
    return out


def _chat(messages: list[dict[str, str]]) -> Document:
    """Parsed as the gateway parses a request body: every text a new string object."""
    return chat_document(json.dumps({"messages": messages}, ensure_ascii=False).encode(), "chat.json")


def _counting_signatures(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    """The shingle sets whose signatures are computed from now on (not taken from the cache)."""
    computed: list[frozenset[str]] = []
    fresh = minhash.signatures

    def counted(sets, num_perm, seed):
        computed.extend(sets)
        return fresh(sets, num_perm, seed)

    monkeypatch.setattr(minhash, "signatures", counted)
    return computed


def test_resent_history_computes_only_its_new_messages_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    computed = _counting_signatures(monkeypatch)
    history = _messages(3)
    STAGE(_chat(history))
    assert computed
    computed.clear()
    ask = "Could you compare this plan with the one from last year, please?"
    new = {"role": "user", "content": f"{PARA_EN_OTHER} Also the hiring plan.\n\n{ask}"}
    doc = _chat([*history[:-1], history[-1], {"role": "assistant", "content": "It is."}, new])
    STAGE(doc)
    # The new user message: its two paragraphs and their union (the message); the assistant's one-paragraph
    # answer is short of min_chars. Everything else was kept from the first request.
    message = STAGE._message_units(doc)[-1]
    assert message.sources == tuple(b.text for b in doc.pages[-1].blocks)
    assert sorted(map(sorted, computed)) == sorted(
        map(sorted, [message.sh.shingles, *(p.shingles for p in message.parts)])
    )


def test_cached_signatures_are_the_fresh_ones() -> None:
    doc = _chat(_messages(4))
    units = STAGE._message_units(doc) + STAGE.units(doc)
    assert any(u.sources for u in units) and any(not u.sources for u in units)
    for _ in range(2):  # cold, then every row from the cache
        rows, matrix = STAGE.signatures(units)
        long_units = [u for u in units if u.sh.has_ngrams]
        fresh = minhash.signatures([u.sh.shingles for u in long_units], STAGE.num_perm, STAGE.seed)
        assert np.array_equal(matrix, fresh) and [rows[id(u)] for u in long_units] == list(range(len(long_units)))
    assert len(neardup._SIGNATURES) == len({u.sources or u.text for u in long_units})


def test_a_message_and_a_block_of_the_same_text_keep_their_own_signatures() -> None:
    # One text, two shingle sets: a message of two paragraphs has no 3-gram across their break, a block holding
    # both has. A signature keyed by the text alone would give the second the first's.
    text = f"{PARA_EN}\n\n{PARA_EN_OTHER}"
    parts = (STAGE.shingled(PARA_EN), STAGE.shingled(PARA_EN_OTHER))
    message = Unit(0, [0, 1], text, neardup._union(parts), "message 1", parts=parts, sources=(PARA_EN, PARA_EN_OTHER))
    block = Unit(1, [0], text, STAGE.shingled(text), "message 2")
    assert message.sh.shingles != block.sh.shingles
    for _ in range(2):
        _, matrix = STAGE.signatures([message, block])
        fresh = minhash.signatures([message.sh.shingles, block.sh.shingles], STAGE.num_perm, STAGE.seed)
        assert np.array_equal(matrix, fresh) and not np.array_equal(matrix[0], matrix[1])


def test_other_shingle_sizes_do_not_share_signatures() -> None:
    doc = _chat(_messages(2))
    words4 = NearDuplicates(word_ngram=4)
    for stage in (STAGE, words4, STAGE):
        units = stage.units(doc)
        _, matrix = stage.signatures(units)
        fresh = minhash.signatures([u.sh.shingles for u in units if u.sh.has_ngrams], stage.num_perm, stage.seed)
        assert np.array_equal(matrix, fresh)


def _clean(messages: list[dict[str, str]]) -> tuple[str, list, list]:
    """neardup, then the chat budget (query strategy: BM25 ranks the turns, the tokenizer counts them)."""
    first: StageResult = STAGE(_chat(messages))
    fitted = build_stage("budget", {"budget": 300})(first.document)
    return render_text(fitted.document), first.changes, fitted.changes


def test_cleaning_is_the_same_with_full_empty_or_no_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = _messages(6)
    cold = _clean(messages)
    assert cold[2], "the budget trimmed nothing: the token and term caches were not exercised"
    assert all(len(cache) for cache in CACHES)
    warm = _clean(messages)
    for cache in CACHES:
        cache.clear()
        monkeypatch.setattr(cache, "max_bytes", 0)  # every entry over the bound: none kept
    uncached = _clean(messages)
    assert not any(len(cache) for cache in CACHES)
    assert cold == warm == uncached


def test_a_long_message_over_the_bound_is_cleaned_and_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    STAGE(_chat([{"role": "user", "content": PARA_EN}]))
    assert len(neardup._SHINGLES) == 1
    bound = 3 * neardup._SHINGLES.bytes  # room for two more paragraphs like it
    monkeypatch.setattr(neardup._SHINGLES, "max_bytes", bound)
    long_text = " ".join(f"{PARA_EN_OTHER} Item {i}." for i in range(200))  # about 40,000 characters
    result = STAGE(_chat([{"role": "user", "content": PARA_EN}, {"role": "user", "content": long_text}]))
    assert render_text(result.document).count("Item 199.") == 1
    assert len(neardup._SHINGLES) == 1  # the short one stays; the long one was not kept
    assert neardup._SHINGLES.bytes <= bound
