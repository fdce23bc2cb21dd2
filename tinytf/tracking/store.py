"""The local tracking store as a user browses and tidies it: `tinytf ui` and `tinytf store prune`
(only the CLI imports this module). MLflow 3's `mlflow ui` starts several workers and a job runner
for GenAI jobs this project never queues; one worker without it serves the same pages in far less
memory (the figures: the commit that made `tinytf ui`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tinytf.errors import DataError

PAGE = 1000  # runs (or logged models) per search request
# MLflow's usage telemetry off, as .dvc/config turns DVC's analytics off (a user's own setting wins)
LIGHT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}


def _client(store: str):
    from mlflow import MlflowClient

    from tinytf.tracking.connect import quiet_mlflow_logs

    quiet_mlflow_logs()  # a new SQLite store's migrations log a line each at INFO
    return MlflowClient(tracking_uri=store)


def experiment_id(store: str, experiment: str) -> str | None:
    """The id of the active experiment `experiment` in `store`, or None. A SQLite store is read
    directly and read-only: MlflowClient's imports and schema check take as long as the server's
    start, and a missing file stays missing."""
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
    """The experiment's runs table in the UI at `base_url` (else the experiments list), the sidebar
    on "Model training": MLflow 3 opens an experiment on that switch's page (default "GenAI", an empty
    overview) whatever the experiment's tags say, and `workflowType` in the URL sets it."""
    found = experiment_id(store, experiment)
    page = "experiments" if found is None else f"experiments/{found}/runs"
    return f"{base_url}/#/{page}?workflowType=machine_learning"


def server_command(store: str, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    """The `mlflow server` argv and environment `tinytf ui` becomes."""
    argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store]
    argv += ["--host", host, "--port", str(port), "--workers", "1"]
    return argv, {**LIGHT, **os.environ}


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


@dataclass
class Doomed:
    """A top-level run to delete, with every run under it."""

    run: object  # mlflow.entities.Run
    descendants: list[str] = field(default_factory=list)

    def line(self) -> str:
        info, tags = self.run.info, self.run.data.tags
        started = datetime.fromtimestamp(info.start_time / 1000).strftime("%Y-%m-%d %H:%M")
        stage = tags.get("tinytf.stage", info.run_name)
        children = f" and {len(self.descendants)} child runs" if self.descendants else ""
        return f"{info.run_id}  {started}  {stage}: {info.run_name}{children}"


def _all(search) -> list:
    found, token = [], None
    while True:
        page = search(token)
        found.extend(page)
        token = page.token
        if not token:
            return found


def plan_prune(client, store: str, experiment: str, keep: int) -> tuple[list[Doomed], list[str], int]:
    """What `prune --keep` deletes: for each stage (`tinytf.stage` tag, else the run's name), all but its
    `keep` newest top-level runs with their children, and those runs' logged models no registered
    version serves. A run a registered version serves is kept with its whole tree (`mlflow gc` does
    not look at the registry). Returns (doomed runs, newest first; logged model ids; runs kept)."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise DataError(f"{store}: no experiment {experiment!r} (MLFLOW_EXPERIMENT_NAME)")
    ids = [exp.experiment_id]
    runs = _all(
        lambda token: client.search_runs(
            ids, max_results=PAGE, order_by=["attributes.start_time DESC"], page_token=token
        )
    )
    by_id = {run.info.run_id: run for run in runs}
    children: dict[str, list[str]] = {}
    for run in runs:
        parent = run.data.tags.get("mlflow.parentRunId")
        if parent in by_id:
            children.setdefault(parent, []).append(run.info.run_id)

    def under(run_id: str) -> list[str]:
        out = []
        for child in children.get(run_id, []):
            out += [child, *under(child)]
        return out

    versions = _all(lambda token: client.search_model_versions(page_token=token))
    served_runs = {v.run_id for v in versions if v.run_id}
    served_models = {v.model_id for v in versions if v.model_id}
    doomed, seen, kept_for_registry = [], {}, 0
    for run in runs:  # newest first
        if run.data.tags.get("mlflow.parentRunId") in by_id:
            continue  # a child: goes with its top-level run
        stage = run.data.tags.get("tinytf.stage", run.info.run_name)
        seen[stage] = seen.get(stage, 0) + 1
        if seen[stage] <= keep:
            continue
        tree = [run.info.run_id, *under(run.info.run_id)]
        if served_runs.intersection(tree):
            kept_for_registry += 1
            continue
        doomed.append(Doomed(run, tree[1:]))
    gone = {run_id for d in doomed for run_id in (d.run.info.run_id, *d.descendants)}
    models = _all(lambda token: client.search_logged_models(ids, max_results=PAGE, page_token=token))
    unserved = [m.model_id for m in models if m.source_run_id in gone and m.model_id not in served_models]
    return doomed, unserved, kept_for_registry


def collect_garbage(store: str) -> None:
    """`mlflow gc`: MLflow's whole trash (deleted runs' rows and artifacts, deleted logged models)
    goes for good. It needs the database itself: a server's store is the server's to collect."""
    result = subprocess.run(
        [sys.executable, "-m", "mlflow", "gc", "--backend-store-uri", store, "--tracking-uri", store],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise DataError(f"{store}: mlflow gc exited with status {result.returncode}: {last}")


def prune_command(store: str, experiment: str, keep: int, dry_run: bool) -> None:
    """`tinytf store prune`: soft-delete what `plan_prune` names through MlflowClient, then `mlflow
    gc` on a SQLite store; with `dry_run`, only list it."""
    if keep < 1:
        raise DataError(f"--keep {keep}: keep at least 1 run of each stage (the newest)")
    client = _client(store)
    doomed, models, kept = plan_prune(client, store, experiment, keep)
    runs = sum(1 + len(d.descendants) for d in doomed)
    verb = "would delete" if dry_run else "deleting"
    for item in doomed:
        print(f"{verb} {item.line()}")
    print(
        f"{store}, experiment {experiment!r}: {verb} {len(doomed)} top-level runs ({runs} runs in all) "
        f"and {len(models)} logged models; keeping the {keep} newest of each stage"
        + (f", and {kept} older ones whose model a registered version serves" if kept else "")
    )
    if dry_run or not doomed:
        return
    for item in doomed:
        for run_id in (*item.descendants, item.run.info.run_id):
            client.delete_run(run_id)
    for model_id in models:
        client.delete_logged_model(model_id)
    if store.startswith("sqlite:"):
        collect_garbage(store)
        print("mlflow gc: their rows and artifacts are gone")
    else:
        print(f"soft-deleted; run `mlflow gc --backend-store-uri DATABASE` where {store} keeps its store")
