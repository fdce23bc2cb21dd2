import socket

import pytest

from tinytf.tracking import Tracker, stage_run


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("DVC_EXP_NAME", "lucky-exp")
    return tmp_path


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
    assert len(row["tags.tinytf.params_hash"]) == 16
    assert row["metrics.rows"] == 3
    assert (store / "mlflow.db").exists()


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


def test_tracking_failure_mid_run_is_reported_once(capsys):
    class Broken:
        def log_metrics(self, *args, **kwargs):
            raise OSError("disk I/O error")  # not "database is locked", which is retried for a minute

    tracker = Tracker(Broken())
    for step in range(10):
        tracker.log_metrics({"loss": 0.5}, step=step)
    err = capsys.readouterr().err
    assert err.count("warning: MLflow tracking off") == 1 and "disk I/O error" in err
