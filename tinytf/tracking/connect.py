"""The tracking store: the repository whose store records a run, its URI, the HTTP bounds every
client shares, and `connect`. mlflow is imported inside `connect` alone: the command line asks the
rest before it decides to import mlflow."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from tinytf.system import collector

DEFAULT_STORE = "mlflow.db"
DEFAULT_EXPERIMENT = "tinytf"
ARTIFACT_DIR = "mlartifacts"


def project_root() -> Path:
    """The repository whose mlflow.db records this run: an experiment's temporary copy under
    `<repo>/.dvc/tmp/exps/` is deleted afterwards, so its runs belong in <repo>'s store."""
    root = Path(os.environ.get("DVC_ROOT") or os.getcwd()).resolve()
    marker = f"{os.sep}.dvc{os.sep}tmp{os.sep}exps{os.sep}"
    return Path(str(root).split(marker, 1)[0])


def in_temporary_copy() -> bool:
    """True inside the copy DVC makes for `dvc exp run --temp` or `--queue`: not the workspace's
    own run, whatever it scores."""
    # DVC points DVC_ROOT at the workspace from the copy, whose path is the cwd of its stages
    return Path.cwd().resolve() != project_root()


def tracking_uri() -> str:
    """`MLFLOW_TRACKING_URI` if set, else the SQLite store MLflow 3 uses, at the repo root."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{project_root() / DEFAULT_STORE}"


def bound_http() -> None:
    """A tracking server that does not answer is said within seconds, not after MLflow's default
    retries with backoff (minutes); a user's own settings win."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def quiet_mlflow_logs() -> None:
    for name in ("alembic", "mlflow", "mlflow.store.db.utils"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _new_store() -> None:
    """Make the repository's store, its `Default` experiment's artifacts beside it: MLflow would
    put them in the cwd's ./mlruns, which in a fresh clone's first run (a temporary experiment,
    `tinytf preset tiny`) is a copy DVC deletes."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    SqlAlchemyStore(tracking_uri(), (project_root() / ARTIFACT_DIR).as_uri())


def connect(experiment: str):
    bound_http()
    # MLflow's modules and its SQL store (slow to build: built on the first lookup and cached) live as
    # long as the process: built once, without the garbage collector walking them (collector.py)
    first = "mlflow" not in sys.modules
    # read before set_tracking_uri, which exports MLFLOW_TRACKING_URI for subprocesses
    own_store = not os.environ.get("MLFLOW_TRACKING_URI")
    with collector.paused() if first else contextlib.nullcontext():
        import mlflow

        quiet_mlflow_logs()  # after the import: importing mlflow sets its loggers to INFO
        mlflow.set_tracking_uri(tracking_uri())
        if own_store and not (project_root() / DEFAULT_STORE).exists():
            _new_store()
        missing = mlflow.get_experiment_by_name(experiment) is None
    if missing:
        # beside the store at the repository root, never in the cwd's ./mlruns: a temporary or
        # queued experiment runs in a copy that DVC deletes
        artifacts = (project_root() / ARTIFACT_DIR / experiment).as_uri() if own_store else None
        try:
            # for the MLflow 3 UIs (we allow >=3.1) before the sidebar's GenAI / Model training
            # switch; after it, `tinytf ui`'s link sets the switch (tinytf.tracking.store.runs_page)
            mlflow.create_experiment(
                experiment,
                artifact_location=artifacts,
                tags={"mlflow.experimentKind": "custom_model_development"},
            )
        except Exception:
            # a concurrent stage may have created it between our check and our create
            if mlflow.get_experiment_by_name(experiment) is None:
                raise
    mlflow.set_experiment(experiment)
    return mlflow
