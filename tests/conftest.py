"""Fixtures every test may use. Real data is read from ../shared/data (never copied into the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.paths import REPO, SHARED_DATA


@pytest.fixture
def shared_data() -> Path:
    if not (SHARED_DATA / "sst2").exists():
        pytest.skip(f"{SHARED_DATA} not present (set TINYTF_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _no_tracking_by_default(monkeypatch):
    # unit tests must not write into the repo's mlflow.db; tracking tests opt back in
    monkeypatch.setenv("TINYTF_TRACKING", "0")


RECORDED = REPO / "benchmarks" / "results" / "tests.xml"  # the last full run's per-test seconds


def recorded_seconds_by_file(junit: Path = RECORDED) -> dict[str, float]:
    """Each test file's seconds in a JUnit file, by dotted module (`tests.e2e.test_pipeline`); a
    test class's name (capitalised) is cut from its `classname`. Empty where there is no file."""
    import xml.etree.ElementTree as ET

    if not junit.exists():
        return {}
    seconds: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = ".".join(p for p in case.get("classname", "").split(".") if not p[:1].isupper())
        seconds[module] = seconds.get(module, 0.0) + float(case.get("time") or 0)
    return seconds


def pytest_collection_modifyitems(config, items):
    """Under xdist, the longest files first, as the last full run timed them (a file's tests keep
    their order). `make test` runs `--dist loadfile --no-loadscope-reorder`: a worker takes the next
    file whenever it is nearly done, so the long files start at once and the short ones even out
    the end; xdist's own order (most tests first) left the one-test pipelines for last, where one
    worker could run them while the other had nothing left."""
    if not hasattr(config, "workerinput"):
        return
    seconds = recorded_seconds_by_file()

    def file_seconds(item) -> float:
        return seconds.get(item.nodeid.split("::")[0].removesuffix(".py").replace("/", "."), 0.0)

    items.sort(key=file_seconds, reverse=True)  # stable: the tests of one file stay in order
