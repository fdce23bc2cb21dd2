"""The real pipeline, end to end, on the tiny preset in a temporary copy of the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.slow
# stage -> MLflow runs it makes on the tiny preset (variants: 1 pos x 2 merges x 2 seeds)
RUNS = {"prepare": 1, "tokenize": 1, "pretrain": 1, "variants": 4, "variants_table": 1}
DVC_STAGES = ["prepare", "tokenize", "pretrain", "variants_table"] + [
    f"variants@learned-{merge}-{seed}" for merge in ("concat", "reweight") for seed in (1, 2)
]


def repo_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [f for f in listed if (REPO / f).is_file()]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for name in repo_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    (root / "dvc.lock").unlink(missing_ok=True)  # the committed lock is for the default params
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([sys.executable, "-m", "tinytf.cli", "preset", "tiny"], cwd=root, check=True)
    return root


def dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["TINYTF_TRACKING"] = "1"
    env.pop("MLFLOW_TRACKING_URI", None)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "dvc"), *args], cwd=root, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_repro_writes_every_output(workspace):
    dvc(workspace, "repro")
    import numpy as np
    import pandas as pd

    for split in ("train", "validation", "test"):
        corpus = pd.read_parquet(workspace / f"data/prepared/corpus/{split}.parquet")
        assert list(corpus.columns) == ["text"] and 0 < len(corpus) <= 2000
        sentiment = pd.read_parquet(workspace / f"data/prepared/sentiment/{split}.parquet")
        assert set(sentiment["label"]) <= {0, 1}
        ids = np.load(workspace / f"data/tokens/corpus/{split}.npy")
        assert ids.dtype == np.uint16 and ids.max() < 400
    assert (workspace / "data/tokenizer.json").exists()
    assert "## sentiment: `rotten_tomatoes`" in (workspace / "reports/data.md").read_text()
    assert (workspace / "dvc.lock").exists()
    import json

    metrics = json.loads((workspace / "reports/pretrain/metrics.json").read_text())
    assert metrics["steps"] == 8 and metrics["validation_perplexity"] > 1
    assert set(metrics["samples"]) == {"normal", "weird", "long"}
    assert (workspace / "data/models/pretrained.pt").exists()
    epochs = pd.read_csv(workspace / "reports/pretrain/epochs.csv")
    assert epochs["epoch"].tolist() == [1, 2]
    table = (workspace / "reports/variants/variants.md").read_text()
    assert "| learned" in table and "reweight" in table and " ± " in table


def test_second_repro_does_nothing(workspace):
    out = dvc(workspace, "repro").stdout
    for stage in DVC_STAGES:
        assert f"Stage '{stage}' didn't change, skipping" in out
    assert "Running stage" not in out


def test_mlflow_store_holds_one_run_per_stage(workspace):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    assert runs["tags.tinytf.stage"].value_counts().to_dict() == RUNS
    assert set(runs["status"]) == {"FINISHED"}
    prepare = runs[runs["tags.tinytf.stage"] == "prepare"].iloc[0]
    assert prepare["params.prepare.corpus.max_rows"] == "2000"
    inputs = mlflow.get_run(prepare["run_id"]).inputs.dataset_inputs
    assert len(inputs) == 6 and all(d.dataset.digest for d in inputs)
