"""A DVC remote, as a runner uses it: outputs and run cache pushed from one clone and pulled into another."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.repo import GIT, dvc
from tests.helpers.tiny_run import DVC_STAGES

pytestmark = pytest.mark.slow


def test_a_clone_pulls_outputs_and_run_cache_from_a_remote_and_repro_runs_nothing(workspace, tmp_path):
    """DVC's remote, as a runner uses it: push outputs and run cache from one clone, pull them
    into a fresh clone, where `dvc repro` then recomputes nothing (a local-directory remote
    here; S3 or GCS take the same commands, README "Running on GPUs and clusters")."""
    remote = tmp_path / "remote"
    dvc(workspace, "remote", "add", "--force", "-d", "storage", str(remote))
    subprocess.run([*GIT, "add", "-A"], cwd=workspace, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "tiny results"], cwd=workspace, check=True, capture_output=True)
    dvc(workspace, "push", "--run-cache")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(workspace), str(clone)], check=True)
    assert not (clone / "data" / "models" / "pretrained" / "seed1.pt").exists()
    dvc(clone, "pull", "--run-cache")
    out = dvc(clone, "repro").stdout
    assert "Running stage" not in out, out
    for stage in DVC_STAGES:
        assert f"Stage '{stage}' didn't change, skipping" in out
    for name in ("reports/headline.json", "data/models/pretrained/seed1.pt"):
        assert (clone / name).read_bytes() == (workspace / name).read_bytes(), name
