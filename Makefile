# Two entry points for people: `make gen` and `make test`. Both set up .venv first, with what
# the job needs: `make gen` the generator and the cpu runtime (no GPU bindings); `make test` also
# the test tools and the GPU bindings (the `gpu` extra), because CI compiles every kernel.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SETUP  := $(VENV)/.setup-done
TEST_SETUP := $(VENV)/.test-setup-done

# MPI for the cpu collectives: the system's where its mpiexec is on PATH, else MPICH's wheel.
MPI_EXTRA := $(if $(shell command -v mpiexec 2>/dev/null),mpi-system,mpi)

# The ROCm runtime the HIP kernels compile against (hiprtc) where there is no AMD GPU.
ROCM_DEBS := libamdhip64-5 libhiprtc-builtins5 rocm-device-libs

.PHONY: gen test lint bench check schema parity clean system-deps

$(SETUP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

$(TEST_SETUP): $(SETUP)
	$(BIN)/python -m pip install -q -e '.[test,gpu,$(MPI_EXTRA)]'
	touch $@

## system-deps: Debian's ROCm runtime, for compiling the HIP kernels (apt-get, as root or through sudo)
system-deps:
	@command -v dpkg >/dev/null || { echo "system-deps: not a Debian system; install a ROCm runtime with hiprtc yourself" >&2; exit 0; }; \
	missing=$$(for p in $(ROCM_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; \
	else echo "system-deps: run as root: apt-get install -y $$missing" >&2; exit 1; fi; \
	$$sudo apt-get update -q && $$sudo apt-get install -y -q --no-install-recommends $$missing

## gen: set up, regenerate generated/ from ops.yaml, run the demo on every available backend
gen: $(SETUP)
	$(BIN)/gen
	$(BIN)/python -m generator.tools.demo

## lint: ruff (lint and format), and mypy (the generator, the runtime, and each runtime module against its Protocol)
lint: $(TEST_SETUP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## test: set up (system packages too), fail on stale generated code, lint, run the whole test suite
test: system-deps $(TEST_SETUP) lint
	$(BIN)/gen --check
	$(BIN)/python -m pytest -q

## bench: generation time (beside torchgen, from the torch wheel) and dispatch cost (results in bench/results/)
BENCH_SETUP := $(VENV)/.bench-done
$(BENCH_SETUP): $(TEST_SETUP)
	$(BIN)/python -m pip install -q -e '.[test,gpu,$(MPI_EXTRA),bench]' && touch $@ \
	  || echo "bench: torch did not install; bench/run.py will say torchgen was not timed" >&2

# gen's time beside this earlier tree's, in one run: the last before the formatting passes and
# the split of generator/ by stage (make bench BENCH_BEFORE=REV for another; none for no comparison)
BENCH_BEFORE ?= 3035d97
bench: $(BENCH_SETUP)
	$(BIN)/python bench/run.py --before $(BENCH_BEFORE)

check: $(SETUP)
	$(BIN)/gen --check

schema: $(SETUP)
	$(BIN)/gen schema --write

parity: $(SETUP)
	$(BIN)/gen parity

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
