# Two commands on a fresh machine: `make demo` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The GP's compiled pass in Numba's on-disk cache (shared/gp/__pycache__), redone when its source changes.
NUMBA_STAMP := $(VENV)/.numba-warm-stamp
# Two cores: a threaded BLAS fighting a server subprocess made small GP fits 3-4x slower.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: install install-botorch demo test test-slow test-postgres bench report fuzz image lock clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip "setuptools>=70.1"  # 70.1 builds wheels without the `wheel` package
	$(PY) -m pip install --quiet -e ".[curator,dev,postgres]"
	@touch $(STAMP)

## The GP's Numba code compiled here, once (10 s on 2 cores; tools/warm_numba.py), not in a test, a Dask
## worker or the modeler's first run.
$(NUMBA_STAMP): $(STAMP) shared/gp/fused_step.py shared/gp/se_objective.py tools/warm_numba.py
	$(PY) tools/warm_numba.py
	@touch $(NUMBA_STAMP)

install: $(STAMP) $(NUMBA_STAMP)

## The BoTorch extra (its example then runs in `make test`): torch's CPU build pinned, since an unpinned torch
## pulls a CUDA build of several GB. Optuna is already in the dev extra.
install-botorch: $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0" -e ".[curator,dev,postgres,botorch]"

## Starts a curator on embedded SQLite (loopback), runs the modeler on each release, prints a table, writes a plot.
demo: $(STAMP) $(NUMBA_STAMP)
	$(PY) examples/demo.py

## The default suite in TEST_PROCESSES processes (pytest-xdist), a test file to a process: each process starts its own
## curator and Dask cluster when a test asks, and on PostgreSQL uses a database of its own (tests/conftest.py). Most
## tests wait on a server or a subprocess, so two processes keep two cores busy. PostgreSQL tests run when
## POBO_TEST_POSTGRES_URL is set.
TEST_PROCESSES ?= 2
test: $(STAMP) $(NUMBA_STAMP)
	$(PY) -m pytest -q -n $(TEST_PROCESSES) --dist loadfile

## Long checks: full reproductions and large-n runs.
test-slow: $(STAMP) $(NUMBA_STAMP)
	$(PY) -m pytest -q -m slow -n $(TEST_PROCESSES) --dist loadfile

## Benchmarks print tables beside the papers' numbers and write benchmarks/results/.
bench: $(STAMP) $(NUMBA_STAMP)
	$(PY) benchmarks/po_gp_ucb_synthetic.py
	$(PY) benchmarks/speed_gp_ucb.py

## The reproduction docs' generated parts (<!-- report:NAME -->) rendered again from benchmarks/results/;
## tests/benchmarks/test_report.py fails while a doc differs from what the files give.
report:
	$(PY) benchmarks/report.py

## Schemathesis against a live curator as a modeler and as the admin; figures printed, findings in build/fuzz/.
fuzz: $(STAMP)
	$(PY) tools/fuzz_api.py --examples 100 --seed 0 --findings build/fuzz/findings.md

## Runs docs/deployment.md's compose steps as written, with buildah standing in for Docker (root).
image: $(STAMP)
	PY=$(PY) tools/image/check_image.sh

## requirements.lock: every dependency of the image (and the build backend), pinned with hashes, for any platform.
lock:
	$(PYTHON) -m venv build/uv && build/uv/bin/pip install --quiet "uv>=0.5"
	printf 'setuptools>=68  # the build backend: the image installs the project with --no-build-isolation\n' | \
	  build/uv/bin/uv pip compile pyproject.toml - --extra curator --extra postgres --generate-hashes --universal \
	  --python-version 3.11 --custom-compile-command "make lock" --quiet -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info

## Static checks: ruff (pyflakes, pycodestyle, isort, bugbear, pyupgrade, blind excepts, unused noqa), mypy (every
## product package, files from pyproject.toml; with or without the torch and BoTorch extras) and the import contracts
## (.importlinter).
.PHONY: lint
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
