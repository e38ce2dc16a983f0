"""Sections and boilerplate (docsan.text.sections), and the neardup stage keeping a clause once per section."""

from __future__ import annotations

from docsan.api import clean_text
from docsan.config import Config
from docsan.model import Block, BlockKind
from docsan.text.sections import Occurrence, is_boilerplate, is_section_heading

CLAUSE = "Figures in this section are unaudited; the published periodic reports prevail over them in every case."
PROSE = [
    "The first section describes how the export works and which files it writes to the target folder.",
    "The second section lists the sources the knowledge base reads and how often each one is refreshed.",
    "The third section names the risks the operators have seen and what each of them costs when it happens.",
    "The fourth section gives the parameters of the job, their defaults and the reasons for each default.",
]


def test_section_headings_are_numbered_short_lines_without_clause_punctuation() -> None:
    for text in (
        "5.3.5 小节 导出说明",
        "第三条 总则",
        "一、总体要求",
        "Section 12 Termination",
        "§ 4 Scope",
        "2.1 Scope",
    ):
        assert is_section_heading(Block(text)), text
    for text in (
        "3. [ ] 文件上传必须经过预处理管道",  # one level: a list item as often as a heading
        "8. 请求体中出现大量重复文本片段，最高重复率达60%",
        "2.1 The parties agree to the following terms.",
        "An ordinary sentence.",
    ):
        assert not is_section_heading(Block(text)), text
    assert is_section_heading(Block("Introduction", kind=BlockKind.HEADING))


def test_boilerplate_is_there_once_per_section() -> None:
    closes = [Occurrence(s, False, True) for s in (1, 2, 3)]
    assert is_boilerplate(closes, 6, weight=500)  # closing every section it is in, any length
    scattered = [Occurrence(s, False, False) for s in (1, 2, 3)]
    assert is_boilerplate(scattered, 4, weight=100)  # a short clause in most sections
    assert not is_boilerplate(scattered, 4, weight=500)  # a long paragraph there is more likely pasted
    assert not is_boilerplate(scattered[:2], 6, weight=100)  # two copies in six sections
    assert is_boilerplate(scattered[:2], 2, weight=100)  # both sections of two
    assert not is_boilerplate([Occurrence(1, False, True), Occurrence(1, False, True)], 3, weight=100)


def _document(*, clause_in_every_section: bool) -> str:
    parts = []
    for k, prose in enumerate(PROSE, start=1):
        parts += [f"4.{k} Part {k}", prose]
        if clause_in_every_section or k <= 2:
            parts.append(CLAUSE)
    return "\n\n".join(parts)


def test_a_clause_closing_every_section_stays_in_every_section() -> None:
    result = clean_text(_document(clause_in_every_section=True), Config())
    assert result.text.count(CLAUSE) == 4
    assert result.report.stage("neardup").stats["boilerplate_kept"] == 3


def test_the_same_paragraph_in_two_of_four_sections_is_a_copy() -> None:
    result = clean_text(_document(clause_in_every_section=False), Config())
    assert result.text.count(CLAUSE) == 1
    (change,) = result.report.with_code("neardup.paragraph")
    assert change.text == CLAUSE


def test_boilerplate_off_removes_the_copies() -> None:
    config = Config().with_overrides(options={"neardup": {"boilerplate": False}})
    assert clean_text(_document(clause_in_every_section=True), config).text.count(CLAUSE) == 1


def test_a_section_title_stays_when_an_earlier_copy_holds_its_text() -> None:
    # A passage pasted before its source (the end of section 2, its clause, the next section's
    # title and prose, glued into one paragraph): the title where it opens section 3 repeats that
    # paste, but stays. Cut, it would merge section 3 into section 2, whose two clauses would then
    # look like a copy, and section 3's clause would go.
    title = "4.3 Part 3"
    third = PROSE[2] + " The operators report each of them within a day, with what they measured."
    glued = f"{PROSE[1]} {CLAUSE} {title} {third}"
    parts = ["4.1 Part 1", PROSE[0], CLAUSE, "4.2 Part 2", PROSE[1], CLAUSE, glued, title, third, CLAUSE]
    parts += ["4.4 Part 4", PROSE[3], CLAUSE]
    result = clean_text("\n\n".join(parts), Config())
    paragraphs = result.text.split("\n\n")
    assert title in paragraphs
    assert paragraphs.count(CLAUSE) == 4
    assert result.text.count(third) == 1
