"""Shared fixtures. Real data is read from ../shared/data (never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TINYTF_SHARED_DATA", REPO.parent / "shared" / "data"))


def fake_report_tree(reports: Path) -> Path:
    """The files a preset export copies, each holding its own relative path, under `reports`."""
    for rel in ("README.md", "metrics.json", "finetune/summary.json", "baselines/summary.json",
                "variants/summary.json", "tables/a.md", "plots/a.png"):  # fmt: skip
        (reports / rel).parent.mkdir(parents=True, exist_ok=True)
        (reports / rel).write_text(rel)
    return reports


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "sst2").exists():
        pytest.skip(f"{SHARED_DATA} not present (set TINYTF_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _no_tracking_by_default(monkeypatch):
    # unit tests must not write into the repo's mlflow.db; tracking tests opt back in
    monkeypatch.setenv("TINYTF_TRACKING", "0")
