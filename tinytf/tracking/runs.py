"""Every stage run is an MLflow run, and tracking never breaks training: the `Tracker` that
`stage_run` yields reports MLflow's first failure once on stderr and turns tracking off, so the
stage still writes its outputs. Core code only ever sees a `Tracker`, never mlflow itself."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tinytf.cli.urls import redacted
from tinytf.io import sha256_file
from tinytf.system import allocator
from tinytf.system.cpu import cpu_kind
from tinytf.system.record import git
from tinytf.tracking import study
from tinytf.tracking.connect import DEFAULT_EXPERIMENT, connect, project_root, tracking_uri


def params_hash(params: dict) -> str:
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


LOCK_RETRIES = 20


def _backoff(attempt: int) -> float:
    return min(0.2 * 2**attempt, 5.0)


LOCK_WAIT_S = sum(_backoff(a) for a in range(LOCK_RETRIES - 1))  # the retries' sleeps, SQLite's waits aside


def retry_locked(fn, *args, **kwargs):
    """Call fn, retrying while SQLite says "database is locked": parallel experiments (`dvc queue
    start -j 2`) share one mlflow.db, which lets one writer in at a time."""
    for attempt in range(LOCK_RETRIES):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if "database is locked" not in str(exc) or attempt == LOCK_RETRIES - 1:
                raise
            if attempt == 0:  # a wait the user can see, and its bound
                print(
                    f"tinytf: the MLflow store is locked by another writer; retrying for up to "
                    f"{LOCK_WAIT_S:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            time.sleep(_backoff(attempt))


class Tracker:
    """Forwards to MLflow while it works; after the first failure, says so once and goes quiet."""

    def __init__(self, mlflow_module: Any | None = None, reason: str | None = None):
        self._mlflow = mlflow_module
        self.failure: str | None = reason

    @property
    def active(self) -> bool:
        return self._mlflow is not None and self.failure is None

    def _call(self, what: str, fn, *args, **kwargs):
        """Run `fn` (a callable, or the name of an mlflow function) unless tracking is off."""
        if not self.active:
            return None
        try:
            if isinstance(fn, str):
                fn = getattr(self._mlflow, fn)
            return retry_locked(fn, *args, **kwargs)
        except Exception as exc:  # any tracking failure must not stop the stage
            self.disable(f"{what} failed: {type(exc).__name__}: {exc}")
            return None

    def disable(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason = redacted(reason)  # the store's URI may carry a password
            print(
                f"warning: MLflow tracking off for this run ({reason}); outputs are still written",
                file=sys.stderr,
            )

    def log_params(self, params: dict) -> None:
        self._call("log_params", "log_params", study.flat_params(params))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        clean = {k: float(v) for k, v in metrics.items() if v is not None}
        self._call("log_metrics", "log_metrics", clean, step=step)

    def log_metric_rows(self, rows: list[tuple[str, float, int]]) -> None:
        """(key, value, step) rows in one call (None values skipped), stamped now."""
        if not self.active:
            return
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, float(value), now, step) for key, value, step in rows if value is not None]
        run_id = self._mlflow.active_run().info.run_id
        self._call("log_batch", self._mlflow.MlflowClient().log_batch, run_id, metrics=metrics)

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        if Path(path).exists():
            self._call("log_artifact", "log_artifact", str(path), artifact_path)

    def log_dataset(self, frame, path: str | Path, name: str, context: str) -> None:
        def _log():
            with _dataset_warnings_silenced():
                # two of MLflow's passes over every value skipped: its digest maps type() over the
                # whole frame (the written file's sha256 covers every row), and its schema is
                # inferred value by value (a cached property: a sample fills it, one type a column)
                digest = sha256_file(path)[:8] if Path(path).exists() else None
                dataset = self._mlflow.data.from_pandas(frame, source=str(path), name=name, digest=digest)
                dataset.__dict__["schema"] = self._mlflow.models.infer_signature(frame.head(1000)).inputs
                self._mlflow.log_input(dataset, context=context)

        self._call("log_input", _log)

    def log_file_inputs(self, paths: dict[str, str | Path], context: str) -> None:
        """Files a run trained or was scored on, as metadata-only dataset inputs named by key."""

        def _log():
            from mlflow.data.dataset_source_registry import resolve_dataset_source
            from mlflow.data.meta_dataset import MetaDataset

            for name, path in paths.items():
                if Path(path).is_file():
                    with _dataset_warnings_silenced():
                        source = resolve_dataset_source(str(Path(path).resolve()))
                    dataset = MetaDataset(source, name=name, digest=sha256_file(path)[:8])
                    self._mlflow.log_input(dataset, context=context)

        self._call("log_input", _log)

    def set_tags(self, tags: dict[str, str]) -> None:
        self._call("set_tags", "set_tags", tags)

    def call(self, what: str, fn, *args, **kwargs):
        """Run `fn(*args)` as the logging calls run, for edge code that talks to MLflow itself
        (tinytf.tracking.champion, not imported here: stages that register no model skip it)."""
        return self._call(what, fn, *args, **kwargs)


@contextlib.contextmanager
def _dataset_warnings_silenced() -> Iterator[None]:
    """mlflow warns that a local path "can be interpreted in multiple ways" (its registry holds
    LocalArtifactDatasetSource twice) and that int columns cannot hold NaN: neither applies here."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


