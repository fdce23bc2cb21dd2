"""Stage `evaluate`: pick the best grid cell by validation accuracy (ties: lower validation
loss), evaluate it once on test (accuracy with a bootstrap 95 % interval, per-class P/R/F1,
confusion matrix), write the headline metrics (with the labelled-data curve and the
baselines beside it), and register the cell's model in the MLflow
registry with the alias `champion`.
"""

import json
import os
import sys
from pathlib import Path

import common

from tinytf.analysis.evaluation import classification_report, headline_metrics
from tinytf.analysis.grid import BEST_COLUMNS, best_cell, load_cells
from tinytf.data.predictions import prediction_rows
from tinytf.io import write_json, write_parquet, write_text
from tinytf.model.checkpoint import load_model
from tinytf.model.hf import HFClassifier
from tinytf.tracking.runs import stage_run
from tinytf.train.classify import SentimentData, classifier_runtime, evaluate_test_split


def main() -> None:
    parser = common.stage_parser("evaluate", __doc__)
    parser.add_argument("--grid", required=True, help="folder of the grid cells")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/sentiment/")
    parser.add_argument("--finetune", required=True, help="summary.json of the finetune stage")
    parser.add_argument("--baselines", required=True, help="summary.json of the baselines stage")
    parser.add_argument("--metrics", required=True, help="the headline metrics JSON to write")
    parser.add_argument("--reports", required=True, help="folder for test_report.json and grid.csv")
    parser.add_argument("--predictions", required=True, help="the best cell's test predictions (.parquet)")
    args = parser.parse_args()
    params = common.load_params("evaluate", args)

    staged = common.staged_outputs(args, "evaluate", into=("reports",), whole=("metrics", "predictions"))
    with stage_run("evaluate", params.as_dict()) as tracker:
        with staged:
            registered = evaluate(args, params, tracker)
        # the outputs are in place: only now may @champion move to the version they describe (a
        # kill before this leaves the alias on the previous version, which the previous outputs
        # describe)
        if registered:
            tracker.call("set_alias", point_alias, *registered)


def evaluate(args, params, tracker) -> tuple[str, str, str] | None:
    """Test the best cell, write the outputs (into the staging paths of `args`), log them and
    register the model: (name, alias, version) for the alias to move to once the outputs are in
    place, or None (tracking off, or a temporary experiment, which leaves the alias alone)."""
    common.log_token_inputs(tracker, args.data, "sentiment", ("test",))
    table = load_cells(params.grid, args.grid)
    best = best_cell(table)
    checkpoint = Path(args.grid) / best["checkpoint"]
    data, model = SentimentData.load(args.data), load_model(checkpoint)
    max_length = params.tokenize.max_length
    if isinstance(model, HFClassifier):  # grid.init hf: its own tokenizer, carried in the checkpoint
        data, max_length = data.for_hf(args.data, model), model.config.max_length
    runtime = classifier_runtime(params.finetune)
    test = evaluate_test_split(model, data, max_length, runtime)
    report = classification_report(
        test["predictions"],
        test["labels"],
        data.classes,
        params.evaluate.bootstrap_resamples,
        params.base.seed,
    )
    best_values = {k: (v.item() if hasattr(v, "item") else v) for k, v in best[BEST_COLUMNS].items()}
    finetune = json.loads(Path(args.finetune).read_text())
    baselines = json.loads(Path(args.baselines).read_text())
    metrics = headline_metrics(report, best_values, finetune, baselines)
    reports = Path(args.reports)
    write_json(Path(args.metrics), metrics)
    write_json(reports / "test_report.json", report)
    write_text(reports / "grid.csv", table.to_csv(index=False))
    write_predictions(args.predictions, params, best, test)

    low, high = report["accuracy_ci95"]
    tracker.log_metrics(
        {
            "test_accuracy": report["accuracy"],
            "test_accuracy_ci_low": low,
            "test_accuracy_ci_high": high,
            "test_macro_f1": report["macro_f1"],
        }
    )
    tracker.set_tags({"tinytf.best_cell": str(best["key"])})
    tracker.log_artifact(args.metrics)
    tracker.log_artifact(reports / "test_report.json")
    registered = tracker.call(
        "register_model",
        register_champion,
        checkpoint,
        Path(args.data),
        max_length,
        params.evaluate.registry_name,
    )
    print(
        f"evaluate: best cell {best['key']} (validation {best['validation_accuracy']:.4f}); "
        f"test accuracy {report['accuracy']:.4f} [{low:.4f}, {high:.4f}]",
        file=sys.stderr,
    )
    return registered


def write_predictions(path: str, params, best, test: dict) -> None:
    keys = {
        "arm": str(params.grid.init),
        "labels": "all",
        "seed": params.grid.seed,
        "start": str(best["key"]),
    }
    write_parquet(
        path, prediction_rows(keys, "test", test["labels"], test["predictions"], test["probabilities"])
    )


def register_champion(
    checkpoint: Path, data_dir: Path, max_length: int, name: str
) -> tuple[str, str, str] | None:
    # imported here: the rest of the stage runs where mlflow is not installed (tracking off)
    from tinytf.tracking.champion import log_champion
    from tinytf.tracking.runs import in_temporary_copy

    labels = data_dir / "tokens" / "sentiment" / "labels.json"
    # @champion names the workspace's own run: a temporary or queued experiment registers a
    # version tagged with its name, and `dvc exp apply` then a workspace run moves the alias
    experiment = os.environ.get("DVC_EXP_NAME", "")
    alias = None if in_temporary_copy() else "champion"
    tags = {"tinytf.experiment": experiment} if experiment else {}
    version = log_champion(checkpoint, data_dir / "tokenizer.json", labels, max_length, name, None, tags)
    said = "" if alias else f" for experiment {experiment or '?'} (@champion stays)"
    print(f"registered {name} version {version}{said}", file=sys.stderr)
    return (name, alias, version) if alias else None


def point_alias(name: str, alias: str, version: str) -> None:
    from tinytf.tracking.champion import set_alias

    set_alias(name, alias, version)
    print(f"{name} version {version} is @{alias}", file=sys.stderr)


if __name__ == "__main__":
    common.run(main)
