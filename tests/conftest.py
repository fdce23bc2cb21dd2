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
