"""Stage `baselines`: majority class and TF-IDF (word 1–2-grams + character 2–5-grams) +
logistic regression, C chosen on validation, fitted on the same nested label subsets and seeds
as the finetune stage and scored on the same test split. Every transformer accuracy in the
report stands next to these.
"""

import sys
from pathlib import Path

import common
import pandas as pd

from tinytf.analysis.baselines import baseline_curve
from tinytf.data.splits import SPLITS
from tinytf.data.subsets import ALL, check_counts, count_name
from tinytf.errors import DataError
from tinytf.io import write_json, write_parquet
from tinytf.tracking.runs import stage_run
from tinytf.tracking.study import BEST_CHILD, NOTE, NOTES
from tinytf.train.protocol import curve_plan


def read_split(path: Path) -> tuple[list[str], object]:
    if not path.exists():
        raise DataError(f"{path}: file not found; run the prepare stage first")
    frame = pd.read_parquet(path)
    return frame["text"].astype(str).tolist(), frame["label"].to_numpy()


def main() -> None:
    parser = common.stage_parser("baselines", __doc__)
    parser.add_argument("--data", required=True, help="folder of prepared sentiment splits (text, label)")
    parser.add_argument("--reports", required=True, help="folder for summary.json")
    parser.add_argument(
        "--predictions", required=True, help="TF-IDF + LR's predictions per fit and text (.parquet)"
    )
    args = parser.parse_args()
    params = common.load_params("baselines", args)
    baseline, finetune = params.baselines, params.finetune

    splits = {s: read_split(Path(args.data) / f"{s}.parquet") for s in SPLITS}
    check_counts(finetune.label_counts, len(splits["train"][1]), str(Path(args.data) / "train.parquet"))
    staged = common.staged_outputs(args, "baselines", into=("reports",), whole=("predictions",))
    with stage_run("baselines", params.as_dict()) as tracker, staged:
        plan = curve_plan(finetune)
        best: list[tuple[float, str]] = []  # the fit with the best validation accuracy, and its run

        def progress(count, seed, fit):
            print(
                f"baselines {count_name(count)} labels seed {seed}: majority {fit.majority:.4f}, "
                f"tfidf_lr {fit.tfidf_lr:.4f} (C {fit.tfidf_lr_c:g})",
                file=sys.stderr,
            )
            # each fit a child run, beside the finetune runs of the same label count and seed
            tags = {"start": "tfidf_lr", "labels": count_name(count), "seed": seed, "c": fit.tfidf_lr_c}
            name = f"baselines-{tags['labels']}-seed{seed}"
            best[:] = [max(best + [(fit.tfidf_lr_validation, name)], key=lambda b: b[0])]
            with stage_run("baselines", {"baselines": tags}, run_name=name, nested=True) as run:
                # start "final" as the finetune runs of the final model: one filter shows the curve
                run.set_tags(
                    {f"tinytf.{key}": str(value) for key, value in {**tags, "snapshot": "final"}.items()}
                )
                train = len(splits["train"][1])
                run.log_metrics(
                    {
                        "test_accuracy": fit.tfidf_lr,
                        "validation_accuracy": fit.tfidf_lr_validation,
                        "majority_test_accuracy": fit.majority,
                    },
                    step=train if count == ALL else min(count, train),  # the label count, as finetune's
                )

        curve, predictions = baseline_curve(
            splits, plan, baseline.cs, tuple(baseline.word_ngrams), tuple(baseline.char_ngrams), progress
        )
        write_json(Path(args.reports) / "summary.json", {"label_curve": curve})
        write_parquet(args.predictions, predictions)
        for entry in curve.values():  # at step = the label count: a chart's x axis, as finetune's
            tracker.log_metrics(
                {
                    "majority_test_accuracy": entry["majority"]["mean"],
                    "tfidf_lr_test_accuracy": entry["tfidf_lr"]["mean"],
                },
                step=entry["n_train"],
            )
        tracker.log_artifact(Path(args.reports) / "summary.json")
        tracker.set_tags({NOTE: NOTES["baselines"]} | ({BEST_CHILD: best[0][1]} if best else {}))
        if best:
            tracker.log_metrics({"best_validation_accuracy": best[0][0]})


if __name__ == "__main__":
    common.run(main)
