"""The local tracking store, as a user browses it: `tinytf ui` (`make ui`). Only the CLI imports this
module (no stage does).

MLflow 3's `mlflow ui` starts 4 workers, a job runner and its consumers for GenAI jobs (judges,
trace rollups) this project never queues: 16 processes. One worker without the job runner serves
the same pages in a sixth of the memory, and answers sooner (the figures: the commit that made
`tinytf ui`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path

from tinytf.errors import DataError

# MLflow's usage telemetry off, as .dvc/config turns DVC's analytics off (a user's own setting wins)
LIGHT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}


def _client(store: str):
    from mlflow import MlflowClient

    from tinytf.tracking.runs import _quiet_mlflow_logs

    _quiet_mlflow_logs()  # a new SQLite store's migrations log a line each at INFO
    return MlflowClient(tracking_uri=store)


def experiment_id(store: str, experiment: str) -> str | None:
    """The id of the active experiment `experiment` in `store`, or None. A SQLite store is read
    directly, read-only, in milliseconds: MlflowClient's imports and schema check took as long as
    the server's own start (the commit that made `tinytf ui`), and a missing file stays missing."""
    if store.startswith("sqlite:///"):
        path = Path(store.removeprefix("sqlite:///"))
        if not path.is_file():
            return None
        try:
            with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
                row = db.execute(
                    "SELECT experiment_id FROM experiments WHERE name = ? AND lifecycle_stage = 'active'",
                    (experiment,),
                ).fetchone()
        except sqlite3.Error as exc:
            raise DataError(f"{store}: cannot read its experiments ({exc})") from None
        return None if row is None else str(row[0])
    found = _client(store).get_experiment_by_name(experiment)
    return None if found is None or found.lifecycle_stage != "active" else found.experiment_id


def runs_page(store: str, experiment: str, base_url: str) -> str:
    """The experiment's runs table in the UI at `base_url`, the sidebar switched to "Model training".
    MLflow 3 opens an experiment on the page of that switch (default "GenAI": an empty overview),
    whatever the experiment's tags say; `workflowType` in the URL sets it for the visit.
    The experiments list when `experiment` is not in `store` yet."""
    found = experiment_id(store, experiment)
    page = "experiments" if found is None else f"experiments/{found}/runs"
    return f"{base_url}/#/{page}?workflowType=machine_learning"


def server_command(store: str, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The `mlflow server` argv and environment `tinytf ui` becomes."""
    argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store]
    argv += ["--host", host, "--port", str(port), "--workers", "1"]
    env = dict(os.environ)
    for key, value in LIGHT.items():
        env.setdefault(key, value)
    return argv, env


def ui_command(store: str, host: str, port: int, experiment: str) -> None:
    """Print the experiment's runs page, then become `mlflow server` (Ctrl-C reaches it directly)."""
    if not 1 <= port <= 65535:
        raise DataError(f"--port {port}: expected a port from 1 to 65535")
    argv, env = server_command(store, host, port)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # before the lookup imports mlflow
    link = runs_page(store, experiment, f"http://{f'[{host}]' if ':' in host else host}:{port}")
    if "/runs?" in link:
        print(f"the runs of experiment {experiment!r}: {link}")
    else:
        print(f"no experiment {experiment!r} in {store} yet (`tinytf preset tiny` makes one): {link}")
    print("starting mlflow server with one worker; Ctrl-C stops it", flush=True)
    sys.stderr.flush()
    os.execve(argv[0], argv, env)
