# tinytf: `make repro` runs the pipeline, `make test` runs the tests.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

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

# a worker per core (pytest-xdist); tests/conftest.py keeps a module's tests, and those on the
# tiny preset's run, on one worker each, so their fixtures are built once
test: setup
	$(PY) -m pytest -n auto --dist loadgroup --durations=15

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

ui: setup
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
