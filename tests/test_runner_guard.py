"""Guard and router on real documents with the bundled model's real tokenizer and chat template.

The backend is a recording double: these tests assert what does *not* reach an engine
(the real-engine happy path is in test_engine_embedded.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.errors import ConfigError
from docsan.runner.ask import ask, prepare
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.errors import GuardError
from docsan.runner.guard import resolve_max_tokens
from docsan.runner.prompt import ChatTokenizer, build_messages
from docsan.runner.queue import DeferredQueue
from docsan.runner.router import route
from docsan.runner.tiers import BUILTIN_TIERS
from tests.runner_support import FIXTURE_PDF, LONG_PDF, RecordingBackend, runner_config

Q = "What was the Q3 revenue?"


@pytest.fixture
def setup(tmp_path: Path):
    config = runner_config(tmp_path)
    return config, RecordingBackend(), DeferredQueue(config.runner.queue_path)


@pytest.fixture
def long_pdf() -> Path:
    if not LONG_PDF.is_file():
        pytest.skip(f"shared corpus not found at {LONG_PDF}")
    return LONG_PDF


def test_missing_max_tokens_takes_the_tier_default(setup) -> None:
    config, backend, queue = setup
    answer = ask(FIXTURE_PDF, Q, config, backend, queue)
    d = answer.prepared.decision
    assert d.tier == "t4" and d.max_tokens == BUILTIN_TIERS["t4"].default_max_tokens
    assert "max_tokens missing" in d.notes[0]
    assert backend.calls[0][1].max_tokens == d.max_tokens


@pytest.mark.parametrize("bad", [0, -5, "100", 2.5, True])
def test_bad_max_tokens_is_refused_and_never_reaches_an_engine(setup, bad: object) -> None:
    config, backend, queue = setup
    with pytest.raises(GuardError, match="max_tokens"):
        ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=bad)
    assert backend.calls == []


def test_coerce_replaces_a_bad_max_tokens_and_says_so(setup) -> None:
    config, backend, queue = setup
    answer = ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=0, coerce=True)
    assert answer.prepared.decision.max_tokens == 256
    assert any("max_tokens=0" in n and "replaced" in n for n in answer.prepared.decision.notes)
    assert len(backend.calls) == 1


def test_over_the_hard_limit_is_refused_with_the_numbers(setup) -> None:
    config, backend, queue = setup
    with pytest.raises(GuardError, match=r"exceeds limit 32768") as err:
        ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=40000)
    prompt = prepare(FIXTURE_PDF, Q, config, backend="remote").decision.prompt_tokens
    assert f"prompt {prompt} + max_tokens 40000 = {prompt + 40000} tokens" in str(err.value)
    assert backend.calls == []


def test_over_every_tiers_max_model_len_is_refused(tmp_path: Path) -> None:
    config = runner_config(tmp_path, {"tiers": {"a100": {"engine": {"max_model_len": 16384}}}})
    backend = RecordingBackend()
    with pytest.raises(GuardError, match=r"exceeds limit 16384 of every tier \(largest: a100\)"):
        ask(FIXTURE_PDF, Q, config, backend, DeferredQueue(config.runner.queue_path), max_tokens=20000)
    assert backend.calls == []


def test_embedded_engine_caps_every_tier_at_the_models_8192_positions(setup) -> None:
    config, _, queue = setup
    backend = RecordingBackend("embedded")
    with pytest.raises(GuardError, match="exceeds limit 8192"):
        ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=8000)
    assert backend.calls == []


def test_prompt_that_fits_but_answer_does_not_is_rerouted(setup) -> None:
    """vLLM would take the prompt on t4 (max_model_len 4096) and silently cut the answer; docsan moves it."""
    config, backend, queue = setup
    answer = ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=3900)
    d = answer.prepared.decision
    assert d.prompt_tokens < 2048 and d.tier == "a10g"
    assert any(n.startswith("re-routed t4 → a10g") for n in d.notes)
    assert backend.calls[0][0] == "a10g"


def test_forced_tier_that_cannot_hold_prompt_plus_answer_is_refused(setup) -> None:
    config, backend, queue = setup
    with pytest.raises(GuardError, match="exceeds limit 4096 of tier t4: lower --max-tokens to"):
        ask(FIXTURE_PDF, Q, config, backend, queue, max_tokens=3900, tier="t4")
    assert backend.calls == []


def test_long_non_priority_request_goes_to_the_deferred_queue(setup, long_pdf: Path) -> None:
    config, backend, queue = setup
    answer = ask(long_pdf, "What does the rule propose?", config, backend, queue)
    d = answer.prepared.decision
    assert d.prompt_tokens > 8192 and d.tier == "a100" and d.deferred
    assert backend.calls == []
    [job] = queue.list()
    assert job.id == answer.job_id and job.status == "pending" and job.prompt_tokens == d.prompt_tokens
    assert job.prompt_ids == answer.prepared.prompt_ids


def test_priority_lets_a_long_request_run_on_a100_in_real_time(setup, long_pdf: Path) -> None:
    config, backend, queue = setup
    answer = ask(long_pdf, "What does the rule propose?", config, backend, queue, priority=True)
    assert not answer.prepared.decision.deferred and answer.job_id is None
    assert [tier for tier, _ in backend.calls] == ["a100"]
    assert queue.list() == []


def test_budget_trims_the_document_into_the_short_tier(setup, long_pdf: Path) -> None:
    config, _, _ = setup
    p = prepare(long_pdf, "What does the rule propose?", config, backend="embedded", budget_tokens=1500)
    assert p.decision.prompt_tokens <= 1500 and p.decision.tier == "t4" and not p.decision.deferred
    assert p.tokens_removed_by_budget > 10000
    # The query-aware fit keeps what the question is about: the stemmed "propose" meets "proposed", "proposal".
    document = p.messages[0]["content"].split("Document:\n", 1)[1]
    assert document.lower().count("propos") >= 3


def test_prompt_tokens_include_the_chat_template(setup) -> None:
    config, _, _ = setup
    p = prepare(FIXTURE_PDF, Q, config, backend="embedded")
    tok = ChatTokenizer.load(embedded_model_dir())
    content_only = tok.count(p.messages[0]["content"])
    assert p.decision.prompt_tokens == len(p.prompt_ids) > content_only
    assert p.prompt_ids == tok.prompt_ids(build_messages(render_text_of(p), Q))


def render_text_of(p) -> str:
    """The document part of the prompt (everything between 'Document:' and the repeated question)."""
    content = p.messages[0]["content"]
    return content.split("Document:\n", 1)[1].rsplit(f"\n\nQuestion: {Q}", 1)[0]


def test_router_ranges_follow_the_tiers() -> None:
    tiers = BUILTIN_TIERS
    assert route(2047, None, tiers, hard_limit=32768).tier == "t4"
    assert route(2048, None, tiers, hard_limit=32768).tier == "a10g"
    d = route(8192, None, tiers, hard_limit=32768)
    assert (d.tier, d.deferred) == ("a100", True)
    assert route(8192, None, tiers, hard_limit=32768, priority=True).deferred is False
    with pytest.raises(GuardError, match="unknown tier 'h100'"):
        route(100, None, tiers, hard_limit=32768, forced="h100")


def test_resolve_max_tokens_messages() -> None:
    assert resolve_max_tokens(64, 256).value == 64 and resolve_max_tokens(64, 256).note is None
    with pytest.raises(GuardError, match="max_tokens must be ≥ 1"):
        resolve_max_tokens(-1, 256)
    with pytest.raises(GuardError, match="max_tokens must be an integer"):
        resolve_max_tokens("256", 256)


def test_dry_run_json_prints_the_decision_and_runs_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "docsan.toml"
    cfg.write_text(
        f"stages = {json.dumps(list(runner_config(tmp_path).stages))}\n"
        f'[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\n',
        encoding="utf-8",
    )
    runner = CliRunner()
    out = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--json", "--config", str(cfg)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert (data["tier"], data["max_tokens"], data["deferred"]) == ("t4", 256, False)
    assert data["prompt_tokens"] > 100
    refused = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--max-tokens", "0", "--config", str(cfg)])
    assert refused.exit_code == 3 and "max_tokens" in refused.stderr
    assert not (tmp_path / "q.sqlite3").exists() or DeferredQueue(tmp_path / "q.sqlite3").list() == []


def test_a_tier_name_that_is_no_tier_is_a_bad_argument(tmp_path: Path) -> None:
    # Exit 2 before the file is read (it does not exist here), as `docsan plan --tier` answers; 3 is for refusals.
    runner = CliRunner()
    ask = ["ask", str(tmp_path / "missing.pdf"), Q, "--dry-run", "--tier", "h100"]
    for command in (ask, ["plan", "--tier", "h100"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert result.stderr == "docsan: error: unknown tier 'h100': choose one of t4, a10g, a100\n"


def test_a_budget_of_zero_is_a_bad_argument_not_no_budget() -> None:
    result = CliRunner().invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", "0"])
    assert result.exit_code == 2 and "--budget" in result.output


def test_the_library_and_the_configuration_refuse_a_budget_of_zero_alike(tmp_path: Path) -> None:
    # Not "no budget", and not the configuration's budget either: the rule of docsan/config/token_budget.py.
    with pytest.raises(ConfigError, match=r"^budget_tokens: must be at least 1 token, got 0 \(leave it out for no"):
        prepare(FIXTURE_PDF, Q, runner_config(tmp_path, {"budget_tokens": 1000}), backend="embedded", budget_tokens=0)
    with pytest.raises(ConfigError, match=r": runner\.budget_tokens: must be at least 1 token, got 0 \(leave it out"):
        runner_config(tmp_path, {"budget_tokens": 0})


BUDGET_TOO_SMALL = re.compile(
    r"docsan: error: budget (\d+) tokens is below the (\d+) the prompt needs before any of the document "
    r"\(the chat template and the question: (\d+), the joins: 4\)"
)


def test_a_budget_the_prompt_template_fills_alone_is_a_bad_argument(tmp_path: Path) -> None:
    # Exit 2 with its numbers, one line, before the file is read (missing.pdf does not exist), as --tier and
    # --budget 0; the least budget it names is the real one.
    runner = CliRunner()
    for path in (FIXTURE_PDF, tmp_path / "missing.pdf"):
        result = runner.invoke(app, ["ask", str(path), Q, "--dry-run", "--budget", "5"])
        assert result.exit_code == 2, result.output
        found = BUDGET_TOO_SMALL.fullmatch(result.stderr.rstrip("\n"))
        assert found is not None, result.stderr
        budget, least, template = map(int, found.groups())
        assert budget == 5 and least == template + 5 and template > 5
    assert runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", str(least - 1)]).exit_code == 2
    # At the least it names, the template's check passes (this document's paragraphs are the next test's).
    passed = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", str(least)])
    assert BUDGET_TOO_SMALL.fullmatch(passed.stderr.rstrip("\n")) is None, passed.stderr


NO_ROOM = re.compile(
    r"docsan: error: (.+): budget (\d+) tokens leaves no room for any of the document; the least that keeps some "
    r"of it is (\d+) \(the chat template and the question: (\d+), the joins: 4\)"
)


def test_a_budget_that_leaves_no_room_for_any_paragraph_is_a_bad_argument_naming_the_least(tmp_path: Path) -> None:
    # Just above the template's own minimum, the README's fixture has no paragraph (nor a sentence or token
    # after its heading) that fits: the model would get the question alone. Exit 2, one line, like --budget 5.
    runner = CliRunner()
    template = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", "5"])
    floor = int(BUDGET_TOO_SMALL.fullmatch(template.stderr.rstrip("\n")).group(2))  # type: ignore[union-attr]
    result = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", str(floor)])
    assert result.exit_code == 2, result.output
    found = NO_ROOM.fullmatch(result.stderr.rstrip("\n"))
    assert found is not None, result.stderr
    name, budget, least, overhead = found.group(1), *map(int, found.groups()[1:])
    assert (name, budget) == (str(FIXTURE_PDF), floor) and least > floor
    # The least budget named is the real one: one token less still keeps nothing, it keeps some of the document.
    assert runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--budget", str(least - 1)]).exit_code == 2
    kept = runner.invoke(app, ["ask", str(FIXTURE_PDF), Q, "--dry-run", "--json", "--budget", str(least)])
    assert kept.exit_code == 0, kept.output
    assert overhead < json.loads(kept.stdout)["prompt_tokens"] <= least
    with pytest.raises(ConfigError, match=r"leaves no room for any of the document; the least that keeps some"):
        prepare(FIXTURE_PDF, Q, runner_config(tmp_path), backend="embedded", budget_tokens=floor)
