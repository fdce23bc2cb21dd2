"""Stage `grid` (one cell of a DVC matrix): the classifier trained with one optimizer x lr x
batch size x epochs, from grid.init (hf: the external encoder of the `hf:` section, with its
own tokenizer), with grid.seed. Writes the trained model (<out>.pt and
<out>.json) and the cell's curves and final validation metrics (<out>.result.json); `evaluate`
picks the best cell. Adding a value to a list in params.yaml runs only the new cells.
"""

import dataclasses
import sys
import time
from pathlib import Path

import common

from tinytf.analysis.grid import cell_key
from tinytf.io import write_json
from tinytf.model.checkpoint import save_model
from tinytf.tracking.runs import TrackerCallback, params_hash, stage_run
from tinytf.train.classify import (
    ClassifierRecipe,
    SentimentData,
    build_classifier,
    build_hf_classifier,
    classifier_config,
    classifier_runtime,
    planned_steps,
    train_classifier,
)


def main() -> None:
    parser = common.stage_parser("grid", __doc__)
    parser.add_argument("--optimizer", required=True, help="torch.optim class name")
    parser.add_argument("--lr", required=True, type=float, help="learning rate")
    parser.add_argument("--batch-size", required=True, type=int, help="batch size")
    parser.add_argument("--epochs", required=True, type=int, help="epochs")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/sentiment/")
    parser.add_argument("--pretrained", required=True, help="the pretrained model (.pt)")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    params = common.load_params("grid", args)
    grid_params, finetune_params = params.grid, params.finetune

    cell = {"optimizer": args.optimizer, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs}
    key = cell_key(**cell)
    logged = {
        "grid": {
            **cell,
            "init": grid_params.init,
            "seed": grid_params.seed,
            "weight_decay": grid_params.weight_decay,
            "dropout": grid_params.dropout,
        },
        "tokenize": {"max_length": params.tokenize.max_length},
        **({"hf": dataclasses.asdict(params.hf)} if grid_params.init == "hf" else {}),
    }
    group = params_hash(params.as_dict())  # one MLflow parent run per matrix and its params
    staged = common.staged_outputs(args, f"grid-{key}", whole=("out",))
    with (
        stage_run("grid", logged, run_name=f"grid-{key}", group_key=group, system_metrics=True) as tracker,
        staged,
    ):
        common.log_token_inputs(tracker, args.data, "sentiment", ("train", "validation"))
        data = SentimentData.load(args.data)
        max_length = params.tokenize.max_length
        if grid_params.init == "hf":
            max_length = params.hf.max_length
            model = build_hf_classifier(params.hf.checkpoint, len(data.classes), max_length, grid_params.seed)
            data = data.for_hf(args.data, model)
        else:
            config = classifier_config(args.pretrained, len(data.classes), grid_params.dropout)
            model = build_classifier(grid_params.init, config, args.pretrained, grid_params.seed)
        runtime = classifier_runtime(finetune_params, planned_steps(data, args.batch_size, args.epochs))
        tracker.set_tags({"tinytf.precision": runtime.precision, "tinytf.compile": str(runtime.compile)})
        began = time.perf_counter()
        recipe = ClassifierRecipe(
            init=grid_params.init,
            **cell,
            max_length=max_length,
            seed=grid_params.seed,
            weight_decay=grid_params.weight_decay,
            warmup_ratio=finetune_params.warmup_ratio,
        )
        run = train_classifier(
            model, data, recipe, runtime, callbacks=[TrackerCallback(tracker)], desc=f"grid {key}"
        )
        final = {k: v for k, v in run.history[-1].items() if k not in ("epoch", "step")}
        # suffixes are appended, not swapped: the stem holds the lr's dot ("lr0.001")
        checkpoint = Path(f"{args.out}.pt")
        save_model(checkpoint, run.model, stage="grid")
        write_json(
            Path(f"{args.out}.result.json"),
            {
                "cell": cell,
                "history": run.history,
                "final": final,
                "checkpoint": checkpoint.name,
                "precision": runtime.precision,
                "compile": runtime.compile,
                # the report's "who pretrained the body" table: size and cost of this start
                "parameters": sum(t.numel() for t in run.model.parameters()),
                "train_seconds": round(time.perf_counter() - began, 1),
            },  # what `auto` chose here
        )
        print(f"grid {key}: validation accuracy {final['validation_accuracy']:.4f}", file=sys.stderr)


if __name__ == "__main__":
    common.run(main)
