"""README's undo after `dvc exp apply`: the committed run's params, lock, reports and data back."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers.paths import REPO
from tests.helpers.repo import GIT, dvc, file_bytes, tracked_env

pytestmark = pytest.mark.slow

WATCHED = ["params.yaml", "dvc.lock", "data/prepared", "data/reports/data.json"]


def readme_undo() -> str:
    """The command README.md gives, as a user would copy it."""
    found = re.search(r"To undo an apply[^`]*`([^`]+)`", (REPO / "README.md").read_text(encoding="utf-8"))
    assert found, "README.md no longer says how to undo an apply"
    return found.group(1)


def test_the_readmes_undo_returns_the_workspace_to_the_committed_run(workspace):
    # the tiny run, committed: the run a user's clone holds
    subprocess.run([*GIT, "add", "-A"], cwd=workspace, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "the tiny run"], cwd=workspace, check=True, capture_output=True)
    committed = file_bytes(workspace, WATCHED)
    dvc(workspace, "exp", "run", "--temp", "-n", "fewer", "-S", "prepare.sentiment.max_rows=300", "prepare")
    dvc(workspace, "exp", "apply", "fewer")
    assert file_bytes(workspace, WATCHED) != committed
    subprocess.run(
        ["bash", "-c", readme_undo()], cwd=workspace, env=tracked_env(), check=True, capture_output=True
    )
    assert file_bytes(workspace, WATCHED) == committed
    assert "up to date" in dvc(workspace, "status", "prepare").stdout
