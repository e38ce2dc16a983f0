"""Configuration as data: defaults here, overridden by a TOML file, overridden by flags.

The TOML file has a top-level ``stages`` list, an ``[extract]`` table, and
one table per stage holding that stage's options::

    stages = ["normalize", "furniture", "tables", "repeats", "reflow", "neardup"]

    [extract]
    ocr = "auto"
    lang = "chi_sim+eng"

    [neardup]
    threshold = 0.8

A stage's options are validated by the stage itself when it is built, so an
unknown option or a wrong type is reported with the stage's name.
"""

from __future__ import annotations

import codecs
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from docsan.config.runner import RunnerConfig
from docsan.config.serve import ServeConfig
from docsan.errors import ConfigError

# The choices of options that the command line offers by name (its enums are built from these).
# When to OCR a PDF page (ExtractConfig.ocr explains each).
OcrMode = Literal["auto", "always", "never"]
# How the tables stage lays out a spanned cell (docsan.stages.table_repair explains each).
TablePolicy = Literal["once", "fill", "html"]
# Which paragraphs a token budget keeps (docsan.budget.truncate explains each); for a chat
# history, "query" (its default) or "recent" say which older turns stay (docsan.budget.chat_trim).
BudgetStrategy = Literal["head", "head-tail", "query", "recent"]

# The order matters: control characters go first so every later comparison
# sees clean text; furniture is found on the extractor's own lines, before
# reflow joins them into paragraphs; near-duplicates are judged on whole
# paragraphs, so they run after reflow; control-token spellings are escaped
# last, on the text as it will be written (cleaned text is meant to become a
# prompt: DeepSeek-V4's tokens unless special_tokens.tokenizer says otherwise).
DEFAULT_STAGES: tuple[str, ...] = (
    "normalize",
    "furniture",
    "tables",
    "repeats",
    "reflow",
    "neardup",
    "special_tokens",
)


# One part of a --pages list: "7", "1-3", "10-" (to the last page), "-2" (from the first).
_PAGE_SPAN = re.compile(r"(\d+)|(\d*)-(\d*)")


def page_spans(spec: str) -> list[tuple[int, int | None]]:
    """``"1-3,7,10-"`` to ``[(1, 3), (7, 7), (10, None)]`` (None: to the last page).

    Raises ValueError on a part that is no range, so a bad ``--pages`` is a bad argument
    before any file is read, not a failure of every input.
    """
    spans: list[tuple[int, int | None]] = []
    for part in (p.strip() for p in spec.split(",")):
        span = _page_span(part)
        if span is None:
            raise ValueError(f"bad page range {part!r} (use e.g. 1-3,7,10-)")
        spans.append(span)
    return spans


def _page_span(part: str) -> tuple[int, int | None] | None:
    """One part of a --pages list as (first, last or None), or None when it is no range (``x``, ``0``, ``3-1``)."""
    m = _PAGE_SPAN.fullmatch(part)
    if m is None:
        return None
    single, lo_s, hi_s = m.groups()
    lo = int(single or lo_s or 1)
    hi = lo if single else int(hi_s) if hi_s else None
    if lo < 1 or (hi is not None and hi < lo):
        return None
    return lo, hi


