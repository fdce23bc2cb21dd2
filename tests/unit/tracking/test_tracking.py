import socket

import pytest

from tinytf.system.cpu import cpu_kind
from tinytf.tracking.runs import Tracker, TrackerCallback, stage_run


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("DVC_EXP_NAME", "lucky-exp")
    return tmp_path


def runs_client(root):
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{root / 'mlflow.db'}")


def runs(root):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["tinytf-test"])


def test_stage_run_records_params_tags_and_metrics(store):
    with stage_run("prepare", {"prepare": {"corpus": {"source": "ptb"}}}, "tinytf-test") as tracker:
        tracker.log_metrics({"rows": 3}, step=0)
    frame = runs(store)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["status"] == "FINISHED"
    assert row["params.prepare.corpus.source"] == "ptb"
    assert row["tags.tinytf.stage"] == "prepare"
    assert row["tags.dvc.exp_name"] == "lucky-exp"
    assert row["tags.tinytf.cpu"] == cpu_kind()
    assert len(row["tags.tinytf.params_hash"]) == 16
    assert row["metrics.rows"] == 3
    assert (store / "mlflow.db").exists()


def test_a_long_stage_logs_system_metrics_beside_its_own(store, monkeypatch):
    import time

    monkeypatch.delenv("MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING", raising=False)
    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.2")  # 10 s in a real run
    with stage_run("pretrain", {}, "tinytf-test", system_metrics=True):
        time.sleep(1.5)
    with stage_run("prepare", {}, "tinytf-test"):
        time.sleep(1.5)
    frame = runs(store).set_index("tags.tinytf.stage")
    sampled = [c for c in frame.columns if c.startswith("metrics.system/") and frame.loc["pretrain", c] > 0]
    assert "metrics.system/cpu_utilization_percentage" in frame.columns and sampled
    assert frame.loc["prepare", sampled].isna().all()  # a short stage is left to the variable


def test_a_stage_with_system_metrics_prints_no_mlflow_info_lines(store):
    """A fresh process, as a stage is: importing mlflow sets its loggers to INFO, and the monitor's
    start and stop lines would stand in every long stage's log."""
    import subprocess
    import sys

    code = (
        "from tinytf.tracking.runs import stage_run\n"
        "with stage_run('pretrain', {}, 'tinytf-test', system_metrics=True):\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "INFO mlflow" not in done.stderr, done.stderr


def test_a_replayed_run_logs_every_metric_at_its_step_as_the_calls_would(store):
    """The finetune stage replays a worker's events in one batch: the same history as a call each."""
    import mlflow

    events = [("on_step", s, {"loss": 1.0 / (s + 1), "lr": None}) for s in range(0, 30, 3)]
    events += [("on_epoch", 1, {"validation_accuracy": 0.6, "epoch": 1}), ("on_step", 33, {"loss": 0.01})]
    histories = {}
    for how in ("calls", "batch"):
        with stage_run("finetune", {"how": how}, "tinytf-test", run_name=how) as tracker:
            callback = TrackerCallback(tracker, prefix="p/")
            if how == "batch":
                callback.replay(events)
            else:
                for name, index, metrics in events:
                    getattr(callback, name)(index, metrics)
            run_id = mlflow.active_run().info.run_id
        client = mlflow.MlflowClient()
        histories[how] = {
            key: [(m.step, m.value) for m in client.get_metric_history(run_id, key)]
            for key in ("p/loss", "p/lr", "p/epoch_validation_accuracy", "p/epoch_epoch")
        }
    assert histories["batch"] == histories["calls"]
    assert len(histories["batch"]["p/loss"]) == 11 and histories["batch"]["p/lr"] == []
    assert histories["batch"]["p/epoch_validation_accuracy"] == [(1, 0.6)]


def test_inputs_are_logged_without_mlflow_warnings(store, tmp_path, recwarn):
    # mlflow's "can be interpreted in multiple ways" once printed about 20 times in make repro
    import pandas as pd

    path = tmp_path / "train.parquet"
    frame = pd.DataFrame({"text": ["a b", "c"], "label": [0, 1]})
    frame.to_parquet(path)
    with stage_run("prepare", {}, "tinytf-test") as tracker:
        tracker.log_dataset(frame, path, "sentiment-train", "train")
        tracker.log_file_inputs({"sentiment-train-file": path}, "train")
        assert tracker.active
    assert [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)] == []
    import mlflow

    run = mlflow.get_run(runs(store).iloc[0]["run_id"])
    assert sorted(i.dataset.name for i in run.inputs.dataset_inputs) == [
        "sentiment-train",
        "sentiment-train-file",
    ]


def test_failed_block_marks_the_run_failed(store):
    with pytest.raises(RuntimeError), stage_run("tokenize", {}, "tinytf-test"):
        raise RuntimeError("boom")
    assert runs(store).iloc[0]["status"] == "FAILED"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_store_warns_once_and_the_stage_completes(store, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port()}")
    finished = False
    with stage_run("prepare", {"a": 1}, "tinytf-test") as tracker:
        for step in range(50):
            tracker.log_metrics({"loss": 1.0}, step=step)
        finished = True
    assert finished and not tracker.active
    assert capsys.readouterr().err.count("MLflow tracking off") == 1


