"""Chat-history trimming: system and latest turn kept, whole turns, pairs together, never silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_budget_fit import SCRIPTS

from docsan.budget.chat_trim import count_messages_default, fit_messages
from docsan.budget.tokenizer import Tokenizer
from docsan.chat.shape import render_messages
from docsan.config import ExtractConfig
from docsan.errors import ConfigError
from docsan.extract import load
from docsan.extract.chat import chat_document
from docsan.stages import build_stage


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.load()


@pytest.fixture(scope="module")
def paragraphs(corpus: Path) -> dict[str, list[str]]:
    """Real paragraphs, Chinese and English, to paste into chat messages."""
    out = {}
    for key, name in (("zh", "zh_dbdq_2018q1_report_22p.pdf"), ("en", "dmca_copyright_office_summary_18p.pdf")):
        doc = load(corpus / name, ExtractConfig(ocr="never"))
        out[key] = [b.text for _, b in doc.blocks() if len(b.text) > 40]
    return out


def history(paras: list[str], turns: int = 10) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "You answer questions about the pasted report."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": "\n\n".join(paras[3 * i : 3 * i + 3]) + f"\n\nQuestion {i}?"})
        msgs.append({"role": "assistant", "content": f"Answer {i}: " + paras[3 * i + 2][:200]})
    msgs.append({"role": "user", "content": "最后的问题：营业收入是多少？ What is the final answer?"})
    return msgs


def deepseek_template_count(tok: Tokenizer):
    """Exact count of a DeepSeek-style template, as the runner would pass it."""

    def count(messages: list[dict[str, str]]) -> int:
        parts = ["<｜begin▁of▁sentence｜>"]
        for m in messages:
            if m["role"] == "system":
                parts.append(m["content"])
            elif m["role"] == "user":
                parts.append("<｜User｜>" + m["content"])
            else:
                parts.append("<｜Assistant｜>" + m["content"] + "<｜end▁of▁sentence｜>")
        parts.append("<｜Assistant｜>")
        return tok.count("".join(parts))

    return count


def check_rules(msgs: list[dict[str, str]], fit, count, budget: int) -> None:
    assert count(fit.messages) <= budget
    assert fit.tokens == count(fit.messages) <= budget
    assert fit.indices[0] == 0 and fit.messages[0]["role"] == "system"  # system kept
    assert fit.indices[-1] == len(msgs) - 1  # the latest user turn kept
    rest = fit.indices[1:]
    assert rest == list(range(rest[0], len(msgs)))  # a suffix: the oldest went first
    assert msgs[rest[0]]["role"] == "user"  # pairs together: no answer without its question
    dropped_pages = {c.page for c in fit.changes}
    for i in range(1, rest[0]):  # every dropped message is reported
        assert i + 1 in dropped_pages


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("budget", [300, 1000])
def test_recent_drops_the_oldest_turns_first(
    paragraphs: dict[str, list[str]], tok: Tokenizer, lang: str, budget: int
) -> None:
    msgs = history(paragraphs[lang])
    count = count_messages_default(tok)
    assert count(msgs) > budget
    fit = fit_messages(msgs, budget, tok, strategy="recent")
    check_rules(msgs, fit, count, budget)
    # Kept messages come back exactly as given.
    assert all(m is msgs[i] for m, i in zip(fit.messages, fit.indices, strict=True))


def test_exact_template_count_from_the_runner(paragraphs: dict[str, list[str]], tok: Tokenizer) -> None:
    msgs = history(paragraphs["zh"])
    count = deepseek_template_count(tok)
    fit = fit_messages(msgs, 800, tok, count_messages=count, strategy="recent")
    check_rules(msgs, fit, count, 800)
    assert fit.tokens >= 0.5 * 800


def test_latest_message_larger_than_budget_is_cut_not_dropped(paragraphs: dict[str, list[str]], tok: Tokenizer) -> None:
    pasted = "\n\n".join(paragraphs["zh"])  # the whole quarterly report pasted into one message
    msgs = [
        {"role": "system", "content": "Be concise."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": pasted},
    ]
    count = count_messages_default(tok)
    fit = fit_messages(msgs, 1000, tok)
    assert fit.indices == [0, 3]
    assert count(fit.messages) <= 1000 and fit.tokens >= 0.9 * 1000
    latest = fit.messages[-1]["content"]
    assert latest and pasted.startswith(latest.split("\n\n")[0])
    # Every paragraph that did not make it is in the report.
    kept = set(latest.split("\n\n"))
    reported = {c.text for c in fit.changes if c.page == 4}
    for para in paragraphs["zh"]:
        assert para in kept or para in reported or any(c.replacement for c in fit.changes if c.text == para)


def test_budget_stage_on_a_chat_document(paragraphs: dict[str, list[str]], tok: Tokenizer, tmp_path: Path) -> None:
    msgs = history(paragraphs["en"])
    doc = chat_document(json.dumps(msgs, ensure_ascii=False).encode(), "chat.json")
    result = build_stage("budget", {"budget": 700})(doc)
    out = render_messages(result.document)
    assert count_messages_default(tok)(out) <= 700
    assert out[0]["role"] == "system" and out[-1] == msgs[-1]
    assert result.stats["turns_dropped"] > 0


def test_budget_smaller_than_the_message_overheads(tok: Tokenizer) -> None:
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    with pytest.raises(ConfigError, match="too small"):
        fit_messages(msgs, 3, tok)


def test_turns_before_the_first_user_message_form_their_own_turn(tok: Tokenizer) -> None:
    msgs = [
        {"role": "assistant", "content": "Welcome! " * 50},
        {"role": "user", "content": "First question about the report."},
        {"role": "assistant", "content": "First answer."},
        {"role": "tool", "content": "tool output " * 5},
        {"role": "user", "content": "Second question."},
    ]
    fit = fit_messages(msgs, 60, tok)
    assert fit.indices == [1, 2, 3, 4]  # the greeting went; the tool output stays with its turn


ROLES = ["user", "assistant", "tool", "system"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    roles=st.lists(st.sampled_from(ROLES), min_size=1, max_size=12),
    contents=st.lists(st.text(alphabet="".join(SCRIPTS.values()) + "。. \n", max_size=300), min_size=12, max_size=12),
    budget=st.integers(1, 500),
)
def test_random_histories_never_exceed_the_budget(roles: list[str], contents: list[str], budget: int) -> None:
    """Random histories in several scripts: within budget by the counter's count, or a clear error."""
    tok = Tokenizer.load()
    msgs = [{"role": r, "content": c} for r, c in zip(roles, contents, strict=False)]
    try:
        fit = fit_messages(msgs, budget, tok)
    except ConfigError as err:
        assert "too small" in str(err)
        return
    count = count_messages_default(tok)
    assert fit.tokens == count(fit.messages) <= budget
    kept_roles = [msgs[i]["role"] for i in fit.indices]
    assert kept_roles.count("system") == roles.count("system")
    if "user" in roles:
        assert max(i for i, r in enumerate(roles) if r == "user") in fit.indices
