"""A shared tracking server, as a team runs one: `mlflow server` backed by PostgreSQL with proxied
artifact storage, both started here on loopback ports; the tiny pipeline logs into it through
`MLFLOW_TRACKING_URI=http://...`, then two queued experiments log into it at once.

CI installs Debian's `postgresql` (.ci/run); the test makes a throwaway cluster with `initdb`
and skips, saying why, where PostgreSQL is missing or cannot start."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers.mlflow_ui import free_port, loopback_server
from tests.helpers.queue import run_two_queued_experiments
from tests.helpers.repo import dvc, repo_copy
from tests.helpers.tiny_run import RUNS

pytestmark = pytest.mark.slow


def postgres_bindir() -> Path | None:
    """The folder holding initdb, pg_ctl and createdb: Debian keeps them out of PATH, under the
    server's major version; elsewhere they are on PATH (resolved: PATH may hold a lone symlink)."""
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parts[4]))
    on_path = [Path(shutil.which("pg_ctl")).resolve().parent] if shutil.which("pg_ctl") else []
    for folder in [*map(Path, reversed(debian)), *on_path]:
        if all((folder / tool).exists() for tool in ("initdb", "pg_ctl", "createdb")):
            return folder
    return None


@contextlib.contextmanager
def postgres_database(name: str = "mlflow"):
    """A throwaway PostgreSQL cluster on a free loopback port with one database; yields its
    SQLAlchemy URI (psycopg 3 driver) and removes the cluster on the way out."""
    bindir = postgres_bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL is not installed (no initdb/pg_ctl/createdb; .ci/run installs Debian's postgresql)"
        )
    # initdb refuses to run as root: as root, the cluster belongs to the `postgres` user
    as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="tinytf-pg-"))
    if as_owner:
        shutil.chown(root, user="postgres")
    data, port = root / "data", free_port()

    def pg(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([*as_owner, *command], capture_output=True, text=True, cwd=root)

    try:
        init = pg(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        if init.returncode != 0:
            pytest.skip(f"PostgreSQL cannot start here: initdb failed: {init.stderr.strip()[-500:]}")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
        start = pg(
            str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"
        )
        if start.returncode != 0:
            log = (root / "log").read_text() if (root / "log").exists() else start.stderr
            pytest.skip(f"PostgreSQL cannot start here: pg_ctl start failed: {log.strip()[-500:]}")
        try:
            created = pg(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", name)
            assert created.returncode == 0, created.stderr
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"
        finally:
            pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`mlflow server` on PostgreSQL, artifacts proxied into a local folder (`--artifacts-destination`:
    clients upload through the server and need no access to the store)."""
    artifacts = tmp_path_factory.mktemp("artifacts")
    with postgres_database() as database:
        mlflow = Path(sys.executable).parent / "mlflow"
        command = [
            str(mlflow),
            "server",
            "--backend-store-uri",
            database,
            "--artifacts-destination",
            str(artifacts),
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--workers",
            "2",
        ]
        # the first start creates and migrates every table in PostgreSQL: give it time
        with loopback_server(command, "/health", timeout=180) as url:
            yield url, artifacts


@pytest.fixture(scope="module")
def pipeline(server, tmp_path_factory):
    url, _ = server
    workspace = repo_copy(tmp_path_factory.mktemp("repo"))
    # in the workspace: its evaluate run is the workspace's own, so it moves @champion
    result = dvc(
        workspace,
        "preset",
        "tiny",
        "--workspace",
        command=(sys.executable, "-m", "tinytf.cli"),
        tracking_uri=url,
    )
    # the runs this pipeline made, read before any other test adds its own
    return workspace, result.stdout + result.stderr, search_runs(url)


def search_runs(url: str):
    import mlflow

    mlflow.set_tracking_uri(url)
    return mlflow.search_runs(experiment_names=["tinytf"])


def test_every_stage_logs_its_runs_to_the_server_and_nothing_locally(server, pipeline):
    url, artifacts = server
    workspace, output, runs = pipeline
    assert "MLflow tracking off" not in output, output  # a failed call would only warn
    assert runs["tags.tinytf.stage"].value_counts().to_dict() == RUNS
    assert set(runs["status"]) == {"FINISHED"}
    evaluate = runs[runs["tags.tinytf.stage"] == "evaluate"].iloc[0]
    assert 0 <= evaluate["metrics.test_accuracy"] <= 1
    assert evaluate["artifact_uri"].startswith("mlflow-artifacts:"), evaluate["artifact_uri"]
    # the artifacts went through the server into its store, none into the repository
    assert list(artifacts.rglob("test_report.json")), sorted(artifacts.rglob("*"))[:20]
    assert not (workspace / "mlflow.db").exists() and not (workspace / "mlruns").exists()


def test_the_registry_on_the_server_serves_the_champion(server, pipeline):
    import json

    import mlflow
    import pandas as pd

    url, _ = server
    workspace, _, runs = pipeline
    mlflow.set_tracking_uri(url)
    champion = mlflow.MlflowClient().get_model_version_by_alias("tinytf-sentiment", "champion")
    assert champion.run_id == runs[runs["tags.tinytf.stage"] == "evaluate"].iloc[0]["run_id"]
    model = mlflow.pyfunc.load_model("models:/tinytf-sentiment@champion")  # downloaded through the server
    predicted = model.predict(pd.DataFrame({"text": ["a fine, moving film", "a dull mess"]}))
    classes = json.loads((workspace / "data/tokens/sentiment/labels.json").read_text())["classes"]
    assert set(predicted["label"]) <= set(classes) and len(predicted) == 2


def test_two_pipelines_logging_at_once_lose_nothing(server, pipeline):
    url, _ = server
    workspace, _, _ = pipeline
    before = search_runs(url)
    run_two_queued_experiments(workspace, tracking_uri=url)
    runs = search_runs(url)
    new = runs[~runs["run_id"].isin(before["run_id"])]
    assert new["tags.tinytf.stage"].value_counts().to_dict() == {"evaluate": 2, "report": 2}
    assert set(new["status"]) == {"FINISHED"}
    for stage in ("evaluate", "report"):
        assert set(new[new["tags.tinytf.stage"] == stage]["tags.dvc.exp_name"]) == {"boot300", "boot400"}
    evaluated = new[new["tags.tinytf.stage"] == "evaluate"]
    assert evaluated[["metrics.test_accuracy", "metrics.test_macro_f1"]].notna().all().all()
    import mlflow

    versions = mlflow.MlflowClient().search_model_versions("name = 'tinytf-sentiment'")
    # the first run's champion only: the experiments change no weight, so they reuse its version
    assert len(versions) == 1
    evaluated_by = set(evaluated["tags.tinytf.registered_version"])
    assert evaluated_by == {str(versions[0].version)}
