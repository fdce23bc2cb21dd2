"""Stage `variants` (one cell of a DVC matrix): course report 004's study of positional encoding x head
merge. Each cell is a short pretraining with the study's budget (variants.steps, lr, batch size,
eval batches) and the cell's encoding, merge and seed; it writes that cell's final losses,
perplexities and sample-sentence perplexities. `variants_table` summarizes the cells.
"""

import sys

import common

from tinytf.analysis.variants import cell_key, write_cell
from tinytf.params.schema import to_dict
from tinytf.tracking.connect import project_root
from tinytf.tracking.runs import TrackerCallback, params_hash, stage_run
from tinytf.tracking.study import report_best
from tinytf.train.pretrain import pretrain
from tinytf.train.variants import cell_params


def main() -> None:
    parser = common.stage_parser("variants", __doc__)
    parser.add_argument("--pos", required=True, help="positional encoding of this cell")
    parser.add_argument("--merge", required=True, help="head merge of this cell")
    parser.add_argument("--seed", required=True, type=int, help="seed of this cell")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/corpus/")
    parser.add_argument("--data-card", required=True, help="data.json of prepare")
    parser.add_argument("--out", required=True, help="the cell's result JSON")
    args = parser.parse_args()
    params = common.load_params("variants", args)

    model, pretrain_params = cell_params(params.model, params.pretrain, params.variants, args.pos, args.merge)
    key = cell_key(args.pos, args.merge, args.seed)
    logged = {"base": {"seed": args.seed}, "model": to_dict(model), "pretrain": to_dict(pretrain_params)}
    group = params_hash(params.as_dict())  # one MLflow parent run per matrix and its params
    staged = common.staged_outputs(args, f"variants-{key}", whole=("out",))
    with (
        stage_run(
            "variants", logged, run_name=f"variants-{key}", group_key=group, group_params=params.as_dict()
        ) as tracker,
        staged,
    ):
        tracker.set_tags({"tinytf.cell": key})
        result = pretrain(
            model,
            pretrain_params,
            args.seed,
            data_dir=args.data,
            stats_path=args.data_card,
            params_hash=params_hash(logged),
            callbacks=[TrackerCallback(tracker)],
        )
        metrics = dict(result.final)
        metrics["samples"] = {
            s["name"]: {"loss": s["loss"], "perplexity": s["perplexity"]} for s in result.samples
        }
        # what `auto` resolved to here: recorded, so a rerun on another machine is visible
        metrics.update(precision=result.runtime.precision, compile=result.runtime.compile)
        write_cell(args.out, args.pos, args.merge, args.seed, metrics)
        tracker.log_metrics(
            {f"sample_{k}_perplexity": v["perplexity"] for k, v in metrics["samples"].items()}
        )
        perplexity = metrics["validation_perplexity"]  # its parent's best is the lowest
        tracker.call("report_best", report_best, project_root(), "validation_perplexity", perplexity, False)
        print(
            f"variants {key}: validation perplexity {metrics['validation_perplexity']:.1f}", file=sys.stderr
        )


if __name__ == "__main__":
    common.run(main)
