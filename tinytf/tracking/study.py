"""What tells one repro's runs apart in the MLflow UI: the study tag every run carries and the parent
run of each DVC matrix (its commit, params, best child and a note). Imported by `tinytf.tracking.runs`;
mlflow is imported inside the functions, so a stage without MLflow still imports this module."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import yaml

from tinytf.params.schema import flatten

STUDY = "tinytf.study"
NOTE = "mlflow.note.content"  # the run page's description, rendered as markdown
BEST_CHILD = "tinytf.best_child"
PARAMS_FILE = "params.yaml"

# what a matrix's parent run says of its children, on its run page
NOTES = {
    "grid": "Round one of the grid: one child per cell (optimizer x lr x batch size x epochs), "
    "trained on `grid.seed`. `best_validation_accuracy` is the best cell's (its name: tag "
    "`tinytf.best_child`). To compare the cells: select the children, Compare, then a parallel "
    "coordinates plot of `params.grid.lr`, `params.grid.batch_size` against `validation_accuracy`.",
    "grid_finalists": "Round two of the grid: the best cells of round one, each on "
    "`grid.finalist_seeds` (children named by cell and seed). `evaluate` serves the cell with the "
    "best mean validation accuracy over its seeds; `best_validation_accuracy` here is the best "
    "single run's. Chart `validation_accuracy` grouped by `params.grid.optimizer`.",
    "baselines": "The baselines on the fine-tuning runs' subsets and seeds: one child per TF-IDF + "
    "logistic regression fit (its C chosen on validation), beside it the majority class. Tagged "
    "`tinytf.start` = `tfidf_lr` and `tinytf.snapshot` = `final` as the fine-tuning curve's runs, "
    "their metrics at step = the label count; this run's `tfidf_lr_test_accuracy` and "
    "`majority_test_accuracy` are the means over seeds at the same steps. `best_validation_accuracy`"
    " is the best fit's (tag `tinytf.best_child`).",
    "variants": "Architecture variants: one child per positional encoding x head merge x seed, each "
    "a short pretraining. `best_validation_perplexity` is the lowest (tag `tinytf.best_child`); "
    "chart `validation_perplexity` grouped by the tag `tinytf.cell`.",
}


def study_id(commit: str, params_file: str | Path = PARAMS_FILE) -> str:
    """`<params hash>@<commit>`, the same on every run of one repro. The hash is of params.yaml's
    values (a comment does not change it); a temporary experiment hashes its own copy's."""
    try:
        # libyaml where built in: a stage opens a run per fine-tuning run, each hashing the file
        values = yaml.load(
            Path(params_file).read_text(encoding="utf-8"), getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except (OSError, yaml.YAMLError):
        values = None
    blob = json.dumps(values, sort_keys=True, default=str).encode()
    return f"{hashlib.sha256(blob).hexdigest()[:12]}@{commit[:12]}"


def flat_params(params: dict) -> dict[str, str]:
    """MLflow param values: nested keys dotted, lists and dicts as JSON."""
    return {k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in flatten(params).items()}


@contextlib.contextmanager
def parent_lock(root: Path) -> Iterator[None]:
    """The cells of a matrix run as separate processes (at the same time under `dvc queue start -j
    N`): finding or creating their parent, and updating its best child, happen one at a time."""
    import fcntl

    with open(root / ".mlflow-parent.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def group_parent(mlflow, experiment: str, group: str, group_key: str, tags: dict, params: dict) -> str:
    """Find or create the parent run of one DVC matrix in one study (`tags`: the commit and study),
    holding the params it summarises and a note."""
    study = tags.get(STUDY, "")
    exp = mlflow.get_experiment_by_name(experiment)
    found = mlflow.search_runs(
        [exp.experiment_id],
        filter_string=f"tags.`tinytf.group` = '{group}' and tags.`tinytf.group_key` = '{group_key}' "
        f"and tags.`{STUDY}` = '{study}'",
        max_results=1,
        output_format="list",
    )
    if found:
        return found[0].info.run_id
    from mlflow.entities import Param

    client = mlflow.MlflowClient()
    tags = {"tinytf.group": group, "tinytf.group_key": group_key, "tinytf.stage": f"{group} (parent)", **tags}
    if group in NOTES:
        tags[NOTE] = NOTES[group]
    run = client.create_run(exp.experiment_id, run_name=group, tags=tags)
    flat = [Param(k, v) for k, v in flat_params(params).items()]
    for start in range(0, len(flat), 100):  # MLflow's limit of params a batch
        client.log_batch(run.info.run_id, params=flat[start : start + 100])
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def report_best(root: Path, metric: str, value: float, higher: bool = True) -> None:
    """Log `value` as the active run's `metric` and, when it beats the parent's `best_<metric>`, make
    it the parent's best (with this run's name as `tinytf.best_child`). Each child logs its own
    value before taking the lock, so the last to take it sees every one before it."""
    import mlflow

    mlflow.log_metric(metric, value)
    run = mlflow.active_run()
    client = mlflow.MlflowClient()
    parent = client.get_run(run.info.run_id).data.tags.get("mlflow.parentRunId")
    if parent is None or not math.isfinite(value):
        return
    with parent_lock(root):
        held = client.get_run(parent).data.metrics.get(f"best_{metric}")
        if held is None or (value > held if higher else value < held):
            client.log_metric(parent, f"best_{metric}", value)
            client.set_tag(parent, BEST_CHILD, run.info.run_name)
