"""The local store as a user browses it (issue 73): `tinytf ui` prints the runs page's link and serves
with one worker and no job runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from tinytf.cli.main import main
from tinytf.tracking import store as store_module

STAGES = ("prepare", "finetune", "grid (parent)")
REPROS = 3


def fake_store(root: Path) -> dict:
    """Three repros of three stages (finetune with 2 children, the grid parent with 2 cells), every
    run with an artifact; the first repro's prepare logged a model that a registered version serves,
    its finetune one that none serves."""
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("tinytf", artifact_location=(root / "artifacts").as_uri())
    runs: dict[tuple[int, str], str] = {}
    children: dict[tuple[int, str], list[str]] = {}
    for repro in range(REPROS):
        for i, stage in enumerate(STAGES):
            start = 1_700_000_000_000 + repro * 3_600_000 + i * 60_000
            run = client.create_run(exp, start_time=start, run_name=stage, tags={"tinytf.stage": stage})
            runs[repro, stage] = run.info.run_id
            client.log_text(run.info.run_id, "x" * 100, "file.txt")
            kids = []
            if stage != "prepare":
                for k in range(2):
                    tags = {"mlflow.parentRunId": run.info.run_id, "tinytf.stage": stage.split()[0]}
                    child = client.create_run(exp, start_time=start + k + 1, run_name=f"c{k}", tags=tags)
                    client.log_text(child.info.run_id, "y", "child.txt")
                    kids.append(child.info.run_id)
            children[repro, stage] = kids
    served = client.create_logged_model(exp, name="served", source_run_id=runs[0, "prepare"])
    unserved = client.create_logged_model(exp, name="unserved", source_run_id=runs[0, "finetune"])
    client.create_registered_model("tinytf-sentiment")
    client.create_model_version(
        "tinytf-sentiment", f"models:/{served.model_id}", run_id=runs[0, "prepare"], model_id=served.model_id
    )
    return {
        "uri": uri,
        "client": client,
        "exp": exp,
        "runs": runs,
        "children": children,
        "served": served.model_id,
        "unserved": unserved.model_id,
    }


@pytest.fixture
def store(tmp_path, monkeypatch):
    # before the store: the registry looks a version's logged model up through the default client
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    found = fake_store(tmp_path)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    return found


def test_ui_prints_the_runs_page_then_becomes_a_light_mlflow_server(store, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", raising=False)
    calls = []
    monkeypatch.setattr(store_module.os, "execve", lambda *a: calls.append(a))
    assert main(["ui", "--backend-store-uri", store["uri"], "--port", "5123"]) == 0
    out = capsys.readouterr().out
    link = f"http://127.0.0.1:5123/#/experiments/{store['exp']}/runs?workflowType=machine_learning\n"
    assert f"the runs of experiment 'tinytf': {link}" in out
    ((program, argv, env),) = calls
    assert argv[:4] == [program, "-m", "mlflow", "server"] and argv[-2:] == ["--workers", "1"]
    assert argv[argv.index("--backend-store-uri") + 1] == store["uri"]
    assert env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"
    assert env["MLFLOW_DISABLE_TELEMETRY"] == "true"


def test_the_ui_names_the_flags_the_installed_mlflow_reads():
    # the names are MLflow's, not ours: a rename in an upgrade would silently bring the weight back
    from mlflow import environment_variables as names

    for key in store_module.LIGHT:
        assert getattr(names, key).name == key


def test_ui_without_the_experiment_links_the_experiments_list(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.setattr(store_module.os, "execve", lambda *a: None)
    assert main(["ui", "--backend-store-uri", f"sqlite:///{tmp_path / 'none.db'}"]) == 0
    link = "http://127.0.0.1:5000/#/experiments?workflowType=machine_learning"
    out = capsys.readouterr().out
    assert out.startswith(f"no experiment 'tinytf' in sqlite:///{tmp_path / 'none.db'} yet")
    assert out.splitlines()[0].endswith(f"makes one): {link}")
    assert not (tmp_path / "none.db").exists()  # read-only: no empty store left behind
