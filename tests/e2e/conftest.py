"""The tiny preset's run, built once per test run and shared by every xdist worker; each test
works in a copy of its own."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.repo import dvc, repo_copy


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, worker_id) -> Path:
    """A copy of the repository with the tiny preset run as a temporary experiment and applied,
    built by the first worker that asks, under a lock in the test run's shared temporary folder;
    the others wait for it. No test changes it: tests get `workspace`, a copy of it."""
    if worker_id == "master":  # no xdist: this process's own
        return build_tiny_run(tmp_path_factory.mktemp("tiny"))
    shared = tmp_path_factory.getbasetemp().parent / "tiny-shared"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
        if not (shared / "built").exists():
            shutil.rmtree(shared / "repo", ignore_errors=True)  # a failed build's leftovers
            (shared / "repo").mkdir()
            build_tiny_run(shared / "repo")
            (shared / "built").touch()
    return shared / "repo"


def build_tiny_run(folder: Path) -> Path:
    root = repo_copy(folder)
    # the way a user switches configuration: `dvc exp run -S ...` from presets/tiny.yaml
    dvc(root, "preset", "tiny", command=(sys.executable, "-m", "tinytf.cli"))
    # a temporary experiment: the clone is untouched until the experiment is applied
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == "", status
    listed = dvc(root, "exp", "ls", "--name-only").stdout.splitlines()
    [experiment] = [line.strip() for line in listed if line.strip() and not line.endswith(":")]  # no baseline
    dvc(root, "exp", "apply", experiment)
    return root


@pytest.fixture
def workspace(tiny_run, tmp_path) -> Path:
    """The tiny run's repository, copied for one test: what a test runs, counts or breaks there,
    no other test sees, so each passes alone, in any selection and in any order."""
    return Path(shutil.copytree(tiny_run, tmp_path / "repo", symlinks=True))
