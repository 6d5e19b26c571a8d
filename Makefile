# kwire developer entry points. `make run` and `make test` are the whole set-up on a fresh machine:
# both create (and then reuse) .venv and install what they need.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: run test lint typecheck unit install codegen-check bench docs clean broker interop

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,arrow,spark,lake]'
	$(BIN)/python -m compileall -q src/kwire > /dev/null  # bytecode even where PYTHONDONTWRITEBYTECODE is set
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/kwire run

lint: $(STAMP)
	$(BIN)/ruff check src tests tools bench
	$(BIN)/ruff format --check src tests tools bench

typecheck: $(STAMP)
	$(BIN)/mypy

codegen-check: $(STAMP)
	$(BIN)/kwire codegen --check

# The whole suite: lint, types, generated-code drift, then every test tier (unit, property, fuzz,
# oracle, spark) with warnings as errors (see pyproject's filterwarnings).
test: lint typecheck codegen-check
	$(BIN)/python -m pytest -q

# Real clients beyond PyPI's: kcat (Debian) and kafkajs (npm), installed here, then their tests
# (`make test` already runs the interop tests of the PyPI clients and Kafka's Java client).
interop: $(STAMP)
	bash tools/interop_extra.sh
	$(BIN)/python -m pytest -q -m interop_extra tests/interop

# A broker on localhost:9092 over .cache/broker-data (Ctrl-C stops it).
broker: $(STAMP)
	$(BIN)/kwire broker --data-dir .cache/broker-data --port 9092

unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not oracle and not spark and not interop"

# Regenerate what is generated from the specs: the codecs and the message reference page.
docs: $(STAMP)
	$(BIN)/kwire codegen --write
	$(BIN)/kwire codegen --reference > docs/messages.md

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache
