"""The real embedded engine (vLLM CPU + SmolLM2-135M-Instruct): one engine for the whole session.

Kept few and short (small max_tokens): each generated token costs real CPU time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.runner.ask import prepare
from docsan.runner.backends.base import GenerationRequest
from docsan.runner.backends.embedded import embedded_engine
from docsan.runner.backends.vllm_engine import VllmEngine
from docsan.runner.queue import DeferredQueue
from tests.runner_support import FIXTURE_PDF, ROOT, runner_config

pytestmark = [pytest.mark.engine, pytest.mark.slow]

Q = "What was the Q3 revenue?"


@pytest.fixture(scope="session")
def engine() -> VllmEngine:
    # The same arguments the CLI's embedded backend builds, so CLI tests reuse this engine.
    return embedded_engine()


def _config_file(tmp_path: Path) -> Path:
    cfg = tmp_path / "docsan.toml"
    stages = json.dumps(list(runner_config(tmp_path).stages))
    cfg.write_text(f'stages = {stages}\n[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\n', encoding="utf-8")
    return cfg


def test_ask_answers_from_the_document(engine: VllmEngine, tmp_path: Path) -> None:
    out = CliRunner().invoke(
        app, ["ask", str(FIXTURE_PDF), Q, "--max-tokens", "24", "--json", "--config", str(_config_file(tmp_path))]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["tier"] == "t4" and data["backend"] == "embedded" and not data["deferred"]
    assert 0 < data["answer_tokens"] <= 24
    # The figure is on page 2 of the fixture: "The Q3 revenue was 42.13 million yuan".
    assert "42.13" in data["answer"] or "4,213" in data["answer"]


def test_streamed_pieces_and_token_counts_match_the_router(engine: VllmEngine, tmp_path: Path) -> None:
    p = prepare(FIXTURE_PDF, Q, runner_config(tmp_path), backend="embedded", max_tokens=8)
    pieces: list[str] = []
    req = GenerationRequest(messages=p.messages, prompt_ids=p.prompt_ids, max_tokens=p.decision.max_tokens)
    gen = engine.generate(req, on_text=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == gen.text
    # The engine saw exactly the tokens the router counted (chat template included).
    assert gen.prompt_tokens == p.decision.prompt_tokens
    assert gen.completion_tokens <= 8
    assert gen.finish_reason in {"stop", "length"}
    assert gen.finish_reason != "length" or gen.completion_tokens == 8


def test_queue_run_drains_jobs_on_the_engine(engine: VllmEngine, tmp_path: Path) -> None:
    cfg = _config_file(tmp_path)
    p = prepare(FIXTURE_PDF, Q, runner_config(tmp_path), backend="embedded", max_tokens=6)
    queue = DeferredQueue(tmp_path / "q.sqlite3")
    # Queued for a remote a100 (32k context): too long for the embedded model's 8192 positions.
    too_long = queue.submit(
        tier="a100", prompt_tokens=8190, max_tokens=64, source="long.pdf", question=Q,
        messages=p.messages, prompt_ids=(p.prompt_ids * 20)[:8190],
    )  # fmt: skip
    job = queue.submit(
        tier="a100", prompt_tokens=p.decision.prompt_tokens, max_tokens=6, source=str(FIXTURE_PDF),
        question=Q, messages=p.messages, prompt_ids=p.prompt_ids,
    )  # fmt: skip
    out = CliRunner().invoke(app, ["queue", "run", "--config", str(cfg)])
    assert out.exit_code == 1, out.output  # one job failed
    failed = queue.get(too_long)
    assert failed is not None and failed.status == "failed"
    assert "prompt 8190 + max_tokens 64 tokens exceeds limit 8192" in (failed.error or "")
    done = queue.get(job)
    assert done is not None and done.status == "done"
    assert done.answer and 0 < (done.completion_tokens or 0) <= 6


def test_ask_shows_the_engines_error_and_not_torchs_triton_line(tmp_path: Path) -> None:
    # A fresh process: torch's "Triton not available" warning comes once per process, while vLLM sets up the
    # model; 1 KiB of KV cache then makes the engine fail at its next step, an error the user must see.
    cfg = tmp_path / "docsan.toml"
    cfg.write_text(
        f'[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\n[runner.embedded]\nkv_cache_bytes = 1024\n',
        encoding="utf-8",
    )
    args = [sys.executable, "-m", "cli", "ask", str(FIXTURE_PDF), Q, "--max-tokens", "4", "--config", str(cfg)]
    run = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    assert "docsan: error: vLLM could not start: ValueError: No available memory for the cache blocks" in run.stderr
    assert "Triton not available" not in run.stderr
