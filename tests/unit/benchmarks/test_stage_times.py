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
    import mlflow

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
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    found = stage_times.stage_seconds(store, began, time.time())
    # each run's own duration as the store holds it: exact however loaded the machine is (a
    # tolerance around the sleeps failed under load: MLflow's own writes are in a run's time)
    mlflow.set_tracking_uri(store)
    runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
    took = {r.info.run_name: (r.info.end_time - r.info.start_time) / 1000 for r in runs}
    parent = next(
        r.info.run_name
        for r in runs
        if r.data.tags.get("tinytf.stage") == "finetune" and "mlflow.parentRunId" not in r.data.tags
    )
    assert set(found) == {"prepare", "grid", "finetune"}
    assert found["prepare"] == pytest.approx(took["prepare"]) and found["prepare"] >= 0.2
    # both cells, and not their group's parent
    assert found["grid"] == pytest.approx(took["grid-1"] + took["grid-2"]) and found["grid"] >= 0.2
    # the child's time is inside the stage's, counted once: the stage's run alone
    assert found["finetune"] == pytest.approx(took[parent]) and took[parent] >= took["finetune-x"] >= 0.3
    later = stage_times.stage_seconds(store, time.time() + 1, time.time() + 2)
    assert later == {}
