"""Stage `finetune`: the labelled-data curve. The same classifier from the pretrained, scratch
and probe (a linear probe) starts, fine-tuned on nested subsets of the train labels over paired
seeds (a seed fixes the subset, the head init and the batch order for every start). The pretrained
and probe starts fine-tune every body of pretrain.seeds (the i-th seed the (i mod B)-th body). Each start's
learning rate is chosen on validation and every run keeps its best validation epoch. The
pretrained start runs again from each pretraining snapshot: the pretraining-tokens curve. With `hf` in finetune.starts, an external
pretrained encoder (the `hf:` section) is one more start, with its own tokenizer and lr candidates.
Runs go side by side in worker processes, one per CPU core and one thread per run
(`TINYTF_WORKERS` sets their number; the numbers do not depend on it: tinytf.train.workers).
"""

import json
import sys
from pathlib import Path

import common
import pandas as pd

from tinytf.analysis.evaluation import curve_summary, gap_trend, snapshot_curve, start_summary
from tinytf.analysis.items import METHOD as ITEM_METHOD
from tinytf.analysis.items import ItemSource, bodies_by_seed, chosen_predictions
from tinytf.data.sentiment import test_groups
from tinytf.data.subsets import count_name
from tinytf.errors import DataError
from tinytf.io import write_json, write_parquet, write_text
from tinytf.tracking.finetune_runs import FinetuneChildren
from tinytf.tracking.runs import stage_run
from tinytf.train.finetune import FinetuneResult, check_label_counts, run_finetune
from tinytf.train.protocol import curve_plan, search_counts
from tinytf.train.recipes import find_bodies
from tinytf.train.run_store import RunStore


def summarize(
    result: FinetuneResult, f, hf, with_snapshots: bool, baselines: dict, items: ItemSource
) -> dict:
    """summary.json: the protocol, the all-labels comparison of the starts, the label and snapshot
    curves (every start against scratch and against TF-IDF + LR, over seeds and over test texts,
    Holm within each comparison) and the trend test, the chosen recipes, and what ran
    (precision, compile, workers) on this machine."""
    runs, runtime = result.runs, result.runtime
    everything = runs[runs["chosen"] & (runs["labels"] == "all") & (runs["snapshot"] == "final")]
    tests = {
        start: dict(zip(g["seed"], g["test_accuracy"], strict=True))
        for start, g in everything.groupby("start")
    }
    summary = start_summary(
        {start: tests[start] for start in f.starts}, sorted(tests["scratch"]), f.epochs, result.classes
    )
    curve = curve_summary(runs, f.starts, baselines["label_curve"], items)
    for key, test in curve.get("all", {}).items():  # the all-labels tests, Holm-adjusted across the curve
        if key.endswith("_vs_scratch"):
            summary[key] = test
    summary.update(
        # fixed before the results: the report prints it first
        protocol={
            "seeds": list(f.seeds),
            "label_counts": [count_name(c) for c, _ in curve_plan(f)],
            "lrs": list(f.lrs),
            "hf_lrs": list(hf.lrs) if hf else None,
            "dropouts": list(f.dropouts),
            "search_labels": [count_name(c) for c in search_counts(f)],
            "search_seeds": result.search_seeds,
            "search": "successive halving over search_seeds",
            "patience": f.patience,
            "pretrain_seeds": result.pretrain_seeds,
            "tests": "each start against scratch and against TF-IDF + LR per label count by a "
            "multi-bootstrap over pretraining runs, fine-tuning seeds and test texts by movie, Holm "
            "across label counts within each comparison; as diagnostics, paired t over seeds (one "
            f"set of bodies and test texts held fixed) and {ITEM_METHOD} (the runs held fixed); "
            "trend: one OLS slope of the paired differences on log10 labels per seed, one-sample t "
            "over the seeds' slopes",
        },
        recipes=result.recipes,
        pretrain_seeds=result.pretrain_seeds,
        patience=f.patience,
        label_curve=curve,
        trend=gap_trend(curve) if "pretrained" in f.starts else None,
        snapshot_curve=snapshot_curve(runs, count_name(f.snapshot_labels)) if with_snapshots else [],
        snapshot_labels=count_name(f.snapshot_labels),
        # what `auto` chose on this machine: a rerun elsewhere that chose otherwise is visible
        precision=runtime.precision,
        compile=runtime.compile,
        # processes the runs went to, one thread each (TINYTF_WORKERS): speed only, never the numbers
        workers=result.workers,
        parameters=result.parameters,
        hf_checkpoint=hf.checkpoint if hf else None,
        hf_max_length=hf.max_length if hf else None,
    )
    return summary


