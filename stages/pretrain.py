"""Stage `pretrain`: train the transformer as a causal (or masked) language model on the
tokenized corpus; evaluate loss and perplexity per split every epoch (word-level perplexity on
PTB), score the sample sentences (course report 004's table), and write the model for the fine-tuning
stages, plus a snapshot after each epoch but the last (the pretraining-tokens curve starts there).
A killed run started again resumes from --state, which also holds the snapshots taken so far; the
outputs are written to temporaries and put in place together at the end, so after a kill at any
point a rerun leaves every output, byte for byte, as an uninterrupted run would.
"""

import subprocess
import sys
from pathlib import Path

import common

from tinytf.errors import ParamsError
from tinytf.model.checkpoint import load_training_state
from tinytf.tracking.runs import TrackerCallback, params_hash, stage_run
from tinytf.train.distributed import relaunch_command
from tinytf.train.pretrain import pretrain, resume_key, write_outputs


def main() -> None:
    parser = common.stage_parser("pretrain", __doc__)
    parser.add_argument("--seed", type=int, required=True, help="this run's seed, one of pretrain.seeds")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/corpus/")
    parser.add_argument("--data-card", required=True, help="data.json of prepare (word counts for PTB)")
    parser.add_argument("--model", required=True, help="the pretrained model to write (.pt; .json beside it)")
    parser.add_argument("--reports", required=True, help="folder for metrics, curves and the sample table")
    parser.add_argument("--state", required=True, help="training-state checkpoint, for resuming")
    parser.add_argument(
        "--snapshots", required=True, help="folder for the model after each epoch but the last"
    )
    args = parser.parse_args()
    params = common.load_params("pretrain", args)
    relaunch = relaunch_command(params.pretrain.launcher, sys.argv)
    if relaunch:  # pretrain.launcher: this script again, under torchrun, from an argument list
        print(f"pretrain: starting under torchrun {' '.join(params.pretrain.launcher[1:])}", file=sys.stderr)
        sys.exit(subprocess.call(relaunch))
    if args.seed not in params.pretrain.seeds:
        raise ParamsError(f"--seed {args.seed}: not in pretrain.seeds {params.pretrain.seeds}")
    # the body's seed, apart from the list: one body's run and its resume key do not depend on the others
    logged = params.as_dict() | {"pretrain": params.as_dict()["pretrain"] | {"seeds": [args.seed]}}
    # resuming the training state continues the MLflow run the killed process left behind
    key = resume_key(params_hash(logged), args.data)
    resuming = params.pretrain.resume and load_training_state(args.state, key, say=False) is not None

    # whole: a sample table a masked LM no longer writes must not outlive its run
    staged = common.staged_outputs(args, f"pretrain-seed{args.seed}", whole=("model", "snapshots", "reports"))
    name = f"pretrain-seed{args.seed}"
    with (
        stage_run("pretrain", logged, run_name=name, resume=resuming, system_metrics=True) as tracker,
        staged,
    ):
        common.log_token_inputs(tracker, args.data, "corpus", ("train", "validation", "test"))
        result = pretrain(
            params.model,
            params.pretrain,
            args.seed,
            data_dir=args.data,
            stats_path=args.data_card,
            state_path=args.state,
            params_hash=params_hash(logged),
            callbacks=[TrackerCallback(tracker)],
            snapshot_dir=args.snapshots,
        )
        reports = Path(args.reports)
        metrics = write_outputs(
            result,
            Path(args.model),
            reports,
            {"params_hash": params_hash(logged), "pretrain_seed": args.seed},
        )
        for sample, values in metrics["samples"].items():
            tracker.log_metrics(
                {f"sample_{sample}_loss": values["loss"], f"sample_{sample}_perplexity": values["perplexity"]}
            )
        tracker.set_tags(
            {"tinytf.precision": result.runtime.precision, "tinytf.compile": str(result.runtime.compile)}
        )
        for name in ("metrics.json", "epochs.csv", "samples.md"):
            tracker.log_artifact(reports / name)
        tracker.log_artifact(Path(args.model).with_suffix(".json"))
        word = metrics.get("validation_word_perplexity")
        print(
            f"pretrain seed {args.seed}: validation perplexity {metrics['validation_perplexity']:.2f}"
            + (f" (per word {word:.1f})" if word is not None else ""),
            file=sys.stderr,
        )


if __name__ == "__main__":
    common.run(main)
