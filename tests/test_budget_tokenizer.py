"""The tokenizer wrapper: exact counts with the real DeepSeek-V4 tokenizer files, local paths only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from docsan.budget.tokenizer import Tokenizer, TokenizerError, default_tokenizer_dir
from docsan.errors import DocsanError

MIXED = "东北电气发展股份有限公司 2018 年第一季度报告。Revenue grew 12% in Q1! Привет, мир. مرحبا 😀👍🏽"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.load()


def test_default_is_the_deepseek_package_files(tok: Tokenizer) -> None:
    folder = default_tokenizer_dir()
    assert (folder / "tokenizer.json").is_file()
    assert "DeepSeek" in tok.name
    # Loaded once: the same object comes back for the same path.
    assert Tokenizer.load() is tok
    assert Tokenizer.load(folder) is tok
    assert Tokenizer.load(folder / "tokenizer.json") is tok


def test_count_is_the_length_of_the_encoding_without_special_tokens(tok: Tokenizer) -> None:
    ids = tok.encode(MIXED)
    assert tok.count(MIXED) == len(ids)
    assert 0 not in ids  # no <｜begin▁of▁sentence｜> added
    assert tok.decode(ids) == MIXED
    assert tok.count("") == 0


def test_count_batch_equals_counting_each_text(tok: Tokenizer) -> None:
    texts = [MIXED, "a", "", "。\n\n", MIXED * 3]
    assert tok.count_batch(texts) == [tok.count(t) for t in texts]
    assert tok.count_batch([]) == []


def test_special_tokens_are_read_from_the_tokenizer(tok: Tokenizer) -> None:
    for token in ("<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"):
        assert token in tok.special_tokens
        ids = tok.encode(token)
        assert len(ids) == 1 and ids[0] in tok.special_ids


def test_hub_id_gives_a_clear_error() -> None:
    with pytest.raises(DocsanError, match=r"model hubs are not reachable.*local folder"):
        Tokenizer.load("deepseek-ai/DeepSeek-V3")


def test_missing_path_and_folder_without_tokenizer_json(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="no such tokenizer"):
        Tokenizer.load(tmp_path / "nope")
    with pytest.raises(TokenizerError, match=r"no tokenizer\.json"):
        Tokenizer.load(tmp_path)
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerError, match=r"not a valid tokenizer\.json"):
        Tokenizer.load(bad)


def test_config_special_tokens_missing_from_tokenizer_json_are_added(tmp_path: Path) -> None:
    """A tokenizer_config.json may name special tokens that tokenizer.json lacks; they must count as one token."""
    shutil.copy(default_tokenizer_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    config = {"additional_special_tokens": ["<|docsan_test|>"], "chat_template": "{{ messages }}"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    tok = Tokenizer.load(tmp_path)
    assert "<|docsan_test|>" in tok.special_tokens
    assert tok.count("a<|docsan_test|>b") == 3
    assert Tokenizer.load().count("<|docsan_test|>") > 1
