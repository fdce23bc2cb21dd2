"""Bring-your-own data under `dvc repro`: the data files are deps, and a failed prepare loses nothing.

Runs the real `prepare` stage through DVC in a temporary copy of the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import repo_copy, tracked_env

pytestmark = pytest.mark.slow


def dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`dvc` in `root` with this interpreter's environment first on PATH; its exit status is the test's to check."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        [str(Path(sys.executable).parent / "dvc"), *args], cwd=root, env=env, capture_output=True, text=True
    )


def write_reviews(path: Path, n: int, flip: bool = False) -> None:
    labels = ["pos", "neg"] if not flip else ["neg", "pos"]
    frame = pd.DataFrame(
        {"review": [f"review number {i}" for i in range(n)], "label": [labels[i % 2] for i in range(n)]}
    )
    frame.to_csv(path, index=False)


ROWS = 400  # in the prepared workspace's data/raw/reviews.csv


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """A repository copy whose prepare stage read a user's CSV; tests work on copies of it."""
    root = repo_copy(tmp_path_factory.mktemp("byo"))
    write_reviews(root / "data/raw/reviews.csv", ROWS)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["prepare"]["sentiment"].update(
        source="files", files={"train": "data/raw/reviews.csv"}, text_column="review", max_rows=0
    )
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    result = dvc(root, "repro", "prepare")
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def workspace(prepared, tmp_path) -> Path:
    """The prepared repository, copied for one test: each passes alone and in any order."""
    return Path(shutil.copytree(prepared, tmp_path / "repo", symlinks=True))


def sentiment_rows(root: Path) -> int:
    return sum(
        len(pd.read_parquet(root / f"data/prepared/sentiment/{s}.parquet"))
        for s in ("train", "validation", "test")
    )


def test_editing_a_data_file_makes_dvc_status_list_prepare(workspace):
    assert sentiment_rows(workspace) == ROWS
    write_reviews(workspace / "data/raw/reviews.csv", 300, flip=True)
    status = dvc(workspace, "status").stdout
    assert "prepare:" in status and "modified:           data/raw" in status, status
    result = dvc(workspace, "repro", "prepare")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sentiment_rows(workspace) == 300


def documented_restore() -> str:
    """The command docs/pipeline.md (linked from README.md) gives for getting a failed stage's last
    outputs back."""
    text = (REPO / "docs/pipeline.md").read_text(encoding="utf-8")
    found = re.search(r"After a failed stage[^`]*`([^`]+)`", text)
    assert found, "docs/pipeline.md no longer says how to get a failed stage's outputs back"
    return found.group(1)


def test_a_failed_prepare_under_dvc_is_undone_by_the_documented_command(workspace):
    """DVC deletes a stage's outputs before running it (no `persist`: the run cache needs that);
    the last good ones come back from DVC's cache with the command README.md gives."""
    outputs = ["data/prepared/sentiment/train.parquet", "data/reports/data.md", "data/reports/data.json"]
    before = {name: (workspace / name).read_bytes() for name in outputs}
    path = workspace / "data/raw/reviews.csv"
    path.write_text(path.read_text() + '"an open quote,pos\nreview,neg\n')
    result = dvc(workspace, "repro", "prepare")
    assert result.returncode != 0
    line = ROWS + 2  # the header, then ROWS rows
    assert f"reviews.csv: line {line}: a quoted field opened on this line is never closed" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    command = documented_restore().replace("STAGE", "prepare")
    restored = subprocess.run(["bash", "-c", command], cwd=workspace, env=tracked_env(), capture_output=True)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert {name: (workspace / name).read_bytes() for name in outputs} == before


def test_a_data_file_outside_data_raw_is_refused(workspace, tmp_path):
    outside = tmp_path / "reviews.csv"
    write_reviews(outside, 100)
    params_file = workspace / "params.yaml"
    original = params_file.read_text()
    params = yaml.safe_load(original)
    params["prepare"]["sentiment"]["files"] = {"train": str(outside)}
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        result = dvc(workspace, "repro", "prepare")
    finally:
        params_file.write_text(original)
    assert result.returncode != 0
    assert f"prepare.sentiment.files.train: {outside} is outside data/raw/" in result.stderr
