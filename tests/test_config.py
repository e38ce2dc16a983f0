from pathlib import Path

import pytest

from docsan.config import DEFAULT_STAGES, Config, config_from_dict, load_config, page_spans
from docsan.errors import ConfigError
from docsan.stages import build_stage


def test_the_default_stage_order_is_the_one_docs_pipeline_md_explains():
    pipeline_md = (Path(__file__).resolve().parent.parent / "docs" / "pipeline.md").read_text(encoding="utf-8")
    assert f"`{', '.join(DEFAULT_STAGES)}` (the default" in pipeline_md
    assert Config().stages == DEFAULT_STAGES


def test_toml_file_sets_extract_and_stage_options(tmp_path: Path):
    f = tmp_path / "docsan.toml"
    f.write_text('stages = ["normalize"]\n[extract]\nocr = "never"\n[normalize]\nfoo = 1\n')
    cfg = load_config(f)
    assert cfg.stages == ("normalize",)
    assert cfg.extract.ocr == "never"
    assert cfg.stage_options("normalize") == {"foo": 1}


def test_flags_override_file_values():
    cfg = config_from_dict({"extract": {"lang": "eng"}, "neardup": {"threshold": 0.7}})
    new = cfg.with_overrides(extract={"ocr": "always"}, options={"neardup": {"threshold": 0.9}})
    assert new.extract.lang == "eng" and new.extract.ocr == "always"
    assert new.stage_options("neardup") == {"threshold": 0.9}
    assert cfg.stage_options("neardup") == {"threshold": 0.7}


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"extract": {"ocr": "sometimes"}}, "extract.ocr"),
        ({"extract": {"dpi": 5}}, "extract.dpi"),
        ({"budget": 5}, "unknown top-level"),
    ],
)
def test_invalid_config_is_one_clear_error(data, fragment):
    with pytest.raises(ConfigError, match=fragment):
        config_from_dict(data)


@pytest.mark.parametrize(
    "extract, fragment",
    [
        ({"orc": "never"}, "extract.orc: Extra inputs are not permitted"),
        ({"dpi": 5}, "extract.dpi"),
        ({"encoding": "nope"}, "extract.encoding: unknown encoding 'nope'"),
        ({"pages": "1-x"}, "extract.pages: bad page range '1-x'"),
    ],
)
def test_overrides_are_validated_like_the_file(extract, fragment):
    # The library's with_overrides and the CLI's flags: a typo or a bad value is refused, not taken as given.
    with pytest.raises(ConfigError, match=fragment):
        Config().with_overrides(extract=extract)


def test_page_spans_reads_every_documented_form():
    assert page_spans("1-3,7,10-, -2") == [(1, 3), (7, 7), (10, None), (1, 2)]
    for bad in ("x", "0-2", "3-1", "1-x", ""):
        with pytest.raises(ValueError, match="bad page range"):
            page_spans(bad)


def test_unknown_stage_is_named():
    with pytest.raises(ConfigError, match="unknown stage 'nope'"):
        build_stage("nope")


def test_bad_toml_names_the_file(tmp_path: Path):
    f = tmp_path / "bad.toml"
    f.write_text("stages = [")
    with pytest.raises(ConfigError, match=r"bad\.toml: invalid TOML"):
        load_config(f)
