"""The capacity planner's arithmetic against hand-computed values for real model configs (tests/data/models)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.exit_codes import ExitCode
from cli.main import app
from docsan.runner.errors import RunnerError
from docsan.runner.modelinfo import load_model_info
from docsan.runner.planner import plan
from docsan.runner.tiers import BUILTIN_TIERS, GIB

MODELS = Path(__file__).parent / "data" / "models"


@pytest.mark.parametrize(
    ("model", "per_token"),
    [
        # 2 (K and V) × layers × KV heads × head_dim × 2 bytes (bf16)
        ("llama-3.1-8b", 2 * 32 * 8 * 128 * 2),  # GQA: 8 KV heads for 32 query heads → 131,072
        ("qwen2.5-7b-instruct", 2 * 28 * 4 * 128 * 2),  # GQA 7:1, head_dim 3584/28 = 128 → 57,344
        ("smollm2-135m-instruct", 2 * 30 * 3 * 64 * 2),  # → 23,040
        # MLA: one latent of kv_lora_rank + qk_rope_head_dim per layer, no factor 2, no heads → 70,272
        ("deepseek-v3", 61 * (512 + 64) * 2),
    ],
)
def test_kv_bytes_per_token(model: str, per_token: int) -> None:
    assert load_model_info(MODELS / model).kv_bytes_per_token(2) == per_token


def test_fp8_kv_cache_halves_the_per_token_bytes() -> None:
    info = load_model_info(MODELS / "llama-3.1-8b")
    assert info.kv_bytes_per_token(1) == 2 * 32 * 8 * 128


@pytest.mark.parametrize(
    ("model", "params"),
    [
        # embeddings 128256×4096 (untied: ×2) + 32 × (q 4096² + k,v 2×4096×1024 + o 4096² + MLP 3×4096×14336
        # + 2 norms) + final norm: the published 8,030,261,248
        ("llama-3.1-8b", 2 * 128256 * 4096 + 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 4096),
        # as above plus Qwen2's q/k/v biases (3584 + 2×512 per layer): 7,615,616,512
        (
            "qwen2.5-7b-instruct",
            2 * 152064 * 3584 + 28 * (2 * 3584**2 + 2 * 3584 * 512 + 3584 + 1024 + 3 * 3584 * 18944 + 2 * 3584) + 3584,
        ),
        # tied embeddings counted once: 134,515,008, the size of its own safetensors
        ("smollm2-135m-instruct", 49152 * 576 + 30 * (2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536 + 2 * 576) + 576),
        # DeepSeek-V3's main model (its model card: 671B, plus 14B of multi-token prediction not counted)
        ("deepseek-v3", 671_026_419_200),
    ],
)
def test_parameter_count_from_config(model: str, params: int) -> None:
    assert load_model_info(MODELS / model).param_count == params


def test_llama_8b_on_a10g_holds_three_full_length_sequences() -> None:
    """The incident's mistake made visible: 16 sequences configured, 3 fit."""
    p = plan(BUILTIN_TIERS["a10g"], load_model_info(MODELS / "llama-3.1-8b"))
    weights = 8_030_261_248 * 2
    budget = int(24 * GIB * 0.9)
    kv = budget - weights - GIB
    blocks = kv // (131072 * 16)
    assert p.weights_bytes == weights
    assert p.kv_capacity_bytes == kv
    assert p.kv_capacity_blocks == blocks == 2888
    assert p.kv_capacity_tokens == blocks * 16
    assert p.max_concurrent_seqs == blocks // (12288 // 16) == 3
    assert not p.ok
    assert "only 3 sequences fit" in p.problems[0]
    assert any("max_num_seqs = 3" in s for s in p.suggestions)


def test_qwen_7b_on_a100_fits() -> None:
    p = plan(BUILTIN_TIERS["a100"], load_model_info(MODELS / "qwen2.5-7b-instruct"))
    kv = int(80 * GIB * 0.9) - 7_615_616_512 * 2 - GIB
    assert p.kv_capacity_tokens == kv // (57344 * 16) * 16
    assert p.max_concurrent_seqs == kv // (57344 * 16) // (32768 // 16)
    assert p.ok


def test_weights_that_do_not_fit_are_refused_with_what_would() -> None:
    p = plan(BUILTIN_TIERS["t4"], load_model_info(MODELS / "llama-3.1-8b"))
    assert p.dtype == "float16"  # the tier's dtype: T4 has no bf16
    assert not p.ok and "exceed" in p.problems[0]
    assert "4-bit" in p.suggestions[0]


def test_deepseek_fp8_checkpoint_weighs_one_byte_per_parameter() -> None:
    p = plan(BUILTIN_TIERS["a100"], load_model_info(MODELS / "deepseek-v3"))
    assert p.mla and p.kv_bytes_per_token == 70272
    assert p.weights_bytes == 671_026_419_200
    assert not p.ok and "tensor parallelism" in p.suggestions[0]


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A safetensors file whose header describes ``tensors`` (dtype, shape) followed by zeroed data."""
    sizes = {"BF16": 2, "F32": 4, "F8_E4M3": 1}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return offset


def test_safetensors_headers_give_exact_bytes_without_loading(tmp_path: Path) -> None:
    cfg = json.loads((MODELS / "smollm2-135m-instruct" / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    a = _write_safetensors(tmp_path / "model-00001.safetensors", {"w": ("F8_E4M3", [64, 32]), "s": ("F32", [2])})
    b = _write_safetensors(tmp_path / "model-00002.safetensors", {"e": ("BF16", [10, 4])})
    info = load_model_info(tmp_path)
    assert info.safetensors_bytes == a + b == 64 * 32 + 8 + 80
    assert info.param_count == 64 * 32 + 2 + 40
    assert info.weight_bytes(2) == a + b  # quantized: loaded as stored


def test_corrupt_safetensors_header_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((MODELS / "smollm2-135m-instruct" / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(RunnerError, match="not plausible"):
        load_model_info(tmp_path)


def test_plan_cli_json_and_refusal() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["plan", "--tier", "a100", "--model", str(MODELS / "qwen2.5-7b-instruct"), "--json"])
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.stdout)
    for key in ("weights_bytes", "kv_bytes_per_token", "kv_capacity_tokens", "max_concurrent_seqs"):
        assert isinstance(data[key], int)
    assert data["kv_bytes_per_token"] == 57344
    bad = runner.invoke(app, ["plan", "--tier", "a10g", "--model", str(MODELS / "llama-3.1-8b")])
    assert bad.exit_code == ExitCode.REFUSED
    assert "only 3 sequences fit" in bad.stderr and "max_num_seqs = 3" in bad.stderr


def test_plan_cli_dtype_flag_changes_weight_bytes() -> None:
    out = CliRunner().invoke(
        app, ["plan", "--tier", "a100", "--model", str(MODELS / "qwen2.5-7b-instruct"), "--dtype", "float32", "--json"]
    )
    assert json.loads(out.stdout)["weights_bytes"] == 7_615_616_512 * 4


def test_real_safetensors_of_the_embedded_model_match_the_config_estimate() -> None:
    """The converted SmolLM2 folder: header-summed bytes = config-estimated parameters × 2 (bf16)."""
    from docsan.runner.embedded_model import embedded_model_dir
    from docsan.runner.modelinfo import estimate_params

    folder = embedded_model_dir()
    info = load_model_info(folder)
    cfg = json.loads((folder / "config.json").read_text())
    assert info.param_count == estimate_params(cfg) == 134_515_008
    assert info.safetensors_bytes == 2 * 134_515_008
    assert info.max_position_embeddings == 8192
