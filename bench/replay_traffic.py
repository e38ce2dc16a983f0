"""The incident's traffic, generated from a seed: what the replay (bench/replay.py) and the load run send.

The seed's monitoring (../shared/seed/) saw: mean context 8k+ tokens (baseline 1.5k), 35 % of
requests over 4k, request bodies up to 60 % repeated text, OCR'd PDFs pasted raw (control
characters, collapsed table cells ``地址| | | | |地址``, running headers and footers),
append-only chat histories re-sent in full, ``max_tokens`` missing (old SDKs) or 0 (some Android
phones), and no priority scheduling. Each request here:

- is an append-only history of 20-300 turns (bench/chat_histories.py: real corpus text, re-pastes,
  tool calls, facts planted at every depth, the latest question asking for one); most are short
  chats with a long tail of document sessions, so the mix has the incident's mean and tail;
- has its pasted pages turned into raw PDF text (:func:`raw_pdf`): a running header, a footer and
  a page number on each page, pages joined by form feeds, control and zero-width characters,
  and a collapsed table row;
- has ``max_tokens`` missing in 30 %, 0 in 5 %, else 16-32 (answers kept short for a CPU engine);
- is priority (``x-docsan-priority: high``) in 10 %.

Everything is drawn from one ``random.Random(seed)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bench import chat_histories, noise

MISSING_MAX_TOKENS = 0.30
ZERO_MAX_TOKENS = 0.05
PRIORITY = 0.10
MAX_TOKENS_CHOICES = (16, 24, 32)
# Share of the conversations that are document sessions (many pastes); the others are chats.
DOCUMENT_SESSIONS = 0.3


@dataclass(slots=True)
class ReplayRequest:
    id: str
    body: dict[str, Any]
    headers: dict[str, str]
    # The planted fact the latest question asks for, as it must appear in what reaches the model.
    answer: str
    turns: int
    # Set when a 400 is the right answer (max_tokens 0): docsan refuses it by design, vLLM rejects it too.
    by_design: str | None = None
    # Filled by measure(): the raw prompt with the served model's template, and the repeated share of the body.
    raw_tokens: int = 0
    repeated_share: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def priority(self) -> bool:
        return self.headers.get("x-docsan-priority") == "high"


def raw_pdf(paragraphs: list[str], rng: random.Random, lang: str, page: int) -> str:
    """Pasted paragraphs as an OCR'd PDF's text layer: furniture on every page, form feeds, junk characters."""
    style = noise.STYLES[lang]
    pages = max(1, len(paragraphs) // 2)
    out = []
    for k in range(pages):
        body = paragraphs[k * 2 : (k + 1) * 2] if k < pages - 1 else paragraphs[k * 2 :]
        junk = [_sprinkle(p, rng) for p in body]
        if rng.random() < 0.5:
            label = rng.choice(style.labels)
            junk.append(f"{label}| | | | |{label}")
        number = style.page_number.format(page=page + k, pages=page + pages + 3)
        out.append("\n".join([style.header, "\n\n".join(junk), style.footer, number]))
    return noise.PAGE_BREAK.join(out)


def _sprinkle(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        pos = rng.randrange(len(chars) + 1)
        chars.insert(pos, rng.choice(noise.CONTROL + noise.ZERO_WIDTH))
    return "".join(chars)


def _rawify(messages: list[dict[str, Any]], rng: random.Random, lang: str) -> None:
    """Pastes (user messages of several paragraphs) become raw PDF text; the question after them stays."""
    page = 1
    for m in messages:
        if m["role"] != "user" or not isinstance(m["content"], str) or "\n\n" not in m["content"]:
            continue
        *paras, question = m["content"].split("\n\n")
        if len(paras) >= 2 and rng.random() < 0.5:
            m["content"] = raw_pdf(paras, rng, lang, page) + "\n\n" + question
            page += len(paras) // 2 + 1


def _vary_answers(messages: list[dict[str, Any]], lang: str) -> None:
    """An answer that quotes what an earlier answer already quoted says something short of its own instead, and a
    short question asked again names its point: chat_histories' answers quote their turn's first sentence, which
    repeats whenever a page is pasted again, and its questions come from a few; both would push the repeated
    share past the incident's 60 %. (The latest question, the one about a planted fact, is never repeated.)"""
    quoted: set[str] = set()
    for k, m in enumerate(messages):
        if m["role"] not in ("assistant", "user") or not isinstance(m.get("content"), str) or "\n\n" in m["content"]:
            continue
        if m["content"] in quoted and m["role"] == "assistant":
            m["content"] = f"好的，第{k}条已记录。" if lang == "zh" else f"Noted, that is point {k} of our notes."
        elif m["content"] in quoted:  # the same short question asked again: asked about another point
            m["content"] = f"关于第{k}点：{m['content']}" if lang == "zh" else f"About point {k}: {m['content']}"
        quoted.add(m["content"])