def main() -> None:
    parser = common.stage_parser("finetune", __doc__)
    parser.add_argument(
        "--data",
        required=True,
        help="folder holding tokenizer.json, tokens/sentiment/ and prepared/sentiment/",
    )
    parser.add_argument("--pretrained", required=True, help="folder of the pretrained bodies (seed<N>.pt)")
    parser.add_argument(
        "--snapshots", required=True, help="folder of each body's pretraining snapshots (seed<N>/epoch<K>.pt)"
    )
    parser.add_argument(
        "--reports", required=True, help="folder for runs.csv, curves.csv, summary.json, timings.csv"
    )
    parser.add_argument("--baselines", required=True, help="the baselines stage's summary.json")
    parser.add_argument("--baseline-predictions", required=True, help="the baselines stage's predictions")
    parser.add_argument("--predictions", required=True, help="every run's predictions (.parquet)")
    parser.add_argument(
        "--state",
        help="folder that keeps each finished run until the stage ends: a stopped stage started again "
        "trains only the runs it had not finished (the same params, data, code and runtime)",
    )
    args = parser.parse_args()
    params = common.load_params("finetune", args)

    check_label_counts(params.finetune, args.data)  # before the MLflow run: a refused count leaves none
    for path in (args.baselines, args.baseline_predictions):  # before any run: the comparisons need them
        if not Path(path).exists():
            raise DataError(f"{path}: not found; stage 'baselines' writes it: run `dvc repro baselines`")
    bodies = find_bodies(args.pretrained, args.snapshots, params.pretrain.seeds)
    baselines = json.loads(Path(args.baselines).read_text())
    baseline_predictions = pd.read_parquet(args.baseline_predictions)
    staged = common.staged_outputs(args, "finetune", into=("reports",), whole=("predictions",))
    with stage_run("finetune", params.as_dict(), system_metrics=True) as tracker, staged:
        # every run of the study a child run, logged once the search has chosen (its role and name)
        children = FinetuneChildren()
        finetune_params = params.finetune
        hf_params = params.hf if "hf" in finetune_params.starts else None
        result = run_finetune(
            finetune_params,
            params.tokenize.max_length,
            bodies,
            args.data,
            (),
            children,
            hf_params,
            args.state,
        )
        runtime = result.runtime
        children.log(result.runs, tracker)
        items = ItemSource(
            chosen_predictions(result.predictions, result.runs),
            baseline_predictions,
            test_groups(args.data),  # without movies, the summary's `sources` say "text"
            bodies_by_seed(result.runs),
        )
        summary = summarize(result, finetune_params, hf_params, bool(bodies[0].snapshots), baselines, items)
        tracker.set_tags(
            {
                "tinytf.precision": runtime.precision,
                "tinytf.compile": str(runtime.compile),
                "tinytf.workers": str(result.workers),
            }
        )
        reports = Path(args.reports)
        write_text(reports / "runs.csv", result.runs.to_csv(index=False))
        write_text(reports / "curves.csv", result.curves.to_csv(index=False))
        write_text(reports / "timings.csv", result.timings.to_csv(index=False))
        write_json(reports / "summary.json", summary)
        write_parquet(args.predictions, result.predictions)
        n_train = result.runs.groupby("labels")["n_train"].first()  # the curve's x, as MLflow's step
        for labels, entry in summary["label_curve"].items():
            tracker.log_metrics(
                {f"{start}_test_accuracy": entry[start]["mean"] for start in finetune_params.starts},
                step=int(n_train[labels]),
            )
            line = ", ".join(f"{start} {entry[start]['mean']:.4f}" for start in finetune_params.starts)
            print(f"finetune {labels} labels: {line}", file=sys.stderr)
        tracker.log_params(
            {
                f"chosen_{knob}_{start}_{labels}": recipe[knob]
                for labels, by_start in result.recipes.items()
                for start, recipe in by_start.items()
                for knob in ("lr", "dropout")
            }
        )
        for name in ("runs.csv", "curves.csv", "summary.json", "timings.csv"):
            tracker.log_artifact(reports / name)
    RunStore(args.state, "").clear()  # the outputs are in place: they hold every run now


if __name__ == "__main__":
    common.run(main)
