"""The tiny preset's run, built once per test run and shared by every xdist worker; each test
works in a copy of its own. It is built by walking the README's quickstart, which runs the tiny
preset: one tiny pipeline for both (test_quickstart.py reads the walk's record)."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.quickstart import walk
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
            build_tiny_run(shared)
            (shared / "built").touch()
    return shared / "repo"


def build_tiny_run(folder: Path) -> Path:
    """folder/repo: the README's quickstart walked there (its `tinytf preset tiny` is the way a user
    switches configuration: `dvc exp run -S ...` from presets/tiny.yaml), the walk's outcome kept in
    folder/quickstart.json. Where the walk fails, test_quickstart says why, and every other test
    still gets its run: built again from a fresh copy with the preset alone."""
    root = repo_copy(folder / "repo")
    walked = walk(root)
    (root / ".venv").unlink()  # the venv link is the walk's: later tests' `git add -A` would commit it
    status = clone_changes(root)
    record = {"returncode": walked.returncode, "stdout": walked.stdout, "stderr": walked.stderr}
    (folder / "quickstart.json").write_text(json.dumps({**record, "status": status}))
    if walked.returncode != 0:
        shutil.rmtree(root)
        root = repo_copy(folder / "repo")
        dvc(root, "preset", "tiny", command=(sys.executable, "-m", "tinytf.cli"))
        status = clone_changes(root)
    # a temporary experiment: the clone is untouched until the experiment is applied
    assert status == "", status
    listed = dvc(root, "exp", "ls", "--name-only").stdout.splitlines()
    [experiment] = [line.strip() for line in listed if line.strip() and not line.endswith(":")]  # no baseline
    dvc(root, "exp", "apply", experiment)
    return root


def clone_changes(root: Path) -> str:
    """`git status` of the tracked files: empty where the clone is as it was committed."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def quickstart_walk(tiny_run) -> dict:
    """What walking the README's quickstart gave while the tiny run was built: returncode, stdout,
    stderr, and `status`, the clone's tracked changes right after it."""
    return json.loads((tiny_run.parent / "quickstart.json").read_text())


@pytest.fixture
def workspace(tiny_run, tmp_path) -> Path:
    """The tiny run's repository, copied for one test: what a test runs, counts or breaks there,
    no other test sees, so each passes alone, in any selection and in any order."""
    return Path(shutil.copytree(tiny_run, tmp_path / "repo", symlinks=True))
