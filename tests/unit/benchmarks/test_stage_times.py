"""benchmarks/stage_times.py: each stage's wall time from the MLflow runs the stages opened."""

from __future__ import annotations

import sys
import time

import pytest

from tests.helpers.paths import REPO
from tinytf.tracking.runs import stage_run

sys.path.insert(0, str(REPO / "benchmarks"))
import stage_times  # noqa: E402  (a script folder, not a package)


def test_stages_cells_summed_and_runs_inside_a_stage_not_counted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    began = time.time()
    with stage_run("prepare", {"a": 1}, "timing-test"):
        time.sleep(0.2)
    for cell in (1, 2):  # two cells of a matrix, under their group's parent run
        with stage_run("grid", {"cell": cell}, "timing-test", run_name=f"grid-{cell}", group_key="k"):
            time.sleep(0.1)
    with stage_run("finetune", {"b": 1}, "timing-test"):
        with stage_run("finetune", {"run": 1}, "timing-test", run_name="finetune-x", nested=True):
            time.sleep(0.3)
    found = stage_times.stage_seconds(f"sqlite:///{tmp_path / 'mlflow.db'}", began, time.time())
    assert set(found) == {"prepare", "grid", "finetune"}
    assert found["prepare"] == pytest.approx(0.2, abs=0.15)
    assert found["grid"] == pytest.approx(0.2, abs=0.2)  # both cells
    assert 0.3 <= found["finetune"] < 0.9  # the child's time is inside the stage's, once
    later = stage_times.stage_seconds(f"sqlite:///{tmp_path / 'mlflow.db'}", time.time() + 1, time.time() + 2)
    assert later == {}
