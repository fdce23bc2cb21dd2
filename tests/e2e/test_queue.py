"""DVC's experiment queue: two queued experiments run at once, and both reach MLflow."""

from __future__ import annotations

import pytest

from tests.helpers.queue import run_two_queued_experiments

pytestmark = pytest.mark.slow


def test_queued_experiments_run_two_at_once_and_both_reach_mlflow(workspace):
    run_two_queued_experiments(workspace)
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    evaluated = runs[runs["tags.tinytf.stage"] == "evaluate"]
    assert {"boot300", "boot400"} <= set(evaluated["tags.dvc.exp_name"].dropna())
    assert set(evaluated["status"]) == {"FINISHED"}
