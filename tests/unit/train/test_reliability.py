"""Unattended runs: killed, interrupted, diverging, or with the tracking store down."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from tests.helpers.lm_fixtures import make_corpus_dir
from tests.helpers.paths import REPO
from tinytf.tracking import runs as tracking
from tinytf.tracking.connect import project_root
from tinytf.tracking.runs import stage_run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus_dir(tmp_path_factory.mktemp("rel"))


def start(corpus: Path, state: Path, result: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.reliability_worker", str(corpus), str(state), str(result)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def saved_step(state: Path) -> int:
    try:
        return torch.load(state, weights_only=True)["step"]
    except Exception:  # not written yet (the rename is atomic, so never half-written)
        return -1


def wait_until(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    process = start(corpus, root / "state.pt", root / "result.json")
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads((root / "result.json").read_text())


@pytest.mark.parametrize("after_step, extra_delay", [(3, 0.0), (12, 0.13), (24, 0.05)])
def test_sigkill_at_any_point_resumes_to_the_uninterrupted_result(
    corpus, uninterrupted, tmp_path, after_step, extra_delay
):
    state, result = tmp_path / "state.pt", tmp_path / "result.json"
    process = start(corpus, state, result)
    wait_until(lambda: saved_step(state) >= after_step or process.poll() is not None)
    time.sleep(extra_delay)  # land anywhere: mid-step, mid-evaluation or mid-checkpoint-write
    assert process.poll() is None, "the run ended before the kill; the test needs a slower worker"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not result.exists()
    resumed = start(corpus, state, result)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert "resuming pretrain from step" in err
    assert json.loads(result.read_text()) == uninterrupted


def test_sigint_stops_cleanly_after_a_checkpoint_and_resumes(corpus, uninterrupted, tmp_path):
    state, result = tmp_path / "state.pt", tmp_path / "result.json"
    process = start(corpus, state, result)
    wait_until(lambda: saved_step(state) >= 6)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode != 0
    assert (
        "interrupted at step" in err
        and "checkpoint saved" in err
        and "Traceback" not in err.split("interrupt:")[0]
    )
    step = int(err.split("interrupted at step ")[1].split(";")[0])
    assert saved_step(state) == step
    resumed = start(corpus, state, result)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert json.loads(result.read_text()) == uninterrupted


def short_busy_timeout(monkeypatch) -> None:
    """MLflow's SQLite sessions wait 20 s for a lock (`PRAGMA busy_timeout = 20000`) before "database
    is locked"; here 0.5 s, so each of the two attempts on a locked store fails fast instead of
    costing 20 s. The retry and the tracker going quiet are the same either way."""
    import sqlalchemy
    from mlflow.store.db import utils

    def text(statement, *args, **kwargs):
        return sqlalchemy.sql.text(
            statement.replace("busy_timeout = 20000", "busy_timeout = 500"), *args, **kwargs
        )

    monkeypatch.setattr(utils, "sql", types.SimpleNamespace(text=text))


def test_locked_store_does_not_stop_the_stage(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking, "LOCK_RETRIES", 2)
    short_busy_timeout(monkeypatch)
    with stage_run("prepare", {"a": 1}, "locked-test"):
        pass  # creates the store
    holder = sqlite3.connect(tmp_path / "mlflow.db", timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock for the whole run
    try:
        finished = False
        with stage_run("pretrain", {"a": 1}, "locked-test") as tracker:
            for step in range(20):
                tracker.log_metrics({"loss": 1.0}, step=step)
            finished = True
    finally:
        holder.rollback()
        holder.close()
    assert finished
    assert capsys.readouterr().err.count("MLflow tracking off") == 1


def test_queue_workspace_runs_log_into_the_main_store(tmp_path, monkeypatch):
    inner = tmp_path / ".dvc" / "tmp" / "exps" / "tmpabc123"
    inner.mkdir(parents=True)
    monkeypatch.setenv("DVC_ROOT", str(inner))
    assert project_root() == tmp_path.resolve()
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    assert project_root() == tmp_path.resolve()
