"""Chat histories shaped like the incident's traffic, with planted facts and a question about one of them.

The incident's clients were append-only: every request re-sent the whole
history, users pasted documents (and pasted them again), and the question in
the latest turn often asked about something said long before. A history here:

- a system message, then ``turns`` turns of a user message and the answer;
- user messages paste 2-5 consecutive paragraphs of a real corpus PDF (the
  shared corpus' text layer, Chinese and English), re-paste an earlier paste
  word for word with a new question, or ask a short question; some turns
  call a tool whose result is more corpus text;
- answers quote a sentence of what they answer;
- facts (an access code, a deadline, a delay, a contact...) are planted at
  every depth, in pasted text, in plain user messages and in tool results,
  with distractors: the same kind of fact about another place or project;
- the latest user message asks for one planted fact, more often an early one,
  in words that differ from the fact's (``commenting ... deadline`` for
  ``Comments ... are due by``; ``shipment delay`` for ``shipments were
  delayed``), some linked to it only by inflected forms.

Everything is drawn from one ``random.Random(seed)``: the same seed gives the
same histories.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import Any

import regex

from bench import common
from docsan.api import clean_file
from docsan.config import Config

_CJK = regex.compile(r"\p{Han}")
_LETTER = regex.compile(r"\p{L}")


@dataclass(frozen=True, slots=True)
class Fact:
    """A planted fact: the sentence, the question that asks for it, the answer string that must survive."""

    sentence: str
    question: str
    answer: str
    turn: int  # the 0-based turn it was planted in


@dataclass(slots=True)
class History:
    messages: list[dict[str, Any]]
    facts: list[Fact]
    asked: Fact
    lang: str
    turns: int
    pastes: int = 0
    repastes: int = 0


# (fact sentence, question): slot names in braces; the answer is the slot named first in ANSWER.
EN_FACTS = (
    (
        "For the record, the access code for the {place} warehouse was changed to {code} last week.",
        "What is the access code of the {place} warehouse now?",
    ),
    ("Comments on the {project} draft are due by {date}.", "When is the comment deadline for the {project} draft?"),
    (
        "The shipments to {place} were delayed by {days} days because of the strike.",
        "How long was the shipment delay to {place}?",
    ),
    (
        "Our contact at {org} is {person}, reachable on extension {ext}.",
        "Which extension do I call for our contact at {org}?",
    ),
    (
        "The {project} budget was finally approved at {amount} after the second review.",
        "What budget did the {project} project get approved?",
    ),
    ("Invoice {code} from {org} was paid on {date}.", "On which date was invoice {code} paid?"),
    # Only inflected forms link these questions to their facts ("items"/"item",
    # "inspected"/"inspection", "Comments"/"commenting"): what stemming is for.
    (
        "The {item}s we inspected last month failed {days} times in total.",
        "How many times did the {item} fail the inspection?",
    ),
    (
        "Comments on the redesigned {item}s are due by {date}.",
        "What is the deadline for commenting on the {item} redesign?",
    ),
)
ZH_FACTS = (
    ("顺便说一下，{zplace}仓库的门禁密码已经改为{code}。", "{zplace}仓库现在的门禁密码是多少？"),
    ("{zproject}项目的评审意见须在{zdate}之前提交。", "{zproject}项目评审意见的截止日期是哪天？"),
    ("发往{zplace}的货物因为罢工延误了{days}天。", "发往{zplace}的货物延误了几天？"),
    ("{zorg}的联系人是{zperson}，分机号{ext}。", "{zorg}联系人的分机号是多少？"),
    ("{zproject}项目的预算最终批准为{zamount}。", "{zproject}项目批准的预算是多少？"),
)
ANSWER = ("code", "date", "days", "ext", "amount", "zdate", "zamount")

PLACES = ("Hangzhou", "Ningbo", "Tampere", "Leipzig", "Rosario", "Daegu", "Porto", "Tulsa", "Kraków", "Durban")
ITEMS = ("valve", "pallet", "forklift", "battery", "sensor", "trailer", "gasket", "bracket", "hinge", "pump")
PROJECTS = ("Aurora", "Basalt", "Cobalt", "Dynamo", "Ember", "Fjord", "Granite", "Helix", "Indigo", "Juniper")
ORGS = ("Norbeck Freight", "Almaty Steelworks", "Veldt Insurance", "Quillon Labs", "Marrow & Sons", "Oriel Bank")
PERSONS = ("Dana Whitfield", "Tomasz Orlik", "Priya Raman", "Kwame Asante", "Lucía Ferrer", "Jonas Berg")
ZPLACES = ("杭州", "宁波", "苏州", "合肥", "昆明", "大连", "厦门", "洛阳", "珠海", "兰州")
ZPROJECTS = ("北极星", "青松", "长河", "远航", "磐石", "启明", "飞鸿", "晨曦", "星火", "鲲鹏")
ZORGS = ("华东物流", "北方钢铁", "南海保险", "西部实验室", "东方银行", "中原机械")
ZPERSONS = ("王建国", "李晓梅", "张伟", "陈静", "刘洋", "赵敏")
QUESTIONS_EN = (
    "Can you summarise the key points of this?",
    "What does this section say about the obligations?",
    "Is there anything unusual in these numbers?",
    "Which parts of this should I read first?",
    "Does this change anything we discussed?",
)
QUESTIONS_ZH = (
    "请概括一下这段内容的要点。",
    "这部分有什么需要注意的？",
    "这些数字有什么异常吗？",
    "和之前讨论的有什么不同？",
)


# Prose from the shared corpus (born-digital PDFs) and, for Chinese, the incident report itself.
CORPUS_FILES = {
    "en": (
        "dmca_copyright_office_summary_18p.pdf",
        "fedreg_2020-17221_15p.pdf",
        "cancer_council_breast_cancer_guide_76p.pdf",
        "irs_i1040nr_2007_50p.pdf",
    ),
    "zh": ("zh_dbdq_2018q1_report_22p.pdf", "zh_resume_near_duplicate_paragraphs_2p.pdf"),
}


CONFIG = Config().with_overrides(extract={"ocr": "never", "tables": False})


def _usable(text: str, lang: str) -> bool:
    letters = len(_LETTER.findall(text))
    cjk = len(_CJK.findall(text))
    is_zh = cjk >= 0.3 * max(letters, 1)
    long_enough = (30 if lang == "zh" else 60) <= len(text) <= 900
    return long_enough and letters >= 0.6 * len(text.replace(" ", "")) and is_zh == (lang == "zh")


@cache
def _corpus(lang: str) -> tuple[tuple[str, ...], ...]:
    """Each document's usable paragraphs, in order, Chinese or English (a paste is a stretch of one).

    Paragraphs as docsan cleans them out of the PDF (reflowed, without
    headers and footers): what a user copying text out of it would paste.
    """
    corpus, seed = common.corpus_dir(), common.seed_dir()
    if corpus is None:
        raise SystemExit("shared corpus not found (set DOCSAN_SHARED)")
    docs: list[list[str]] = []
    for name in CORPUS_FILES[lang]:
        doc = clean_file(corpus / "pdfs" / name, CONFIG).document
        docs.append([para for _, b in doc.blocks() for para in b.text.split("\n\n")])
    if lang == "zh" and seed is not None:
        for path in sorted(seed.glob("*.txt")):
            docs.append([p.strip() for p in path.read_text(encoding="utf-8").split("\n\n")])
    runs = [tuple(p for p in paras if _usable(p, lang)) for paras in docs]
    return tuple(r for r in runs if len(r) >= 3)


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "place": rng.choice(PLACES),
        "project": rng.choice(PROJECTS),
        "item": rng.choice(ITEMS),
        "org": rng.choice(ORGS),
        "person": rng.choice(PERSONS),
        "zplace": rng.choice(ZPLACES),
        "zproject": rng.choice(ZPROJECTS),
        "zorg": rng.choice(ZORGS),
        "zperson": rng.choice(ZPERSONS),
        "code": f"{rng.choice('KMQRTXZ')}{rng.randint(10, 99)}-{rng.randint(100, 999)}",
        "date": f"{rng.choice(('March', 'June', 'September', 'November'))} {rng.randint(2, 28)}",
        "zdate": f"{rng.randint(1, 12)}月{rng.randint(2, 28)}日",
        "days": str(rng.randint(11, 97)),
        "ext": str(rng.randint(2000, 8999)),
        "amount": f"${rng.randint(11, 99)},{rng.randint(100, 999)}",
        "zamount": f"{rng.randint(11, 99)}万{rng.randint(1, 9)}千元",
    }


def _fact(rng: random.Random, lang: str, turn: int, used: set[str]) -> Fact:
    templates = ZH_FACTS if lang == "zh" else EN_FACTS
    while True:
        sentence, question = rng.choice(templates)
        slots = _slots(rng)
        key = next(k for k in ANSWER if "{" + k + "}" in sentence)
        # A question must point at one fact: no two facts share the question.
        q = question.format(**slots)
        if q not in used and slots[key] not in used:
            used.update((q, slots[key]))
            return Fact(sentence.format(**slots), q, slots[key], turn)


def _plant(paste: list[str], fact: Fact, rng: random.Random, lang: str) -> list[str]:
    """The fact put inside a pasted paragraph (after one of its sentences), or as a paragraph of its own."""
    out = list(paste)
    k = rng.randrange(len(out))
    joiner = "" if lang == "zh" else " "
    out[k] = out[k] + joiner + fact.sentence if rng.random() < 0.5 else fact.sentence + joiner + out[k]
    return out


def build(seed: int, turns: int, lang: str = "en", *, tool_share: float = 0.15, paste_share: float = 0.45) -> History:
    """One history of ``turns`` turns (plus the question) in ``lang`` (``en`` or ``zh``); ``paste_share`` of the
    turns paste corpus text (a few more to plant facts in), 20 % more re-paste an earlier paste."""
    rng = random.Random(seed)
    runs = _corpus(lang)
    questions = QUESTIONS_ZH if lang == "zh" else QUESTIONS_EN
    n_facts = max(3, turns // 8)
    # Facts at every depth: one per slice of the history, at a random turn in it.
    fact_turns = sorted({min(turns - 1, int(i * turns / n_facts) + rng.randrange(max(1, turns // n_facts))) for i in
                         range(n_facts)})  # fmt: skip
    used: set[str] = set()
    facts = {t: _fact(rng, lang, t, used) for t in fact_turns}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the assistant of a logistics team. Answer from the conversation."}
    ]
    pastes: list[list[str]] = []
    n_repaste = 0
    for t in range(turns):
        fact = facts.get(t)
        kind = rng.random()
        if kind < paste_share or (fact is not None and kind < paste_share + 0.15):
            run = rng.choice(runs)
            start = rng.randrange(max(1, len(run) - 5))
            paste = list(run[start : start + rng.randint(2, 5)])
            if fact is not None:
                paste = _plant(paste, fact, rng, lang)
            pastes.append(paste)
            user = "\n\n".join([*paste, rng.choice(questions)])
        elif kind < paste_share + 0.2 and pastes and fact is None:
            n_repaste += 1
            user = "\n\n".join([*rng.choice(pastes), rng.choice(questions)])
        else:
            user = rng.choice(questions) if fact is None else fact.sentence
        messages.append({"role": "user", "content": user})
        source = user.split("\n\n")[0]
        if rng.random() < tool_share:
            call_id = f"call_{seed}_{t}"
            run = rng.choice(runs)
            result = list(run[: rng.randint(1, 3)])
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "search_documents", "arguments": f'{{"query": "turn {t}"}}'},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "\n\n".join(result)})
            source = result[0]
        sentences = regex.split(r"(?<=[.。!?！？])\s*", source)
        quote = next((s for s in sentences if len(s) > 20), source[:200])
        lead = "根据这段内容：" if lang == "zh" else "From what you sent: "
        messages.append({"role": "assistant", "content": lead + quote})
    planted = list(facts.values())
    # Questions about early turns: half the time the earliest fact, else any.
    asked = planted[0] if rng.random() < 0.5 else rng.choice(planted)
    messages.append({"role": "user", "content": asked.question})
    return History(messages, planted, asked, lang, turns, len(pastes), n_repaste)


def histories(n: int, seed: int = 0, min_turns: int = 20, max_turns: int = 300) -> list[History]:
    """``n`` histories, English and Chinese alternating, lengths spread from ``min_turns`` to ``max_turns``."""
    rng = random.Random(seed)
    return [
        build(rng.randrange(1 << 30), rng.randint(min_turns, max_turns), "en" if i % 2 == 0 else "zh") for i in range(n)
    ]
