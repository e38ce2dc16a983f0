"""Short documents with the repetition that survives paragraph-level cleaning, at known places (issue 16).

Each document is built from real prose (the corpus's English PDFs and the
Chinese of the incident report and the corpus's Chinese report, as
bench/quality.py reads them) in numbered sections, then:

* **copies split at different boundaries**: a passage of consecutive
  sentences (crossing a paragraph end, often a section heading such as
  ``5.3.5 小节``) is copied later in the document with its paragraph breaks
  moved: the heading starting a paragraph instead of standing alone, two
  paragraphs run together, a break after another sentence, or the copy glued
  into the middle of a paragraph. About half the text ends up repeated;
* **page breaks inside copies and paragraphs**: the text is set in lines on
  A5 pages (bench/repetition_layout.py), so a page break falls wherever the
  text reaches the page end, inside copies and inside paragraphs;
* **furniture on 1-5 pages**: a running head (the same on every page, or
  alternating between odd and even pages), sometimes a footer line, and page
  numbers in one of the forms printers use (``Page 3 of 5``, ``第 3 页 共 5 页``,
  ``- 3 -``, a bare ``3``, excerpts that start at page 251);
* **planted facts**: sentences with numbers appended to paragraphs, and one
  inserted in the middle of some copies (the copy is then not a copy there);
* **legitimate repeats**: a table whose rating text repeats in four rows (as
  in ``zh_yancheng``), and in some documents the same boilerplate clause closing
  every section, really there once per section.

What must go and what must stay is recorded with the document and scored by
:func:`score` on the cleaned text, from outside (no report is read).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import regex

from bench.noise import STYLES, squash

# Sentence ends: a CJK full stop (and ! ? ;), or a Latin one before a space and a capital, but not
# the stop of an abbreviation ("Docket No. FAA-2020-0746", "17 U.S.C.", "John B. Smith", "Boeing Co.").
_ZH_SENTENCE = regex.compile(r"(?<=[。！？；])")
_EN_SENTENCE = regex.compile(
    r"(?<!\b(?:\p{L}|No|Nos|Mr|Mrs|Ms|Dr|Prof|St|Inc|Ltd|Co|Corp|Jr|Sr|Fig|Vol|pp|vs|etc|e\.g|i\.e)\.)"
    r"(?<=[.!?])\s+(?=[A-Z“\"(])"
)
# The size of the pieces repeated text is counted in (squashed characters).
PIECE = 12


@dataclass(frozen=True, slots=True)
class Furniture:
    """What a document prints around its pages; ``odd_head`` is used on odd pages when set."""

    head: str
    odd_head: str | None
    footer: str | None
    number: str  # format with page and pages
    first_number: int = 1

    def head_on(self, page: int) -> str:
        return self.odd_head if self.odd_head and page % 2 else self.head

    def number_on(self, index: int, pages: int) -> str:
        n = self.first_number + index
        return self.number.format(page=n, pages=self.first_number + pages - 1)


@dataclass(slots=True)
class Item:
    """One unit of the body in reading order: a paragraph, a section heading or a table (rows of cells)."""

    kind: str  # "para" | "heading" | "table"
    text: str = ""
    rows: tuple[tuple[str, ...], ...] = ()


@dataclass(slots=True)
class Copy:
    """An injected copy: its text (the passage's sentences, without their paragraph breaks) and its source."""

    text: str
    # A fact inserted into the copy: the copy is two pieces around it.
    fact: str | None = None


@dataclass(slots=True)
class BenchDocument:
    name: str
    lang: str
    items: list[Item]
    furniture: Furniture
    copies: list[Copy]
    facts: list[str]
    # Texts that legitimately occur more than once, with how often they occur in the document.
    legit: dict[str, int]
    # The document without the injected copies and furniture: what a perfect cleaner returns.
    ideal: str
    # Paragraphs of the ideal text (not copies), to check that those cut by a page break come back whole.
    paragraphs: list[str] = field(default_factory=list)


def sentences(text: str, lang: str) -> list[str]:
    pieces = _ZH_SENTENCE.split(text) if lang == "zh" else _EN_SENTENCE.split(text)
    return [p.strip() for p in pieces if p.strip()]


# Section headings in the style of the incident's documents ("5.3.5 小节"); absent from the base text.
_HEADINGS = {
    "zh": ("小节 数据来源", "小节 处理流程", "小节 导出说明", "小节 风险提示", "小节 附加说明", "小节 参数设置"),
    "en": ("Scope of the rule", "Data sources", "Export procedure", "Risk factors", "Further notes", "Parameters"),
}
_HEADS = {
    "zh": ("星河数据科技股份有限公司 2023 年年度报告", "第二章知识库导出文档"),
    "en": ("Northwind Data Systems Inc. - Annual Report 2023", "Chapter 2 - Knowledge Base Export"),
}
_FOOTERS = {"zh": "内部资料 注意保密", "en": "Confidential - for internal use only"}
_NUMBERS = {
    "zh": ("第 {page} 页 共 {pages} 页", "- {page} -", "{page}"),
    "en": ("Page {page} of {pages}", "- {page} -", "{page}"),
}
BOILERPLATE = {
    "zh": "本节所列数据未经审计，最终数据以公司正式披露的定期报告为准，投资者不应仅依据本节内容作出投资决定。",
    "en": (
        "Figures in this section are unaudited; the company's published periodic reports prevail over them, "
        "and no investment decision should rest on this section alone."
    ),
}
_RATING = {
    "zh": (("等级", "含义"), "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低", ("AAA", "AA+", "AA", "AA-")),
    "en": (
        ("Grade", "Meaning"),
        "Very strong capacity to repay debt, little affected by adverse conditions, very low default risk",
        ("AAA", "AA+", "AA", "AA-"),
    ),
}


def build(
    base: list[str], lang: str, pages: int, seed: int, *, repeat_share: float = 0.45, scale: float = 1.0
) -> BenchDocument:
    """One document of about ``pages`` A5 pages from ``base`` paragraphs (deterministic for ``seed``).

    ``scale`` shrinks the amount of text, for a layout that needs more pages than asked for.
    """
    rng = random.Random(f"{lang}-{pages}-{seed}")
    sep = "" if lang == "zh" else " "
    # Characters of body text a page holds (bench/repetition_layout.py: A5, 10 pt).
    per_page = 900 if lang == "zh" else 2000
    budget = int(pages * per_page * (1 - repeat_share) * scale)
    pool = list(base)
    rng.shuffle(pool)
    facts = list(STYLES[lang].facts)
    rng.shuffle(facts)
    boilerplate = BOILERPLATE[lang] if seed % 2 else None

    # Sections of 1-3 paragraphs under numbered headings, facts appended to some paragraphs.
    items: list[Item] = []
    used = 0
    section = 0
    planted: list[str] = []
    while used < budget and pool:
        section += 1
        items.append(Item("heading", f"5.{pages}.{section} {_HEADINGS[lang][(section - 1) % 6]}"))
        for _ in range(rng.randint(1, 3)):
            if not pool or used >= budget:
                break
            para = pool.pop()
            if len(planted) < 3 and rng.random() < 0.5:
                planted.append(facts.pop())
                para = para + sep + planted[-1]
            items.append(Item("para", para))
            used += len(para)
        if boilerplate:
            items.append(Item("para", boilerplate))
    if section == 1 and boilerplate:
        items.pop()  # once is not "once per section"
        boilerplate = None
    rating_header, rating, grades = _RATING[lang]
    table = Item("table", rows=(rating_header, *((g, rating) for g in grades)))
    items.insert(rng.randrange(1, len(items) + 1), table)
    ideal_items = list(items)

    # Copies: passages of 2-6 consecutive sentences, from one paragraph into the next (headings
    # included), inserted later with other paragraph boundaries, until repeat_share of the text.
    # A copy goes after an item of the base text at or after its source's last item (``after``:
    # the copies' paragraphs following each base item, in the order inserted), so it always
    # follows its source; a passage that another copy has come into is not a passage of the
    # document any more and is not drawn.
    units = _units(items, lang)
    after: dict[int, list[Item]] = {}
    copies: list[Copy] = []
    total = sum(len(i.text) for i in items)
    repeated = 0
    tries = 0
    while repeated < repeat_share * (total + repeated) and tries < 200:
        tries += 1
        if len(units) < 4:
            break
        start = rng.randrange(len(units) - 2)
        length = rng.randint(2, 6)
        passage = units[start : start + length]
        if len(passage) < 2 or any(u[1] == "table" for u in passage):
            continue
        if any(k in after for k in range(passage[0][0], passage[-1][0])):
            continue
        text = _join_units(passage, lang)
        if len(squash(text)) < 60:
            continue
        fact = facts.pop() if facts and rng.random() < 0.3 and len(passage) >= 3 else None
        where = _insertion_point(items, passage[-1][0], rng)
        if where is None:
            continue
        new = _reparagraph(passage, lang, rng, fact)
        _insert(items, after.setdefault(where, []), where, new, rng, lang, keep={boilerplate})
        copies.append(Copy(text, fact))
        if fact:
            planted.append(fact)
        repeated += len(text)
    items = [x for k, item in enumerate(items) for x in (item, *after.get(k, ()))]
    ideal = "\n\n".join(_item_text(i) for i in ideal_items) + "".join(f"\n\n{c.fact}" for c in copies if c.fact)
    heads = _HEADS[lang]
    alternating = rng.random() < 0.5
    number = rng.choice(_NUMBERS[lang])
    furniture = Furniture(
        head=heads[1] if alternating else heads[0],
        odd_head=heads[0] if alternating else None,
        footer=_FOOTERS[lang] if rng.random() < 0.5 else None,
        number=number,
        first_number=251 if rng.random() < 0.25 else 1,
    )
    legit = {rating: len(grades)}
    if boilerplate:
        legit[boilerplate] = sum(1 for i in ideal_items if i.text == boilerplate)
    name = f"{lang}-{pages}p-{seed}"
    return BenchDocument(
        name,
        lang,
        items,
        furniture,
        copies,
        planted,
        legit,
        ideal,
        paragraphs=[i.text for i in ideal_items if i.kind == "para" and i.text != boilerplate],
    )


def _item_text(item: Item) -> str:
    if item.kind == "table":
        return "\n".join("| " + " | ".join(r) + " |" for r in item.rows)
    return item.text


def _units(items: list[Item], lang: str) -> list[tuple[int, str, str]]:
    """(item index, kind, text) for every sentence of every paragraph and every heading, in order."""
    out = []
    for k, item in enumerate(items):
        if item.kind == "para":
            out += [(k, "sentence", s) for s in sentences(item.text, lang)]
        else:
            out.append((k, item.kind, item.text))
    return out


def _join_units(units: list[tuple[int, str, str]], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(u[2] for u in units)


def _reparagraph(passage: list[tuple[int, str, str]], lang: str, rng: random.Random, fact: str | None) -> list[Item]:
    """The passage as paragraphs broken elsewhere than in its source; a heading may start a paragraph."""
    sep = "" if lang == "zh" else " "
    texts = [u[2] for u in passage]
    if fact:
        texts.insert(rng.randrange(1, len(texts)), fact)
    # Break after a random subset of units; the source broke where the item index changes.
    source_breaks = {i for i in range(1, len(passage)) if passage[i][0] != passage[i - 1][0]}
    for _ in range(10):
        breaks = {i for i in range(1, len(texts)) if rng.random() < 0.35}
        if breaks != source_breaks:
            break
    out: list[Item] = []
    current: list[str] = []
    for i, text in enumerate(texts):
        if i in breaks and current:
            out.append(Item("para", sep.join(current)))
            current = []
        current.append(text)
    out.append(Item("para", sep.join(current)))
    return out


def _insertion_point(items: list[Item], last: int, rng: random.Random) -> int | None:
    """A base item at or after the passage's source's last item, after which a copy goes (not a table)."""
    choices = [k for k in range(last, len(items)) if items[k].kind != "table"]
    return rng.choice(choices) if choices else None


def _insert(
    items: list[Item],
    following: list[Item],
    where: int,
    new: list[Item],
    rng: random.Random,
    lang: str,
    keep: set[str | None],
) -> None:
    """Add the copy's paragraphs after base item ``where`` (and the copies already there, ``following``).

    The first may be glued onto the paragraph before it; never onto a paragraph in ``keep`` (the
    boilerplate stays a paragraph of its own, as it is printed).
    """
    prev = following[-1] if following else items[where]
    if prev.kind == "para" and prev.text not in keep and rng.random() < 0.4:
        glued = Item("para", prev.text + ("" if lang == "zh" else " ") + new[0].text)
        if following:
            following[-1] = glued
        else:
            items[where] = glued
        new = new[1:]
    following.extend(new)


# --- scoring ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Score:
    repeat_chars: int
    repeat_left: int
    furniture_lines: int
    furniture_left: int
    facts: int
    facts_lost: list[str]
    legit: int
    legit_lost: list[str]
    cut_paragraphs: int
    cut_left: int


def _pieces(text: str) -> list[str]:
    s = squash(text)
    return [s[i : i + PIECE] for i in range(0, len(s) - PIECE + 1, PIECE)]


def score(doc: BenchDocument, output: str, pages: int, cut: list[str]) -> Score:
    """Score a cleaner's ``output`` for ``doc`` set on ``pages`` pages; ``cut``: paragraphs a page break split.

    Repetition is counted in 12-character pieces of each copy (squashed: no
    whitespace): a piece is left over when the output holds it more often
    than the ideal text does, so a copy cut at slightly different places
    still counts by what really remains.
    """
    out = squash(output)
    ideal = squash(doc.ideal)
    injected: dict[str, int] = {}
    for c in doc.copies:
        for piece in _pieces(c.text):
            injected[piece] = injected.get(piece, 0) + 1
    repeat_chars = sum(n * len(p) for p, n in injected.items())
    repeat_left = sum(min(n, max(0, out.count(p) - ideal.count(p))) * len(p) for p, n in injected.items())
    lines = [line.strip() for line in output.splitlines()]
    fur = doc.furniture
    furniture_lines = 0
    furniture_left = 0
    for text, count in _furniture_counts(fur, pages).items():
        furniture_lines += count
        found = lines.count(text) if _bare(text) else out.count(squash(text))
        furniture_left += min(count, max(0, found - ideal.count(squash(text)) * (not _bare(text))))
    facts_lost = [f for f in doc.facts if squash(f) not in out]
    legit_lost = [t for t, n in doc.legit.items() if out.count(squash(t)) < n]
    paragraphs = [squash(p) for p in regex.split(r"\n\s*\n", output)]
    cut_left = sum(1 for p in cut if not any(squash(p) in q for q in paragraphs))
    return Score(
        repeat_chars,
        repeat_left,
        furniture_lines,
        furniture_left,
        len(doc.facts),
        facts_lost,
        sum(doc.legit.values()),
        legit_lost,
        len(cut),
        cut_left,
    )


def _bare(text: str) -> bool:
    return not regex.search(r"\p{L}", text)


def _furniture_counts(fur: Furniture, pages: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in range(pages):
        for text in (fur.head_on(i + 1), fur.footer, fur.number_on(i, pages)):
            if text:
                counts[text] = counts.get(text, 0) + 1
    return counts
