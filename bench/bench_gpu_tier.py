"""GPU tier benchmark: a tier's engine arguments on a real GPU with in-process vLLM.

Self-contained: ``python bench/bench_gpu_tier.py --tier a10g [--model DIR] [--load-format dummy]``
prints JSON. Without a CUDA GPU (or without a CUDA build of vLLM) it prints
``{"skipped": "..."}`` and exits 0.

Measured, for the tier's typical prompt length (the middle of its token range, capped by
the model's context): time to first token of one request (prefill latency, compared with
the tier's latency target), one request's decode tokens/s, and the aggregate tokens/s of
max_num_seqs concurrent requests. ``--load-format dummy`` runs random weights of the model's
shape (vLLM's own option): speed depends on shapes, not values, so a folder holding only
config.json and the tokenizer is enough to measure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

DECODE_TOKENS = 128


def _skip(reason: str) -> dict[str, Any]:
    return {"skipped": reason}


def run(
    tier_name: str = "t4",
    model: str | None = None,
    *,
    load_format: str = "auto",
    gpu_memory_utilization: float | None = None,
    eager: bool = False,
) -> dict[str, Any]:
    try:
        import torch
    except ImportError as err:
        return _skip(f"torch not installed: {err}")
    if not torch.cuda.is_available():
        return _skip(f"no CUDA GPU visible to torch {torch.__version__}")
    try:
        from vllm import LLM, SamplingParams
    except ImportError as err:
        return _skip(f"vLLM not importable: {err}")

    from docsan.runner.backends.inprocess import inprocess_engine_kwargs
    from docsan.runner.modelinfo import load_model_info
    from docsan.runner.tiers import BUILTIN_TIERS

    tier = BUILTIN_TIERS[tier_name]
    notes: list[str] = []
    engine = tier.engine.model_copy(update={"model": model} if model else {})
    info = load_model_info(engine.model) if engine.model else None
    if info and engine.max_model_len > info.max_position_embeddings:
        notes.append(f"max_model_len {engine.max_model_len} capped to the model's {info.max_position_embeddings}")
        engine = engine.model_copy(update={"max_model_len": info.max_position_embeddings})
    if gpu_memory_utilization:
        notes.append(f"gpu_memory_utilization {engine.gpu_memory_utilization} → {gpu_memory_utilization}")
        engine = engine.model_copy(update={"gpu_memory_utilization": gpu_memory_utilization})
    cc = torch.cuda.get_device_capability()
    if engine.dtype == "bfloat16" and cc < (8, 0):
        engine = engine.model_copy(update={"dtype": "float16"})
        notes.append("bfloat16 → float16: this GPU has no bf16")
    tier = tier.model_copy(update={"engine": engine})
    kwargs = inprocess_engine_kwargs(tier)
    kwargs.update(load_format=load_format, enforce_eager=eager)

    t0 = time.perf_counter()
    llm = LLM(**kwargs)
    start_s = time.perf_counter() - t0

    upper = tier.max_prompt_tokens or tier.min_prompt_tokens * 2
    prompt_len = min((tier.min_prompt_tokens + upper) // 2, engine.max_model_len - DECODE_TOKENS - 1)
    vocab = llm.get_tokenizer().vocab_size

    def prompt(seed: int) -> dict[str, list[int]]:
        # Distinct token sequences per request, so prefix caching cannot share their prefill.
        return {"prompt_token_ids": [(seed * 7919 + i * 31) % (vocab - 100) + 100 for i in range(prompt_len)]}

    def timed(prompts: list[dict[str, list[int]]], max_tokens: int) -> tuple[float, int]:
        params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
        t = time.perf_counter()
        outs = llm.generate(prompts, params, use_tqdm=False)
        return time.perf_counter() - t, sum(len(o.outputs[0].token_ids) for o in outs)

    timed([prompt(0)], 4)  # warm-up
    ttft_s, _ = timed([prompt(1)], 1)
    one_s, one_tokens = timed([prompt(2)], DECODE_TOKENS)
    batch = [prompt(100 + i) for i in range(engine.max_num_seqs)]
    many_s, many_tokens = timed(batch, DECODE_TOKENS)
    return {
        "tier": tier.name,
        "gpu": torch.cuda.get_device_name(),
        "compute_capability": f"sm_{cc[0]}{cc[1]}",
        "model": kwargs["model"],
        "load_format": load_format,
        "dtype": engine.dtype,
        "enforce_eager": eager,
        "engine_start_seconds": round(start_s, 1),
        "prompt_tokens": prompt_len,
        "time_to_first_token_ms": round(ttft_s * 1000, 1),
        "latency_target_ms": tier.latency_target_ms,
        "meets_latency_target": ttft_s * 1000 <= tier.latency_target_ms,
        "decode_tokens_per_second_1_request": round(one_tokens / one_s, 1),
        "concurrent_requests": engine.max_num_seqs,
        "tokens_per_second_concurrent": round(many_tokens / many_s, 1),
        "seconds_concurrent_batch": round(many_s, 2),
        "notes": notes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", default="t4")
    ap.add_argument("--model", default=None, help="model folder [default: the tier's, else the converted SmolLM2]")
    ap.add_argument("--load-format", default="auto", help="auto (real weights) or dummy (random weights, same shape)")
    ap.add_argument("--gpu-memory-utilization", type=float, default=None)
    ap.add_argument("--eager", action="store_true", help="no CUDA graphs (faster start, slower decode)")
    a = ap.parse_args()
    result = run(a.tier, a.model, load_format=a.load_format, gpu_memory_utilization=a.gpu_memory_utilization,
                 eager=a.eager)  # fmt: skip
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
