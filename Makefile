# Two commands set everything up on a fresh machine:
#   make demo   - create .venv if needed, install Ember with every backend, run the main demo
#   make test   - same set-up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch that this machine keeps on disk; override on other platforms,
# e.g. `make test TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
# Two pytest workers on 2 cores: one BLAS/OpenMP thread each avoids oversubscription.
PYTEST_ARGS ?= -q -n 2

.PHONY: demo test lint-imports install info bench bench-memory lint docs clean

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[all,dev]"
	touch $@

install: $(VENV)/.installed

# One BLAS/OpenMP thread: the demo's small matrices gain nothing from more, and threads spinning
# on a busy 2-core machine slow torch down tenfold.
demo: install
	OMP_NUM_THREADS=1 $(PY) -m ember demo

# The import-layer contracts of pyproject.toml (ARCHITECTURE.md, "Import layers").
lint-imports: install
	$(VENV)/bin/lint-imports --no-logo

test: install lint-imports
	OMP_NUM_THREADS=1 $(PY) -m pytest $(PYTEST_ARGS)

# Lint and types (CONTRIBUTING.md, "Lint and types"): ruff over the whole repository (package,
# tests, tutorials, benchmarks, docs scripts; rules in pyproject.toml [tool.ruff]; about a second,
# first so a finding fails fast) and mypy over ember/ ([tool.mypy]; one to two minutes). The suite
# runs ruff too (tests/test_lint.py); mypy runs here only. CI (.ci/run) calls this target.
lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

# The documentation site (mkdocs-material + mkdocstrings, the [docs] extra), offline and strict: a
# stale API page, a broken cross-reference or a missing page fails. Output: site/.
docs: install
	$(PY) docs/gen_api.py --check
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

info: install
	$(PY) -m ember info

bench: install
	$(PY) benchmarks/dispatch.py

# Memory and fixed costs, each case in a fresh process (Linux: reads /proc/self/status).
bench-memory: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/memory.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site build dist
