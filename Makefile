# sgi-run: the two commands are `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
FIDELITY ?= reduced
FIGURE ?=
# Test processes (pytest-xdist), each pinned to its own core (tests/conftest.py).
TEST_WORKERS ?= 2

.PHONY: run test test-fast figures docs bench bench-figures bench-suite clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $@

## run: set up and run the default experiment (Kubo oscillator, midpoint rule); print its summary
run: $(VENV)/.installed
	$(BIN)/sgi-run

## test: set up and run the whole test suite (every figure's smoke profile included); the 25 slowest tests listed
## (--max-worker-restart=0: a worker that dies ends the run, failed; under loadgroup a restarted worker hangs it)
test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --max-worker-restart=0 --durations=25

## test-fast: the inner loop: every test but those marked slow (a few minutes)
test-fast: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --max-worker-restart=0 -m "not slow" --durations=10

## figures: every paper figure at FIDELITY (smoke | reduced | paper); FIGURE=fig4_1 for one
figures: $(VENV)/.installed
	$(BIN)/sgi-figures --fidelity $(FIDELITY) $(if $(FIGURE),--only $(FIGURE))

## docs: the documentation site in site/ (open site/index.html): every figure a page, from gallery/paper and
## outputs/figures; strict, so a broken link fails it. NO_MKDOCS_2_WARNING: the material theme's notice about MkDocs 2
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## bench: throughput benchmarks, path-steps/s against paths beside the generator bound (on JAX's device),
## the engine's overhead on a matrix state, one Zeitlin su(128) IsoMP step,
## the Dask executor's scaling and the memory of 10^5..10^7-path runs; outputs/bench/
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/device_sweep.py
	$(BIN)/python benchmarks/pytree_overhead.py
	$(BIN)/python benchmarks/zeitlin_step.py
	$(BIN)/python benchmarks/implicit_methods.py
	$(BIN)/python benchmarks/scale.py
	$(BIN)/python benchmarks/shards_at_once.py

## bench-figures: wall time of every figure at FIDELITY from nothing (fresh run and compilation caches), one row each;
## outputs/bench/figures-<fidelity>.{md,json,log}
bench-figures: $(VENV)/.installed
	$(BIN)/python benchmarks/figures_wall_time.py --fidelity $(FIDELITY) $(if $(FIGURE),--only $(FIGURE))

## bench-suite: every method on every system it fits (sgi-bench): errors, orders against the claimed ones, invariant
## drifts and cost per system, at FIDELITY (smoke | reduced); SYSTEMS=kubo_undamped,rigid_body for some;
## outputs/bench-suite/<fidelity>/ (the site shows the copy kept in gallery/bench)
bench-suite: $(VENV)/.installed
	$(BIN)/sgi-bench --fidelity $(FIDELITY) $(if $(SYSTEMS),--systems $(SYSTEMS))

clean:
	rm -rf $(VENV) outputs/runs outputs/figures outputs/bench outputs/bench-suite site