class ExtractConfig(BaseModel):
    """How inputs are read. Every default is the safe choice for unknown uploads."""

    model_config = ConfigDict(extra="forbid")

    # auto: OCR only the pages whose text layer is missing or garbage.
    ocr: OcrMode = "auto"
    # Tesseract language packs; "auto" reads each page in the languages of the script tesseract's
    # OSD sees on it (Cyrillic: rus+eng, Han: chi_sim+eng...), falling back to ocr_fallback_lang.
    lang: str = "auto"
    # For a page whose script OSD cannot tell, or whose language pack is not installed; the
    # incident's uploads were Chinese and English.
    ocr_fallback_lang: str = "chi_sim+eng"
    # 300 dpi is tesseract's sweet spot for body text; lower loses CJK strokes.
    dpi: int = Field(300, ge=72, le=600)
    # CPU seconds one tesseract call may use (page recognition, or OSD). CPU time, not the
    # clock: a busy machine makes a call slower, not more expensive, so load does not lose pages.
    # A call that runs out is retried once at 2/3 of the dpi; then the page is a gap of a partial
    # result (exit 4, "FILE: page N: OCR gave up after S s" on stderr). 60 s is 5-10 times what a
    # dense A4 page at 300 dpi needs.
    ocr_cpu_s: float = Field(60.0, gt=0)
    # Refuse page images beyond this many megapixels before OCR: an almost
    # blank 81-megapixel page would otherwise take minutes and gigabytes.
    ocr_max_megapixels: float = Field(40.0, gt=0)
    # The images one OCR page draws may decode to at most this many MiB together, as
    # docsan/extract/image_decode.py estimates before the draw: MuPDF decodes each image whole
    # (or at 1/2, 1/4... when it is drawn at most half its size) and holds it through the draw,
    # so a 9000 x 9000 RGB scan (232 MiB) took a worker to 579 MB. Over the limit, the page is
    # rendered at the highest lower dpi where MuPDF's subsampling brings it within, with a note;
    # where none does, it is a gap of a partial result (exit 4). 56 leaves every ordinary scan
    # alone: A4/Letter at 300 dpi in colour decodes to 25 MiB, A4 at 600 dpi in grey 33 MiB, A3 at
    # 300 dpi in colour (the largest) 50 MiB, and 56 gives that 12% for a scanner's margins. The
    # draw then holds at most about twice it (a grey copy, a scaled copy) and the page image
    # beside docsan's own ~175 MB: huckfinn's page peaks at 206 MB (74 dpi, 14.5 MiB; 297 MB at 64,
    # which leaves it 58 MiB at 149 dpi).
    ocr_max_image_mib: float = Field(56.0, gt=0)
    # Detect tables (pdfplumber/PyMuPDF) on pages that plausibly hold one.
    tables: bool = True
    # Read at most this many pages of a PDF; the rest is a documented partial result (exit 4, a
    # stderr line saying which pages and the --pages range that reads them), never a refusal.
    # Pages are extracted one at a time, but the stages see the whole document (running heads
    # and duplicates span pages): a run's memory grows ~100 bytes per character, ~120 KB per
    # dense page (5,000 pages: 600 MB peak, docs/extraction.md). 10,000 bounds one run near
    # 1.5 GB; --pages reads a longer document in parts.
    max_pages: int = Field(10_000, ge=1)
    # PDF pages to read ("1-3,7,10-"; None: all), for a long document read in parts.
    pages: str | None = None
    # A PDF page whose content streams (and the forms they draw) decode to more than this many MiB
    # is not read: a gap of the partial result. MuPDF reads a page in one uninterruptible call whose
    # time grows with this size (~0.2 s per MiB of operators here); the largest real page seen (the
    # corpus and hostile files) is 1.4 MiB. docsan/extract/content_size.py measures it without
    # inflating a bomb.
    max_page_content_mib: float = Field(16.0, gt=0)
    # Above this many MiB a page is read without its drawings: no ruled tables, white text judged
    # without the boxes under it. Collecting drawings costs ~10x the text pass (a 4 MiB page of
    # rules: 8 s and 350 MB; 64 MiB: 2.8 GB), and no table needs millions of rules.
    page_drawings_mib: float = Field(4.0, gt=0)
    # Text and chat files over this many MiB are refused (one line naming the limit): they are
    # decoded, detected and cleaned in memory. 64 MiB of text is ~1,000 times a long report.
    max_text_mib: float = Field(64.0, gt=0)
    # Text and chat files: None detects the encoding (docsan/extract/encoding.py) and refuses
    # a file it cannot tell; a codec name ("cp1252", "gb18030", "shift_jis") decodes strictly with it.
    encoding: str | None = None

    @field_validator("pages")
    @classmethod
    def _page_spans(cls, value: str | None) -> str | None:
        if value is not None:
            page_spans(value)
        return value

    @field_validator("encoding")
    @classmethod
    def _known_codec(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                codecs.lookup(value)
            except LookupError:
                raise ValueError(f"unknown encoding {value!r}") from None
        return value


class Config(BaseModel):
    """Everything ``docsan clean`` needs; build one with :func:`load_config`."""

    model_config = ConfigDict(extra="forbid")

    # Stage names in run order (docs/pipeline.md gives the reasons for the default order).
    stages: tuple[str, ...] = DEFAULT_STAGES
    extract: ExtractConfig = ExtractConfig()
    # Per-stage options, keyed by stage name; validated by the stage.
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # The bundled vLLM runner (`docsan ask`, `plan`, `queue`): tiers, limits, backend.
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    # The gateway (`docsan serve`): listening address, limits, keys, polling.
    serve: ServeConfig = Field(default_factory=ServeConfig)

    def stage_options(self, name: str) -> dict[str, Any]:
        return dict(self.options.get(name, {}))

    @property
    def table_html(self) -> bool:
        """True when the tables stage keeps spans for HTML tables: renderers and budgets must then write HTML."""
        return self.stage_options("tables").get("policy") == "html"

    def with_budget(
        self,
        budget: int | None,
        *,
        query: str | None = None,
        strategy: BudgetStrategy | None = None,
        tokenizer: str | None = None,
        markdown: bool = False,
        suffix: str = "",
    ) -> Config:
        """Append the ``special_tokens`` stage (with a budget or a tokenizer) and the ``budget`` stage (with a budget).

        A tokenizer names the model the prompt is for, so its control tokens
        are guarded whenever one is given; the budget stage runs last, on the
        text exactly as it will be written: ``markdown`` and this config's
        table policy say how it is rendered, ``suffix`` is what the writer adds
        after it (``docsan clean`` ends its output with a newline).
        """
        if budget is None and (query is not None or strategy is not None):
            raise ConfigError("a query or a budget strategy needs a budget")
        if budget is None and tokenizer is None:
            return self
        stages = list(self.stages)
        options: dict[str, dict[str, Any]] = {}
        tok = {"tokenizer": tokenizer} if tokenizer is not None else {}
        if "special_tokens" not in stages:
            stages.append("special_tokens")
        options["special_tokens"] = dict(tok)
        if budget is not None:
            if "budget" in stages:
                stages.remove("budget")
            stages.append("budget")
            opts: dict[str, Any] = {"budget": budget, "markdown": markdown, "table_html": self.table_html, **tok}
            opts["suffix"] = suffix
            if query is not None:
                opts["query"] = query
            if strategy is not None:
                opts["strategy"] = strategy
            options["budget"] = opts
        return self.with_overrides(options=options, stages=tuple(stages))

    def with_overrides(
        self,
        *,
        extract: dict[str, Any] | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        stages: tuple[str, ...] | None = None,
    ) -> Config:
        """Return a copy with CLI flags applied over this configuration."""
        new_options = {k: dict(v) for k, v in self.options.items()}
        for stage, opts in (options or {}).items():
            new_options.setdefault(stage, {}).update(opts)
        try:
            return Config(
                stages=stages if stages is not None else self.stages,
                # A dict, validated like a file's [extract]: model_copy(update=...) would take a typo or a dpi of 5.
                extract={**self.extract.model_dump(), **(extract or {})},
                options=new_options,
                runner=self.runner,
                serve=self.serve,
            )
        except ValidationError as err:
            raise ConfigError(_one_line(err)) from None


def load_config(path: str | Path | None = None) -> Config:
    """Read a TOML configuration file, or return the defaults when ``path`` is None."""
    if path is None:
        return Config()
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{p}: cannot read config: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{p}: invalid TOML: {err}") from None
    return config_from_dict(data, name=str(p))


def config_from_dict(data: dict[str, Any], name: str = "config") -> Config:
    """Build a :class:`Config` from the parsed TOML layout described above."""
    data = dict(data)
    top: dict[str, Any] = {}
    for key in ("stages", "extract", "runner", "serve"):
        if key in data:
            top[key] = data.pop(key)
    bad = [k for k, v in data.items() if not isinstance(v, dict)]
    if bad:
        raise ConfigError(f"{name}: unknown top-level key(s): {', '.join(sorted(bad))}")
    top["options"] = data
    try:
        return Config(**top)
    except ValidationError as err:
        raise ConfigError(f"{name}: {_one_line(err)}") from None


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"])
    # A validator's own message, without pydantic's "Value error, " in front of it.
    msg = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    return f"{loc}: {msg}"
