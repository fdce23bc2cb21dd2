"""`tinytf data add`: a user's CSV to a finished `prepare` in one command, in a copy of the repo."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tests.helpers.repo import repo_copy, tracked_env

pytestmark = pytest.mark.slow

ROWS = 60


def test_a_users_csv_reaches_a_finished_prepare_in_one_command(tmp_path):
    root = repo_copy(tmp_path / "repo")
    user = tmp_path / "my reviews.csv"  # outside the repository, a space in its name
    words = ["good", "bad"]
    pd.DataFrame(
        {
            "body": [f"a {words[i % 2]} film, number {i}" for i in range(ROWS)],
            "stars": [i % 2 for i in range(ROWS)],
        }
    ).to_csv(user, index=False)
    result = subprocess.run(
        [sys.executable, "-m", "tinytf.cli", "data", "add", str(user), "--text-column", "body"]
        + ["--label-column", "stars", "--repro"],
        cwd=root,
        env=tracked_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sentiment = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))["prepare"]["sentiment"]
    assert sentiment["source"] == "files" and sentiment["files"]["train"] == "data/raw/my reviews.csv"
    assert (sentiment["text_column"], sentiment["label_column"]) == ("body", "stars")
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=root, capture_output=True, text=True
    )
    assert staged.stdout.split("\n")[0] == "data/raw/my reviews.csv", staged.stdout
    rows = [
        len(pd.read_parquet(root / f"data/prepared/sentiment/{s}.parquet"))
        for s in ("train", "validation", "test")
    ]
    assert sum(rows) == ROWS and min(rows) > 0, rows
    status = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "prepare"], cwd=root, capture_output=True, text=True
    )
    assert status.returncode == 0 and "changed" not in status.stdout, status.stdout + status.stderr


def test_with_dvc_the_file_goes_to_dvcs_cache_and_its_dvc_file_is_staged(tmp_path):
    root = repo_copy(tmp_path / "repo")
    user = tmp_path / "big.jsonl"
    pd.DataFrame(
        {"text": [f"review {i}" for i in range(ROWS)], "label": ["pos", "neg"] * (ROWS // 2)}
    ).to_json(user, orient="records", lines=True)
    add = [sys.executable, "-m", "tinytf.cli", "data", "add", str(user), "--text-column", "text"]
    result = subprocess.run(
        [*add, "--label-column", "label", "--dvc"],
        cwd=root,
        env=tracked_env(),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=root, capture_output=True, text=True
    )
    assert set(staged.stdout.split()) == {"data/raw/big.jsonl.dvc", "data/raw/.gitignore"}, staged.stdout
    assert "/big.jsonl" in (root / "data/raw/.gitignore").read_text(encoding="utf-8")


@pytest.mark.parametrize("with_dvc", [False, True], ids=["git", "dvc"])
def test_data_remove_undoes_data_add_to_the_byte(tmp_path, with_dvc):
    root = repo_copy(tmp_path / "repo")
    params = (root / "params.yaml").read_bytes()
    user = tmp_path / "reviews.csv"
    pd.DataFrame(
        {"review": [f"review {i}" for i in range(ROWS)], "stars": [i % 2 for i in range(ROWS)]}
    ).to_csv(user, index=False)
    tinytf = [sys.executable, "-m", "tinytf.cli", "data"]
    add = [*tinytf, "add", str(user), "--text-column", "review", "--label-column", "stars"]
    for command in (add + (["--dvc"] if with_dvc else []), [*tinytf, "remove", str(user)]):
        result = subprocess.run(command, cwd=root, env=tracked_env(), capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    assert "prepare.sentiment.source=rt_critic_snippets" in result.stdout, result.stdout
    assert (root / "params.yaml").read_bytes() == params  # every key back, comments and layout kept
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    assert status.stdout == "", status.stdout  # nothing staged, nothing left over
    again = subprocess.run(
        [*tinytf, "remove", str(user)], cwd=root, env=tracked_env(), capture_output=True, text=True
    )
    assert again.returncode == 2 and "nothing to remove" in again.stderr, again.stderr
