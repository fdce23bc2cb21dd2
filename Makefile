# tinytf: `make repro` runs the pipeline, `make test` runs the tests.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# MLflow's usage telemetry off, as .dvc/config turns DVC's analytics off
export MLFLOW_DISABLE_TELEMETRY ?= true

.PHONY: setup repro test lint ui clean

setup: $(STAMP)

# torch first and pinned: it installs the CPU wheel here; unpinned it pulls CUDA packages.
$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	touch $(STAMP)

# tinytf check first: DVC reads params.yaml itself, and would hold on an alias bomb for minutes
repro: setup
	tinytf check
	dvc repro

# a worker per core (pytest-xdist), a test file's tests on one worker: its module fixtures are
# built once (--dist loadgroup's groups do not reach the test ids under pytest 9). The longest
# files first, as tests.xml last timed them (tests/conftest.py); xdist's own reorder would undo it.
# Every test's seconds go to benchmarks/results/tests.xml (JUnit): commit it with a full run's figures
test: setup
	$(PY) -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=15 --junitxml=benchmarks/results/tests.xml

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# prints the link to the experiment's runs page, then serves with one worker and no job runner
ui: setup
	$(VENV)/bin/tinytf ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