class TrackerCallback:
    """Training events -> MLflow metrics at their step or epoch (a `tinytf.train.loop.Callback` by
    shape: this module does not import torch)."""

    def __init__(self, tracker: Tracker, prefix: str = ""):
        self.tracker, self.prefix = tracker, prefix

    def on_step(self, step: int, metrics: dict) -> None:
        self.tracker.log_metrics(self._step_values(metrics), step=step)

    def on_epoch(self, epoch: int, metrics: dict) -> None:
        self.tracker.log_metrics(self._epoch_values(metrics), step=epoch)

    def on_end(self, metrics: dict) -> None:
        self.tracker.log_metrics(self._step_values(metrics))

    def replay(self, events: list[tuple[str, int, dict]]) -> None:
        """A finished run's events in one `log_batch`: a call a step is slow on a SQLite store
        (benchmarks/finetune_breakdown.py)."""
        rows = [
            (index, self._step_values(m) if name == "on_step" else self._epoch_values(m))
            for name, index, m in events
        ]
        self.tracker.log_metric_rows([(k, v, index) for index, values in rows for k, v in values.items()])

    def _step_values(self, metrics: dict) -> dict:
        return {f"{self.prefix}{k}": v for k, v in metrics.items()}

    def _epoch_values(self, metrics: dict) -> dict:
        return {f"{self.prefix}epoch_{k}": v for k, v in metrics.items() if k not in ("epoch", "step")}


def _open_run(
    experiment: str,
    stage: str,
    params: dict,
    run_name: str,
    nested: bool,
    group: tuple[str, dict] | None,
    resume: bool,
    system_metrics: bool,
    shared: dict[str, str],
):
    """Start (or resume) the run `stage_run` describes and mark other left-behind ones KILLED.
    `group`: the key and params of the matrix's parent run, which gets the `shared` tags too."""
    mlflow = retry_locked(connect, experiment)
    tags = {}
    if group is not None:
        with study.parent_lock(project_root()):
            parent = retry_locked(study.group_parent, mlflow, experiment, stage, group[0], shared, group[1])
        tags["mlflow.parentRunId"] = parent
    left = retry_locked(_left_behind, mlflow, experiment, stage, params_hash(params), run_name)
    # None leaves it to MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING
    system = {"log_system_metrics": True if system_metrics else None}
    if resume and left:
        retry_locked(mlflow.start_run, run_id=left.pop(0), nested=nested, **system)
    else:
        retry_locked(mlflow.start_run, run_name=run_name, nested=nested, tags=tags or None, **system)
    for run_id in left:
        retry_locked(mlflow.MlflowClient().set_terminated, run_id, "KILLED")
    return mlflow


def _left_behind(mlflow, experiment: str, stage: str, params_key: str, run_name: str) -> list[str]:
    """Ids of RUNNING runs of this stage, name and params whose process is gone (newest first).
    A run from another machine, or whose process is alive, is someone else's and is left alone."""
    runs = mlflow.search_runs(
        experiment_names=[experiment],
        filter_string=(
            f"attributes.status = 'RUNNING' and attributes.run_name = '{run_name}' and "
            f"tags.`tinytf.stage` = '{stage}' and tags.`tinytf.params_hash` = '{params_key}'"
        ),
        order_by=["attributes.start_time DESC"],
        output_format="list",
    )
    return [run.info.run_id for run in runs if _process_gone(run.data.tags)]


def _process_gone(tags: dict) -> bool:
    if tags.get("tinytf.host") != socket.gethostname() or not tags.get("tinytf.pid", "").isdigit():
        return False
    pid = int(tags["tinytf.pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


@contextlib.contextmanager
def stage_run(
    stage: str,
    params: dict,
    experiment: str | None = None,
    run_name: str | None = None,
    nested: bool = False,
    group_key: str | None = None,
    resume: bool = False,
    system_metrics: bool = False,
    group_params: dict | None = None,
) -> Iterator[Tracker]:
    """One MLflow run around a stage (or a nested child run); FAILED if the block raises.

    `group_key` makes the run a child of its DVC matrix's parent run in this study, which records
    `group_params`. The experiment is `MLFLOW_EXPERIMENT_NAME` unless given, else "tinytf": where
    runs are filed changes no output, so it is not a param. A run of the same stage, name and
    params left RUNNING by a dead process on this machine is continued when `resume`, else marked
    KILLED. `system_metrics`: MLflow samples CPU, memory and GPU beside the run's own metrics.
    """
    experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    if os.environ.get("TINYTF_TRACKING", "1") == "0":
        yield Tracker(None, "disabled by TINYTF_TRACKING=0")
        return
    if os.environ.get("RANK", "0") != "0":  # under torchrun, rank 0 alone logs
        yield Tracker(None)
        return
    commit = (git(project_root(), "rev-parse", "HEAD", timeout=10) or "unknown").strip()
    shared = {"mlflow.source.git.commit": commit, study.STUDY: study.study_id(commit)}
    group = None if group_key is None else (group_key, group_params or {})
    try:
        mlflow = _open_run(
            experiment, stage, params, run_name or stage, nested, group, resume, system_metrics, shared
        )
    except Exception as exc:
        tracker = Tracker(None)
        tracker.disable(f"cannot open store {tracking_uri()}: {type(exc).__name__}: {exc}")
        yield tracker
        return
    tracker = Tracker(mlflow)
    tags = {
        **shared,
        "tinytf.stage": stage,
        "tinytf.params_hash": params_hash(params),
        "tinytf.host": socket.gethostname(),
        "tinytf.pid": str(os.getpid()),
        "tinytf.cpu": cpu_kind(),
        "tinytf.allocator": allocator.setting(),
    }
    if os.environ.get("DVC_EXP_NAME"):
        tags["dvc.exp_name"] = os.environ["DVC_EXP_NAME"]
    tracker.set_tags(tags)
    tracker.log_params(params)
    status = "FAILED"
    try:
        yield tracker
        status = "FINISHED"
    finally:
        with contextlib.suppress(Exception):
            retry_locked(mlflow.end_run, status=status)
