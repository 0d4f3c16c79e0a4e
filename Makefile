# Two entry points for people: `make gen` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SETUP  := $(VENV)/.setup-done

.PHONY: gen test bench check schema parity clean

$(SETUP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

## gen: set up, regenerate generated/ from ops.yaml, run the demo on every available backend
gen: $(SETUP)
	$(BIN)/gen
	$(BIN)/python -m generator.demo

## test: set up, fail on stale generated code, run the whole test suite
test: $(SETUP)
	$(BIN)/gen --check
	$(BIN)/python -m pytest -q

## bench: generation time and dispatch cost (results in bench/)
bench: $(SETUP)
	$(BIN)/python bench/run.py

check: $(SETUP)
	$(BIN)/gen --check

schema: $(SETUP)
	$(BIN)/gen schema --write

parity: $(SETUP)
	$(BIN)/gen parity

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
