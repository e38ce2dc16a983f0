"""One in-process vLLM engine (``vllm.LLM``), driven step by step so answers can stream.

Shared by the embedded CPU backend and the in-process GPU backend: they differ only in
the engine arguments they build. vLLM is imported lazily, so the rest of docsan works
without the 'engine' extra.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import warnings
from pathlib import Path
from typing import Any

from docsan.runner.backends.base import Generation, GenerationRequest, OnText
from docsan.runner.errors import RunnerError


def prepare_env() -> None:
    """Environment vLLM reads at import time; explicit user settings win."""
    # In-process engine core: starts in seconds instead of spawning a second process.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # vLLM's INFO/WARNING lines (thread binding, tcmalloc hints) would drown the answer on a terminal.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    # torch's C++ logger adds NUMA lines for the same reason.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    # "W... torch/_library/triton.py:53] Triton not available, find_triton_kernels = []" on every start: the
    # CPU build has no Triton, and vLLM's model set-up asks torch for Triton kernels anyway. Only that one
    # logger (its only warning) is raised to ERROR; torch's other loggers keep their warnings. Not the "torch"
    # logger: importing torch sets that back to WARNING (torch._logging), and this one it leaves alone.
    logging.getLogger("torch._library.triton").setLevel(logging.ERROR)
    # vLLM touches a deprecated torch.distributed name at import; the warning is theirs, not the user's.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm(\.|$)")


class VllmEngine:
    """A started ``vllm.LLM``; ``generate`` runs one request, ``generate_many`` a concurrent batch."""

    def __init__(self, **llm_kwargs: Any) -> None:
        prepare_env()
        try:
            from vllm import LLM
        except ImportError as err:
            raise RunnerError(f"the vLLM engine is not installed ({err}): install docsan's 'engine' extra") from None
        t0 = time.perf_counter()
        try:
            # No weight-loading progress bar: the answer is what the terminal is for.
            self.llm = LLM(**{"use_tqdm_on_load": False, **llm_kwargs})
        except Exception as err:  # noqa: BLE001 - vLLM raises many types; the user needs one line
            raise RunnerError(f"vLLM could not start: {type(err).__name__}: {err}") from None
        self.start_seconds = time.perf_counter() - t0
        self.kwargs = llm_kwargs
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._ids = itertools.count()

    def generate(self, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        return self.generate_many([request], on_text)[0]

    def generate_many(self, requests: list[GenerationRequest], on_text: OnText | None = None) -> list[Generation]:
        """Run ``requests`` together (continuous batching); ``on_text`` streams the first request's text."""
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        engine = self.llm.llm_engine
        t0 = time.perf_counter()
        state: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for req in requests:
            # The router already guarantees this; checked again here because the deferred queue can hand
            # over jobs routed for another backend, and vLLM would otherwise accept and cut them short.
            if len(req.prompt_ids) + req.max_tokens > self.max_model_len:
                raise RunnerError(
                    f"prompt {len(req.prompt_ids)} + max_tokens {req.max_tokens} tokens exceeds limit "
                    f"{self.max_model_len} of this engine ({Path(str(self.kwargs['model'])).name})"
                )
        for req in requests:
            rid = f"docsan-{next(self._ids)}"
            params = SamplingParams(
                max_tokens=req.max_tokens, temperature=req.temperature, output_kind=RequestOutputKind.DELTA
            )
            engine.add_request(rid, {"prompt_token_ids": req.prompt_ids}, params)
            state[rid] = {"text": [], "tokens": 0, "finish": None, "first": None, "done": None, "prompt": 0}
            order.append(rid)
        while engine.has_unfinished_requests():
            for out in engine.step():
                st = state[out.request_id]
                piece = out.outputs[0]
                if piece.text:
                    if st["first"] is None:
                        st["first"] = time.perf_counter() - t0
                    st["text"].append(piece.text)
                    if on_text is not None and out.request_id == order[0]:
                        on_text(piece.text)
                st["tokens"] += len(piece.token_ids)
                st["prompt"] = len(out.prompt_token_ids or ())
                if out.finished:
                    st["finish"] = piece.finish_reason
                    st["done"] = time.perf_counter() - t0
        return [
            Generation(
                text="".join(state[rid]["text"]),
                prompt_tokens=state[rid]["prompt"],
                completion_tokens=state[rid]["tokens"],
                finish_reason=state[rid]["finish"],
                seconds=state[rid]["done"] or time.perf_counter() - t0,
                first_token_seconds=state[rid]["first"],
            )
            for rid in order
        ]
