"""Tier profiles: TOML overrides, and validation that refuses bad engine arguments before any engine starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsan.config import config_from_dict
from docsan.errors import ConfigError
from docsan.runner.backends.inprocess import InProcessBackend, inprocess_engine_kwargs
from docsan.runner.errors import TierError
from docsan.runner.modelinfo import load_model_info
from docsan.runner.tiers import BUILTIN_TIERS, build_tiers
from docsan.runner.validate import tier_problems, validate_tier

MODELS = Path(__file__).parent / "data" / "models"


def _tier(name: str, **engine: object):
    return build_tiers({name: {"engine": engine}})[name]


def test_builtin_tiers_follow_the_seed_table() -> None:
    t4, a10g, a100 = (BUILTIN_TIERS[n] for n in ("t4", "a10g", "a100"))
    assert (t4.max_prompt_tokens, a10g.min_prompt_tokens, a10g.max_prompt_tokens, a100.min_prompt_tokens) == (
        2048, 2048, 8192, 8192,
    )  # fmt: skip
    assert [t.latency_target_ms for t in (t4, a10g, a100)] == [200, 500, 2000]
    assert t4.gpu.compute_capability == (7, 5) and not t4.gpu.supports_bf16 and not t4.gpu.supports_fp8
    assert a100.priority_only and not a10g.priority_only
    for tier in (t4, a10g, a100):
        assert tier_problems(tier, "cuda") == []


def test_toml_overrides_merge_into_builtin_and_add_tiers() -> None:
    cfg = config_from_dict(
        {
            "runner": {
                "tiers": {
                    "a100": {"gpu": {"memory_gib": 40}, "engine": {"max_model_len": 16384}},
                    "h100": {
                        "gpu": {"name": "H100", "memory_gib": 80, "compute_capability": [9, 0]},
                        "min_prompt_tokens": 32768,
                        "latency_target_ms": 3000,
                        "default_max_tokens": 1024,
                        "engine": {"max_model_len": 65536, "max_num_seqs": 4, "kv_cache_dtype": "fp8"},
                    },
                }
            }
        }
    )
    tiers = build_tiers(cfg.runner.tiers)
    assert tiers["a100"].gpu.memory_gib == 40
    assert tiers["a100"].gpu.name == "A100-80GB"  # untouched fields keep the built-in values
    assert tiers["a100"].engine.max_model_len == 16384 and tiers["a100"].engine.max_num_seqs == 8
    assert list(tiers) == ["t4", "a10g", "a100", "h100"]  # ordered by the prompt range they serve
    assert tier_problems(tiers["h100"], "cuda") == []  # fp8 is fine on sm_90


def test_bad_override_names_the_tier() -> None:
    with pytest.raises(TierError, match=r"runner\.tiers\.t4: .*block_size"):
        build_tiers({"t4": {"engine": {"block_size": 0}}})
    with pytest.raises(ConfigError, match="runner"):
        config_from_dict({"runner": {"no_such_option": 1}})


@pytest.mark.parametrize(
    ("tier", "engine", "message"),
    [
        ("t4", {"dtype": "bfloat16"}, 'bfloat16 needs compute capability 8.0+, T4 is sm_75: use dtype = "float16"'),
        ("a10g", {"quantization": "fp8"}, "needs compute capability 8.9+"),
        ("a100", {"kv_cache_dtype": "fp8"}, 'A100-80GB is sm_80: use kv_cache_dtype = "auto"'),
        ("a100", {"quantization": "fp16"}, "is a dtype, not a quantization method: remove quantization and set dtype"),
        ("a10g", {"block_size": 8}, "multiple of 16: use block_size = 16"),
        ("a10g", {"enable_chunked_prefill": False}, "enable_chunked_prefill = true"),
    ],
)
def test_validation_refuses_with_a_suggestion(tier: str, engine: dict[str, object], message: str) -> None:
    with pytest.raises(TierError, match=f"tier {tier}: ") as err:
        validate_tier(_tier(tier, **engine), "cuda")
    assert message in str(err.value)


def test_cpu_backend_needs_block_size_multiple_of_32() -> None:
    assert "multiple of 32: use block_size = 32" in " ".join(tier_problems(_tier("t4", block_size=16), "cpu"))
    assert tier_problems(_tier("t4", block_size=64), "cpu") == []
    with pytest.raises(ConfigError, match=r"runner\.embedded\.block_size: Input should be a multiple of 32"):
        config_from_dict({"runner": {"embedded": {"block_size": 48}}})


def test_max_model_len_above_the_models_positions() -> None:
    smol = load_model_info(MODELS / "smollm2-135m-instruct")
    problems = tier_problems(BUILTIN_TIERS["a100"], "cuda", smol)
    assert problems == [
        "max_model_len 32768 is above smollm2-135m-instruct's position limit 8192 (max_position_embeddings): "
        "use max_model_len = 8192"
    ]
    assert tier_problems(BUILTIN_TIERS["a100"], "cuda", load_model_info(MODELS / "llama-3.1-8b")) == []


def test_invalid_tier_never_starts_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation runs before vLLM is even imported: a broken profile costs no engine start."""
    import docsan.runner.backends.inprocess as inprocess

    started: list[object] = []
    monkeypatch.setattr(inprocess, "VllmEngine", lambda **kw: started.append(kw))
    tier = _tier("t4", dtype="bfloat16", model=str(MODELS / "llama-3.1-8b"))
    with pytest.raises(TierError, match="bfloat16"):
        InProcessBackend().engine(tier)
    assert started == []


def test_inprocess_engine_arguments_are_the_tiers() -> None:
    tier = _tier("a10g", model=str(MODELS / "qwen2.5-7b-instruct"), kv_cache_dtype="auto", quantization="awq")
    kwargs = inprocess_engine_kwargs(tier)
    assert kwargs == {
        "model": str(MODELS / "qwen2.5-7b-instruct"),
        "dtype": "bfloat16",
        "max_model_len": 12288,
        "block_size": 16,
        "max_num_seqs": 8,
        "gpu_memory_utilization": 0.9,
        "kv_cache_dtype": "auto",
        "enable_prefix_caching": True,
        "enable_chunked_prefill": True,
        "quantization": "awq",
        "max_num_batched_tokens": 4096,
    }
