"""A pretraining stage killed under `dvc repro`, at any point, finishes on the next `dvc repro`
with every output byte for byte what an uninterrupted run writes, and MLflow tells the truth.

The kill is exact, not timed: a sitecustomize on the stage's PYTHONPATH SIGKILLs the process
right after its N-th write of the training state, so each case lands where it says.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import dvc, repo_copy, tracked_env
from tinytf.cli.presets import preset_values

pytestmark = pytest.mark.slow

STATE = "data/checkpoints/pretrain-seed1.pt"
OUTPUTS = [
    "data/models/pretrained/seed1.pt",
    "data/models/pretrained/seed1.json",
    "data/models/snapshots",
    "data/reports/pretrain",
]
# the tiny preset, with a training state every 2 steps: 2 epochs of 4 steps save it at steps
# 2 (in epoch 1), 4 (the epoch boundary: epoch 1's snapshot in it), 6 (in the last epoch) and 8
OVERRIDES = {"pretrain.checkpoint_every": 2, "pretrain.seeds": [1]}  # one body: the one killed

KILLER = """
import os, signal
_path, _count = os.environ["TINYTF_TEST_KILL_AFTER"].rsplit(":", 1)
_replace, _seen = os.replace, []


def _replace_then_die(src, dst, *args, **kwargs):
    _replace(src, dst, *args, **kwargs)
    if os.fspath(dst).endswith(_path):
        _seen.append(dst)
        if len(_seen) == int(_count):
            os.kill(os.getpid(), signal.SIGKILL)


os.replace = _replace_then_die
"""


def set_params(root: Path, values: dict) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    for key, value in values.items():
        *sections, leaf = key.split(".")
        node = params
        for section in sections:
            node = node[section]
        node[leaf] = value
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def read_outputs(root: Path) -> dict[str, bytes]:
    files = {}
    for name in OUTPUTS:
        path = root / name
        for file in sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]:
            files[file.relative_to(root).as_posix()] = file.read_bytes()
    return files


def pretrain_runs(root: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"], filter_string="tags.`tinytf.stage` = 'pretrain'")
    return dict(zip(runs["run_id"], runs["status"], strict=True))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = repo_copy(tmp_path_factory.mktemp("killed"))
    set_params(root, {**preset_values("tiny", REPO / "presets"), **OVERRIDES})
    dvc(root, "repro", "pretrain")
    (root / "hook").mkdir()
    (root / "hook" / "sitecustomize.py").write_text(KILLER)
    return root


@pytest.fixture(scope="module")
def uninterrupted(workspace) -> dict[str, bytes]:
    files = read_outputs(workspace)
    assert (
        "data/models/snapshots/seed1/epoch1.pt" in files
        and "data/reports/pretrain/seed1/metrics.json" in files
    )
    return files


@pytest.mark.parametrize(
    "writes, step",
    [(1, 2), (2, 4), (3, 6), (4, 8)],
    ids=["in-epoch-1", "epoch-boundary", "last-epoch", "after-the-last-step"],
)
def test_a_killed_pretrain_finishes_under_dvc_as_if_never_killed(workspace, uninterrupted, writes, step):
    for name in [STATE, *OUTPUTS]:  # a first run: no state, no outputs
        path = workspace / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    # --force --single-item: pretrain runs, as a first run of new params would; without them DVC
    # restores the uninterrupted run's outputs from its cache (dvc.lock names them)
    run = ("repro", "--force", "--single-item", "pretrain")
    before = pretrain_runs(workspace)
    env = tracked_env()
    paths = [str(workspace / "hook"), env.get("PYTHONPATH")]  # the hook first, then this checkout's
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["TINYTF_TEST_KILL_AFTER"] = f"{STATE}:{writes}"
    killed = subprocess.run(
        [str(Path(sys.executable).parent / "dvc"), *run],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode != 0, killed.stdout + killed.stderr
    assert not (workspace / "data/models/pretrained/seed1.pt").exists()  # killed before the outputs
    left = {run: status for run, status in pretrain_runs(workspace).items() if run not in before}
    assert list(left.values()) == ["RUNNING"], left  # the process died: not FINISHED, not FAILED

    resumed = dvc(workspace, *run)
    assert f"resuming pretrain from step {step}" in resumed.stdout + resumed.stderr
    assert read_outputs(workspace) == uninterrupted
    assert "Data and pipelines are up to date" in dvc(workspace, "status", "pretrain").stdout
    after = {run: status for run, status in pretrain_runs(workspace).items() if run not in before}
    assert after == {next(iter(left)): "FINISHED"}  # the killed run, continued and finished
    assert not list(workspace.glob("**/*.tmp")), "a staging folder or temporary file was left"
