"""Fixtures every test may use. Real data is read from ../shared/data (never copied into the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import SHARED_DATA


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "sst2").exists():
        pytest.skip(f"{SHARED_DATA} not present (set TINYTF_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _no_tracking_by_default(monkeypatch):
    # unit tests must not write into the repo's mlflow.db; tracking tests opt back in
    monkeypatch.setenv("TINYTF_TRACKING", "0")


def pytest_collection_modifyitems(items):
    """For pytest-xdist's `--dist loadgroup` (`make test` runs two or more workers): a module's
    tests go to one worker, so its module fixtures are built once; every test on the tiny
    preset's run (`tiny_run`, tests/e2e/conftest.py) goes to one worker, which builds it once."""
    for item in items:
        group = "tiny-run" if "tiny_run" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
