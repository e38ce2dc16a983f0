"""Chat histories: what the latest question needs survives, and what one request costs a warm process.

Part 1, recall and reduction. Histories from bench/chat_histories.py (append-
only, re-pasted documents, tool calls, planted facts at every depth, a
question about one of them, often an early one), 20-300 turns, English and
Chinese. Each goes through docsan's library call (``ChatCleaner.clean``:
sanitize, then trim to the budget) once with ``strategy="recent"`` (the oldest
turns dropped first: docsan before) and once with ``strategy="query"`` (the
default). Reported: the share of histories whose asked fact survives, the share
of all planted facts that survive, and the token reduction (1 - tokens out /
tokens in, DeepSeek-V4 tokens of the messages' text plus 5 per message).
Target (issue 15): >= 99 % asked facts at >= 60 % reduction.

Part 2, per-request cost in a warm process (imports done, tokenizers loaded;
the fastest of several runs, as in the other micro-benchmarks):

- a short chat (system + question) and an 8-message chat: the shared request path
  (``RequestPath.chat``: ``ChatCleaner.clean``, control tokens, the budget, the count
  with the served model's chat template, SmolLM2's, and the routing decision);
- a 300-turn history, first seen (docsan's per-text caches emptied) and
  re-sent with one more turn (what an append-only client does: caches warm);
- an 8k-token document with a question: ``RequestPath.document`` (cleaned, control
  tokens escaped for the served model, the document prompt fitted to a 4,000-token
  budget with the template, counted, routed): what ``ask`` does after reading the file.

Baseline, same run: the one step no gateway can skip, counting the final
prompt with the chat template (``ChatTokenizer.prompt_ids``).
Target (issue 15): <= 50 ms for a short chat, <= 150 ms for an 8k-token document.
Run: ``python bench/bench_chat.py [--quick] [--only=recall|--only=cost]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import chat_histories, common  # noqa: E402
from docsan.api import ChatCleaner  # noqa: E402
from docsan.budget import chat_trim as budget_chat  # noqa: E402
from docsan.budget import rank  # noqa: E402
from docsan.budget.chat_trim import count_messages_default  # noqa: E402
from docsan.budget.tokenizer import Tokenizer  # noqa: E402
from docsan.chat.shape import message_text  # noqa: E402
from docsan.config import Config  # noqa: E402
from docsan.extract.text import text_document  # noqa: E402
from docsan.runner.embedded_model import embedded_model_dir  # noqa: E402
from docsan.runner.prompt import build_messages  # noqa: E402
from docsan.runner.request import RequestOptions, RequestPath  # noqa: E402
from docsan.stages import neardup  # noqa: E402

BUDGET = 8000


def recall(n: int, budget: int, tok: Tokenizer) -> dict[str, object]:
    cleaner = ChatCleaner(tokenizer=tok)
    count = count_messages_default(tok)
    hs = chat_histories.histories(n, seed=15)
    tokens_in = [count(h.messages) for h in hs]
    out: dict[str, object] = {
        "histories": n,
        "turns_min_max": [min(h.turns for h in hs), max(h.turns for h in hs)],
        "messages_max": max(len(h.messages) for h in hs),
        "budget": budget,
        "tokens_in_mean": round(statistics.mean(tokens_in)),
        "share_over_4k": round(sum(t > 4000 for t in tokens_in) / n, 3),
        "planted_facts": sum(len(h.facts) for h in hs),
    }
    for strategy in ("recent", "query"):
        asked = kept = tokens_out = 0
        by_depth = {"first_third": [0, 0], "rest": [0, 0]}
        for h in hs:
            result = cleaner.clean(h.messages, budget=budget, strategy=strategy)
            text = "\n".join(message_text(m) for m in result.messages)
            hit = h.asked.answer in text
            asked += hit
            kept += sum(f.answer in text for f in h.facts)
            tokens_out += count(result.messages)
            depth = "first_third" if h.asked.turn < h.turns / 3 else "rest"
            by_depth[depth][0] += hit
            by_depth[depth][1] += 1
        out[strategy] = {
            "asked_fact_kept": round(asked / n, 4),
            "asked_fact_kept_first_third": round(by_depth["first_third"][0] / max(1, by_depth["first_third"][1]), 4),
            "all_planted_facts_kept": round(kept / int(out["planted_facts"]), 4),  # type: ignore[call-overload]
            "token_reduction": round(1 - tokens_out / sum(tokens_in), 4),
        }
    return out


def _clear_caches() -> None:
    rank._TERM_COUNTS.clear()
    neardup._SHINGLES.clear()
    neardup._SIGNATURES.clear()
    budget_chat._TOKENS.clear()


def cost(tok: Tokenizer) -> dict[str, object]:
    # The request path ask and serve share (docsan.runner.request): the served model's tokenizer for estimates
    # and cuts, its template for the count, the routing decision.
    path = RequestPath(Config(), model_dir=embedded_model_dir())
    chat_tok = path.chat_tokenizer

    def chat_request(messages: list[dict]) -> None:
        path.chat(messages, RequestOptions(max_tokens=256, budget_tokens=BUDGET))

    short = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France? Answer in one word."},
    ]
    eight = chat_histories.build(8, 3, "en").messages[:8]
    long = chat_histories.build(3, 300, "en").messages
    longer = [*long, {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "And the next one?"}]
    out: dict[str, object] = {"served_template": chat_tok.name, "budget": BUDGET}
    for name, msgs in (("short_chat", short), ("eight_message_chat", eight)):
        chat_request(msgs)
        seconds = common.best_of(lambda m=msgs: chat_request(m))
        base = common.best_of(lambda m=msgs: chat_tok.prompt_ids(m))
        out[name] = {"ms": round(seconds * 1000, 2), "template_count_ms": round(base * 1000, 2)}
    first = []
    for _ in range(3):
        _clear_caches()
        t0 = time.perf_counter()
        chat_request(long)
        first.append(time.perf_counter() - t0)
    chat_request(long)
    resent = common.best_of(lambda: chat_request(longer), 3)
    count = count_messages_default(tok)
    out["history_300_turns"] = {
        "messages": len(long),
        "tokens": count(long),
        "first_seen_ms": round(min(first) * 1000, 1),
        "resent_plus_one_turn_ms": round(resent * 1000, 1),
        "template_count_of_whole_history_ms": round(common.best_of(lambda: chat_tok.prompt_ids(long), 3) * 1000, 1),
    }
    question = "How long was the shipment delay to Ningbo?"
    paras = [p for run in chat_histories._corpus("en") for p in run]
    text, n = "", 0
    while tok.count(text) < 8000:
        text += paras[n % len(paras)] + "\n\n"
        n += 1

    def document_request() -> None:
        doc = text_document(text.encode(), "<8k>")
        path.document(doc, question, RequestOptions(max_tokens=256, budget_tokens=4000))

    document_request()
    fitted_prompt = build_messages(text[: len(text) // 2], question)
    out["document_8k_tokens"] = {
        "tokens": tok.count(text),
        "ms": round(common.best_of(document_request) * 1000, 1),
        "template_count_ms": round(common.best_of(lambda: chat_tok.prompt_ids(fitted_prompt)) * 1000, 2),
    }
    return out


def run(quick: bool = False, parts: tuple[str, ...] = ("recall", "cost")) -> dict[str, object]:
    tok = Tokenizer.load()
    out: dict[str, object] = {}
    if "recall" in parts:
        out["recall"] = recall(20 if quick else 120, BUDGET, tok)
    if "cost" in parts:
        out["per_request"] = cost(tok)
    return out


if __name__ == "__main__":
    only = tuple(a.removeprefix("--only=") for a in sys.argv if a.startswith("--only="))
    print(json.dumps(run(quick="--quick" in sys.argv, parts=only or ("recall", "cost")), ensure_ascii=False, indent=2))
