"""Stage `evaluate`: pick the grid's winner, the finalist with the best mean validation accuracy
over its seeds (ties: lower mean validation loss), test it against the runner-up and compare the
optimizers (tinytf.analysis.grid.grid_selection, all on validation); serve the winner's run with
the best validation accuracy among its seeds, evaluated once on test (accuracy with a bootstrap 95 % interval, per-class P/R/F1, confusion
matrix), write the headline metrics (with the labelled-data curve and the baselines beside it) and
the model card, and register the cell's model in the MLflow registry with the card as its
description and its test predictions as a table.

In the workspace's own run the new version becomes @champion only when it is at least as good as
the current champion on the validation split, both scored through their pyfunc; the champion it
replaces becomes @previous (`tinytf champion rollback` swaps them back). The decision is
`promotion` in reports/metrics.json and the tag `tinytf.promotion` on the version. A temporary or
queued experiment registers without comparing, and leaves the aliases alone.
"""

import json
import sys
from pathlib import Path

import common

from tinytf.analysis.evaluation import classification_report
from tinytf.analysis.grid import BEST_COLUMNS, grid_selection, load_cells, read_results
from tinytf.analysis.headline import headline_metrics
from tinytf.data.predictions import prediction_rows
from tinytf.data.sentiment import SentimentData
from tinytf.io import write_json, write_parquet, write_text
from tinytf.model.checkpoint import read_config
from tinytf.model.param_count import classifier_parameters
from tinytf.report.model_card import CardFacts, model_card
from tinytf.tracking import registry
from tinytf.tracking.runs import stage_run
from tinytf.train.classify import classifier_runtime, evaluate_test_split
from tinytf.train.starts import build_start


def main() -> None:
    parser = common.stage_parser("evaluate", __doc__)
    parser.add_argument("--grid", required=True, help="folder of the grid cells (round one)")
    parser.add_argument("--finalists", required=True, help="folder of the finalists' runs (round two)")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json, tokens/ and prepared/")
    parser.add_argument("--data-card", required=True, help="the prepare stage's data card (data.json)")
    parser.add_argument("--finetune", required=True, help="summary.json of the finetune stage")
    parser.add_argument("--baselines", required=True, help="summary.json of the baselines stage")
    parser.add_argument("--metrics", required=True, help="the headline metrics JSON to write")
    parser.add_argument(
        "--reports", required=True, help="folder for test_report.json, grid.csv, model_card.md"
    )
    parser.add_argument("--predictions", required=True, help="the best cell's test predictions (.parquet)")
    args = parser.parse_args()
    params = common.load_params("evaluate", args)

    staged = common.staged_outputs(args, "evaluate", into=("reports",), whole=("metrics", "predictions"))
    with stage_run("evaluate", params.as_dict()) as tracker:
        with staged:
            promotion = evaluate(args, params, tracker)
        # the outputs are in place: only now may @champion move to the version they describe (a
        # kill before this leaves the alias on the previous version, which the previous outputs
        # describe)
        if promotion["candidate_version"]:
            tracker.call("promotion", registry.settle_promotion, params.evaluate.registry_name, promotion)


def evaluate(args, params, tracker) -> dict:
    """Test the best cell, register it, decide its promotion, write the outputs (into the staging
    paths of `args`) and log them; returns the decision (reports/metrics.json's `promotion`)."""
    common.log_token_inputs(tracker, args.data, "sentiment", ("test",))
    chosen = test_best_cell(args, params)
    name = params.evaluate.registry_name
    version, promotion = registry.register_and_gate(
        tracker,
        registry.Candidate(
            chosen["checkpoint"], Path(args.data), chosen["max_length"], chosen["data"].classes
        ),
        name,
        params.evaluate.promotion_tolerance,
    )
    best, selection = chosen["best"], chosen["selection"]
    best_values = {k: best[k] for k in BEST_COLUMNS}
    # which seeds the mean is over, and which of them is served
    best_values |= {"seeds": selection["winner"]["seeds"], "served_seed": selection["served"]["seed"]}
    finetune = json.loads(Path(args.finetune).read_text())
    baselines = json.loads(Path(args.baselines).read_text())
    metrics = headline_metrics(chosen["report"], best_values, finetune, baselines)
    metrics["grid_selection"] = selection
    metrics["promotion"] = promotion
    card = model_card(
        card_facts(args, params, chosen, metrics, f"{name} version {version}" if version else None)
    )
    write_outputs(args, params, chosen, metrics, card)
    log_outputs(args, tracker, chosen, card, (name, version))
    low, high = chosen["report"]["accuracy_ci95"]
    print(
        f"evaluate: winner {best['key']} (mean validation {best['validation_accuracy']:.4f}, "
        f"served seed {selection['served']['seed']}); "
        f"test accuracy {chosen['report']['accuracy']:.4f} [{low:.4f}, {high:.4f}]",
        file=sys.stderr,
    )
    return promotion