def test_a_password_in_the_stores_uri_is_in_no_warning(store, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://alice:s3cret-pw@127.0.0.1:{free_port()}")
    with stage_run("prepare", {"a": 1}, "tinytf-test") as tracker:
        tracker.log_metrics({"loss": 1.0}, step=0)
    captured = capsys.readouterr()
    assert "MLflow tracking off" in captured.err and "alice:***@127.0.0.1" in captured.err
    assert "s3cret-pw" not in captured.err + captured.out and "s3cret-pw" not in tracker.failure


def test_tracking_failure_mid_run_is_reported_once(capsys):
    class Broken:
        def log_metrics(self, *args, **kwargs):
            raise OSError("disk I/O error")  # not "database is locked", which is retried for a minute

    tracker = Tracker(Broken())
    for step in range(10):
        tracker.log_metrics({"loss": 0.5}, step=step)
    err = capsys.readouterr().err
    assert err.count("warning: MLflow tracking off") == 1 and "disk I/O error" in err


KILLED_MIDWAY = """
import os
from tinytf.tracking.runs import stage_run
with stage_run("pretrain", {"pretrain": {"steps": 2}}, "tinytf-test") as tracker:
    tracker.log_metrics({"train_loss": 1.0}, step=1)
    os._exit(9)  # killed: no end_run, the run stays RUNNING
"""


def killed_run(root) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, TINYTF_TRACKING="1", DVC_ROOT=str(root))
    result = subprocess.run([sys.executable, "-c", KILLED_MIDWAY], env=env, capture_output=True, text=True)
    assert result.returncode == 9, result.stderr


def test_a_resumed_stage_continues_the_run_a_killed_process_left(store):
    import mlflow

    killed_run(store)
    (left,) = runs(store)["run_id"]
    with stage_run("pretrain", {"pretrain": {"steps": 2}}, "tinytf-test", resume=True) as tracker:
        tracker.log_metrics({"train_loss": 0.5}, step=2)
    frame = runs(store)
    assert frame["run_id"].tolist() == [left] and frame.iloc[0]["status"] == "FINISHED"
    history = mlflow.MlflowClient().get_metric_history(left, "train_loss")
    assert [(m.step, m.value) for m in history] == [(1, 1.0), (2, 0.5)]


def test_a_run_left_by_a_killed_process_is_marked_killed_when_the_stage_starts_over(store):
    killed_run(store)
    (left,) = runs(store)["run_id"]
    with stage_run("pretrain", {"pretrain": {"steps": 2}}, "tinytf-test"):
        pass
    status = dict(zip(runs(store)["run_id"], runs(store)["status"], strict=True))
    assert status.pop(left) == "KILLED" and list(status.values()) == ["FINISHED"]
    # a run of other params, or of a live process, is not touched
    with stage_run("pretrain", {"pretrain": {"steps": 3}}, "tinytf-test"):
        assert sorted(runs(store)["status"]) == ["FINISHED", "KILLED", "RUNNING"]


def test_a_temporary_experiments_artifacts_land_beside_the_repositorys_store(store, monkeypatch):
    """`dvc exp run --temp` runs in a copy under .dvc/tmp/exps/ that DVC deletes: the runs and
    their artifacts belong to the repository's store, not to the copy's ./mlruns."""
    copy = store / ".dvc" / "tmp" / "exps" / "standalone" / "tmpabc"
    copy.mkdir(parents=True)
    monkeypatch.setenv("DVC_ROOT", str(copy))
    monkeypatch.chdir(copy)
    (copy / "note.txt").write_text("kept")
    with stage_run("report", {"report": {}}, "tinytf-temp") as tracker:
        tracker.log_artifact(copy / "note.txt")
    assert (store / "mlflow.db").exists() and not (copy / "mlflow.db").exists()
    assert [p.read_text() for p in (store / "mlartifacts" / "tinytf-temp").rglob("note.txt")] == ["kept"]
    assert not (copy / "mlruns").exists()
    # a fresh clone's first run is such a copy: the store it makes keeps MLflow's `Default`
    # experiment beside it too, not in the copy's ./mlruns that DVC deletes
    default = [e for e in runs_client(store).search_experiments() if e.name == "Default"]
    assert [e.artifact_location for e in default] == [f"{(store / 'mlartifacts').as_uri()}/0"]


def test_a_stage_knows_it_runs_in_a_temporary_copy(store, monkeypatch):
    from tinytf.tracking.connect import in_temporary_copy

    monkeypatch.chdir(store)
    monkeypatch.setenv("DVC_ROOT", str(store))
    assert not in_temporary_copy()  # the workspace's own run
    copy = store / ".dvc" / "tmp" / "exps" / "standalone" / "tmpxyz"
    copy.mkdir(parents=True)
    monkeypatch.chdir(copy)
    assert in_temporary_copy()  # dvc exp run --temp / --queue: DVC_ROOT names the workspace
    monkeypatch.delenv("DVC_ROOT")
    assert in_temporary_copy()  # a stage run by hand inside the copy


def test_a_locked_store_says_once_how_long_it_will_wait(monkeypatch, capsys):
    from tinytf.tracking import runs

    calls, slept = [], []
    monkeypatch.setattr(runs.time, "sleep", slept.append)

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("(sqlite3.OperationalError) database is locked")
        return "logged"

    assert runs.retry_locked(locked_twice) == "logged"
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"tinytf: the MLflow store is locked by another writer; retrying for up to {runs.LOCK_WAIT_S:.0f} s"
    ]
    assert len(slept) == 2 and runs.LOCK_WAIT_S == sum(runs._backoff(a) for a in range(runs.LOCK_RETRIES - 1))
