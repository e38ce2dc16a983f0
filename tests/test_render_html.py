"""`--format html`: headings, paragraphs and tables with spans, and no markup from the input surviving as markup."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from docsan import Block, BlockKind, Cell, Document, DocumentKind, Page, Source, Table
from docsan.render import render_html

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"> & "quotes" \'single\' </p></section>'


class Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Collect:
    parser = Collect()
    parser.feed(page)
    parser.close()
    return parser


def test_input_markup_arrives_as_text() -> None:
    table = Table(
        (
            (Cell(HOSTILE), Cell("b")),
            (Cell("x", colspan=2), Cell("", covered=True)),
        )
    )
    doc = Document(
        (
            Page(
                1, (Block("# " + HOSTILE, BlockKind.HEADING), Block(HOSTILE), Block("t", BlockKind.TABLE, table=table))
            ),
        ),
        DocumentKind.MARKDOWN,
        name=HOSTILE,
    )
    parsed = parse(render_html(doc))
    tags = [t for t, _ in parsed.tags]
    assert "script" not in tags and "img" not in tags
    assert tags == [
        "html",
        "head",
        "meta",
        "title",
        "body",
        "article",
        "section",
        "h1",
        "p",
        "table",
        "tr",
        "th",
        "th",
        "tr",
        "td",
    ]
    assert ("td", {"colspan": "2"}) in parsed.tags
    assert "".join(parsed.text).count(HOSTILE) == 4  # title, heading, paragraph, cell


def test_pdf_headings_and_tables(fixtures_dir: Path) -> None:
    result = CliRunner().invoke(app, ["clean", str(fixtures_dir / "bilingual_report.pdf"), "--format", "html"])
    assert result.exit_code == 0, result.output
    parsed = parse(result.stdout)
    tags = [t for t, _ in parsed.tags]
    assert tags.count("h2") == 3 and tags.count("table") == 1 and tags.count("th") == 3
    assert [a["data-page"] for t, a in parsed.tags if t == "section"] == ["1", "2", "3"]
    assert "第三季度营业收入为 4,213 万元" in "".join(parsed.text)


def test_chat_messages_keep_their_roles(fixtures_dir: Path) -> None:
    result = CliRunner().invoke(app, ["clean", str(fixtures_dir / "chat_history.json"), "--format", "html"])
    assert result.exit_code == 0, result.output
    roles = [a.get("data-role") for t, a in parse(result.stdout).tags if t == "section"]
    assert roles and roles[0] == "system" and set(roles) <= {"system", "user", "assistant", "tool"}


def test_line_breaks_inside_a_paragraph_become_br() -> None:
    doc = Document((Page(1, (Block("one\ntwo", source=Source.OCR),)),))
    assert "<p>one<br>\ntwo</p>" in render_html(doc)