def generate(seed: int, n: int, *, model: str) -> list[ReplayRequest]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lang = "en" if rng.random() < 0.6 else "zh"
        document = rng.random() < DOCUMENT_SESSIONS
        # Mostly short chats, a tail of long sessions: 20 turns at the least, 300 at the most.
        turns = 20 + round(280 * rng.random() ** (2 if document else 5))
        h = chat_histories.build(rng.randrange(1 << 30), turns, lang, paste_share=0.25 if document else 0.0)
        _vary_answers(h.messages, lang)
        _rawify(h.messages, rng, lang)
        body: dict[str, Any] = {"model": model, "messages": h.messages, "temperature": 0, "user": f"replay-{i}"}
        r = rng.random()
        by_design = None
        if r < ZERO_MAX_TOKENS:
            body["max_tokens"] = 0
            by_design = "max_tokens 0"
        elif r >= ZERO_MAX_TOKENS + MISSING_MAX_TOKENS:
            body["max_tokens"] = rng.choice(MAX_TOKENS_CHOICES)
        headers = {"x-docsan-priority": "high"} if rng.random() < PRIORITY else {}
        out.append(ReplayRequest(f"replay-{i}", body, headers, h.asked.answer, turns, by_design))
    return out


def measure(requests: list[ReplayRequest], count_messages: Any) -> None:
    """Fill in each request's raw prompt tokens (``count_messages``: the served template's exact count) and the
    share of its text that repeats text earlier in the same body (by paragraph)."""
    for r in requests:
        r.raw_tokens = count_messages(r.body["messages"])
        r.repeated_share = repeated_share(r.body["messages"])


def repeated_share(messages: list[dict[str, Any]]) -> float:
    seen: set[str] = set()
    total = repeated = 0
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str):
            continue
        for para in content.replace(noise.PAGE_BREAK, "\n").split("\n"):
            key = noise.squash(para)
            if not key:
                continue
            total += len(key)
            if key in seen:
                repeated += len(key)
            seen.add(key)
    return repeated / total if total else 0.0


def profile(requests: list[ReplayRequest]) -> dict[str, Any]:
    tokens = sorted(r.raw_tokens for r in requests)
    n = len(tokens)
    return {
        "requests": n,
        "tokens_mean": round(sum(tokens) / n),
        "tokens_p50": tokens[n // 2],
        "tokens_max": tokens[-1],
        "over_4k_share": round(sum(t > 4096 for t in tokens) / n, 3),
        "over_8k_share": round(sum(t > 8192 for t in tokens) / n, 3),
        "repeated_share_mean": round(sum(r.repeated_share for r in requests) / n, 3),
        "repeated_share_max": round(max(r.repeated_share for r in requests), 3),
        "turns_min": min(r.turns for r in requests),
        "turns_max": max(r.turns for r in requests),
        "max_tokens_missing_share": round(sum("max_tokens" not in r.body for r in requests) / n, 3),
        "max_tokens_zero_share": round(sum(r.body.get("max_tokens") == 0 for r in requests) / n, 3),
        "priority_share": round(sum(r.priority for r in requests) / n, 3),
        "body_bytes_max": max(len(str(r.body).encode()) for r in requests),
    }
