"""Stage `finetune`: the same classifier from the pretrained, scratch and frozen (linear probe)
starts, several seeds each; per-epoch curves, test accuracy per arm, and the paired t-test of
each start against scratch (the same seed gives every arm the same head init and batch order).

params: finetune, tokenize.max_length
"""

import contextlib
import sys
from pathlib import Path

import common

from tinytf.analysis.evaluation import arm_summary
from tinytf.io import write_json, write_text
from tinytf.report.plots import plot_finetune_curves
from tinytf.tracking import TrackerCallback, stage_run
from tinytf.train.finetune import run_finetune


def main() -> None:
    parser = common.stage_parser("finetune", __doc__)
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/sentiment/")
    parser.add_argument("--pretrained", required=True, help="the pretrained model (.pt)")
    parser.add_argument("--reports", required=True, help="folder for curves.csv, curves.png, summary.json")
    args = parser.parse_args()
    params = common.load_params("finetune", args)

    with stage_run("finetune", params.as_dict()) as tracker:

        @contextlib.contextmanager
        def child_run(arm: str, seed: int):
            child = {"finetune": {"arm": arm, "seed": seed}}
            with stage_run("finetune", child, run_name=f"finetune-{arm}-seed{seed}", nested=True) as run:
                yield [TrackerCallback(run)]

        f = params.finetune
        result = run_finetune(f, params.tokenize.max_length, args.pretrained, args.data, child_run)
        curves, runtime = result.curves, result.runtime
        summary = arm_summary(result.tests, f.seeds, f.epochs, result.classes)
        # what `auto` chose on this machine: a rerun elsewhere that chose otherwise is visible
        summary.update(precision=runtime.precision, compile=runtime.compile)
        tracker.set_tags({"tinytf.precision": runtime.precision, "tinytf.compile": str(runtime.compile)})
        reports = Path(args.reports)
        write_text(reports / "curves.csv", curves.to_csv(index=False))
        write_json(reports / "summary.json", summary)
        plot_finetune_curves(curves, reports / "curves.png")
        for arm, values in summary["arms"].items():
            tracker.log_metrics(
                {
                    f"{arm}_test_accuracy_mean": values["test_accuracy_mean"],
                    f"{arm}_test_accuracy_std": values["test_accuracy_std"],
                }
            )
            print(
                f"finetune {arm}: test accuracy {values['test_accuracy_mean']:.4f} "
                f"± {values['test_accuracy_std']:.4f}",
                file=sys.stderr,
            )
        for name in ("curves.csv", "summary.json", "curves.png"):
            tracker.log_artifact(reports / name)


if __name__ == "__main__":
    common.run(main)