def test_best_cell(args, params) -> dict:
    """The grid's table, the selection (winner, runner-up, their test, the optimizer verdict), the
    winner as BEST_COLUMNS over its seeds, and the served run's model, data and test results."""
    results = read_results(params.grid, args.grid)  # round one, read once for both
    table = load_cells(params.grid, args.grid, results)
    selection = grid_selection(params.grid, args.grid, args.finalists, results)
    winner = selection["winner"]
    best = {
        **{k: winner[k] for k in ("key", "optimizer", "lr", "batch_size", "epochs")},
        "validation_accuracy": winner["validation_accuracy_mean"],
        "validation_loss": winner["validation_loss_mean"],
    }
    checkpoint = Path(selection["served"]["checkpoint"])
    served = build_start(
        "trained", SentimentData.load(args.data), args.data, checkpoint, params.tokenize.max_length
    )
    model, data, max_length = served.model, served.data, served.max_length
    test = evaluate_test_split(model, data, max_length, classifier_runtime(params.finetune))
    report = classification_report(
        test["predictions"],
        test["labels"],
        data.classes,
        params.evaluate.bootstrap_resamples,
        params.base.seed,
    )
    return {
        "table": table,
        "best": best,
        "selection": selection,
        "checkpoint": checkpoint,
        "model": model,
        "data": data,
        "max_length": max_length,
        "test": test,
        "report": report,
    }


def card_facts(args, params, chosen: dict, metrics: dict, registered: str | None) -> CardFacts:
    return CardFacts(
        meta=read_config(chosen["checkpoint"]),
        parameters=classifier_parameters(chosen["model"]),  # as the report counts: no LM head
        start=str(params.grid.start),
        max_length=chosen["max_length"],
        data=json.loads(Path(args.data_card).read_text())["sentiment"],
        best={**metrics["best"], "key": str(chosen["best"]["key"])},
        cells=len(chosen["table"]),
        seed=chosen["selection"]["served"]["seed"],
        report=chosen["report"],
        metrics=metrics,
        registered=registered,
    )


def write_outputs(args, params, chosen: dict, metrics: dict, card: str) -> None:
    reports = Path(args.reports)
    write_json(Path(args.metrics), metrics)
    write_json(reports / "test_report.json", chosen["report"])
    write_text(reports / "grid.csv", chosen["table"].to_csv(index=False))
    write_text(reports / "model_card.md", card)
    keys = {
        "start": str(params.grid.start),
        "labels": "all",
        "seed": chosen["selection"]["served"]["seed"],
        "snapshot": str(chosen["best"]["key"]),  # no snapshot here: the served cell in its place
    }
    test = chosen["test"]
    rows = prediction_rows(keys, "test", test["labels"], test["predictions"], test["probabilities"])
    write_parquet(args.predictions, rows)


def log_outputs(args, tracker, chosen: dict, card: str, registered: tuple[str, str | None]) -> None:
    report = chosen["report"]
    low, high = report["accuracy_ci95"]
    tracker.log_metrics(
        {
            "test_accuracy": report["accuracy"],
            "test_accuracy_ci_low": low,
            "test_accuracy_ci_high": high,
            "test_macro_f1": report["macro_f1"],
        }
    )
    tracker.set_tags({"tinytf.best_cell": str(chosen["best"]["key"])})
    for path in (
        Path(args.metrics),
        Path(args.reports) / "test_report.json",
        Path(args.reports) / "model_card.md",
    ):
        tracker.log_artifact(path)
    tracker.call(
        "log_table", registry.log_test_table, Path(args.data), chosen["data"].classes, chosen["test"]
    )
    if registered[1]:
        tracker.call("describe_model", registry.describe_version, *registered, card)


if __name__ == "__main__":
    common.run(main)
