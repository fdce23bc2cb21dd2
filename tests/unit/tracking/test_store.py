"""The local store as a user browses and tidies it (issue 73): `tinytf ui` prints the runs page's link
and serves with one worker and no job runner; `tinytf store prune --keep N` keeps each stage's N
newest top-level runs, deletes the rest with their children and unserved logged models, then runs
`mlflow gc` so their files go."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

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
    import mlflow

    # before the store: the registry looks a version's logged model up through the default client,
    # whose URI an earlier test in this process may have set with mlflow.set_tracking_uri
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    found = fake_store(tmp_path)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    yield found
    mlflow.set_tracking_uri(previous)


def active(store) -> set[str]:
    return {r.info.run_id for r in store["client"].search_runs([store["exp"]], max_results=1000)}


def test_dry_run_lists_the_older_runs_and_deletes_nothing(store, capsys):
    before = active(store)
    assert main(["store", "prune", "--keep", "2", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    # repro 0 goes but its prepare, whose model is served
    doomed = {store["runs"][0, "finetune"], store["runs"][0, "grid (parent)"]}
    assert {line.split()[2] for line in out[:-1]} == doomed
    assert all(line.startswith("would delete ") for line in out[:-1])
    assert "and 2 child runs" in out[0]
    assert out[-1].endswith(
        "would delete 2 top-level runs (6 runs in all) and 1 logged models; keeping the 2 newest of "
        "each stage, and 1 older ones whose model a registered version serves"
    )
    assert active(store) == before


def test_prune_deletes_the_older_runs_their_children_and_files_then_collects(store, capsys):
    client, runs, children = store["client"], store["runs"], store["children"]
    assert main(["store", "prune", "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert "mlflow gc: their rows and artifacts are gone" in out
    newest = {runs[REPROS - 1, s] for s in STAGES} | {c for s in STAGES for c in children[REPROS - 1, s]}
    assert active(store) == newest | {runs[0, "prepare"]}  # the served model's run stays
    gone = [runs[r, s] for r in range(REPROS - 1) for s in STAGES if (r, s) != (0, "prepare")]
    gone += [c for r in range(REPROS - 1) for s in STAGES for c in children[r, s]]
    assert len(gone) == 13
    for run_id in gone:
        with pytest.raises(MlflowException):  # not soft-deleted: collected for good
            client.get_run(run_id)
    artifacts = Path(store["uri"].removeprefix("sqlite:///")).parent / "artifacts"
    holding = {p.relative_to(artifacts).parts[0] for p in artifacts.rglob("*") if p.is_file()}
    assert not holding & set(gone) and newest <= holding  # gc leaves each run's folder, empty
    with pytest.raises(MlflowException):
        client.get_logged_model(store["unserved"])
    assert client.get_logged_model(store["served"]).model_id == store["served"]
    # nothing more to do the second time
    assert main(["store", "prune", "--keep", "1"]) == 0
    assert "deleting 0 top-level runs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--keep", "0"], "--keep 0: keep at least 1 run of each stage"),
        (["--keep", "1", "--experiment", "nope"], "no experiment 'nope'"),
    ],
)
def test_prune_refuses_in_one_line(store, capsys, argv, said):
    assert main(["store", "prune", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and err.startswith("tinytf: error: ")


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
