"""Embedded engine benchmark: start-up time and generation speed of vLLM's CPU build with SmolLM2-135M.

Measures, in one process: the (cached) model conversion, the engine start, one request's
tokens/s and time to first token, and four concurrent requests' aggregate tokens/s; the
concurrency gain is the ratio against the single request measured in the same run.
Answers are greedy and run to max_tokens (ignore_eos), so every run generates the same count.
"""

from __future__ import annotations

import json
import time

MAX_TOKENS = 64
PROMPT = "Write a detailed report on the quarterly revenue of a knowledge-base question answering service."


def _timed_batch(llm: object, prompts: list[list[int]]) -> tuple[float, int]:
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, ignore_eos=True)
    t0 = time.perf_counter()
    outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)  # type: ignore[attr-defined]
    return time.perf_counter() - t0, sum(len(o.outputs[0].token_ids) for o in outs)


def run() -> dict[str, object]:
    from docsan.config.runner import EmbeddedConfig
    from docsan.runner.backends.base import GenerationRequest
    from docsan.runner.backends.embedded import embedded_engine_kwargs
    from docsan.runner.backends.vllm_engine import VllmEngine, prepare_env
    from docsan.runner.embedded_model import embedded_model_dir
    from docsan.runner.prompt import ChatTokenizer

    t0 = time.perf_counter()
    model_dir = embedded_model_dir()
    model_seconds = time.perf_counter() - t0  # ~0 when already converted; the conversion otherwise
    prepare_env()
    t0 = time.perf_counter()
    import vllm  # noqa: F401 - timed: the import is part of a cold `docsan ask`

    import_seconds = time.perf_counter() - t0
    engine = VllmEngine(**embedded_engine_kwargs(model_dir, EmbeddedConfig()))
    tok = ChatTokenizer.load(model_dir)
    ids = tok.prompt_ids([{"role": "user", "content": PROMPT}])
    # Warm-up: the first step allocates buffers; not part of the steady-state numbers.
    engine.generate(GenerationRequest(messages=[], prompt_ids=ids, max_tokens=4))
    first = engine.generate(GenerationRequest(messages=[], prompt_ids=ids, max_tokens=8))
    one_s, one_tokens = _timed_batch(engine.llm, [ids])
    # Four distinct prompts, so prefix caching cannot share their prefill.
    four = [tok.prompt_ids([{"role": "user", "content": f"{PROMPT} Part {i}."}]) for i in range(4)]
    four_s, four_tokens = _timed_batch(engine.llm, four)
    single = one_tokens / one_s
    return {
        "model": model_dir.name,
        "prompt_tokens": len(ids),
        "max_tokens": MAX_TOKENS,
        "model_ready_seconds": round(model_seconds, 2),
        "vllm_import_seconds": round(import_seconds, 2),
        "engine_start_seconds": round(engine.start_seconds, 2),
        "time_to_first_token_seconds": round(first.first_token_seconds or 0.0, 3),
        "tokens_per_second_1_request": round(single, 1),
        "tokens_per_second_4_concurrent": round(four_tokens / four_s, 1),
        "concurrency_gain_4_vs_1": round((four_tokens / four_s) / single, 2),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
