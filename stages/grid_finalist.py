"""Stage `grid_finalists` (one cell of a DVC matrix over grid.finalists x grid.finalist_seeds),
round two of the grid: the cell that round one (data/grid) ranked `--rank` by validation accuracy
(ties: lower validation loss, then cell order), trained again on `--seed`. Writes the model and
result files as `grid` does, at <out>.{pt,json,result.json}; `evaluate` takes the winner on the
mean over the round-one seed and these.
"""

import sys

import common

from tinytf.analysis.grid import cell_at_rank, cell_key, finalist_key, write_cell
from tinytf.params.config import load_params as validated_params
from tinytf.params.schema import parse_overrides
from tinytf.tracking.connect import project_root
from tinytf.tracking.runs import TrackerCallback, params_hash, stage_run
from tinytf.tracking.study import report_best
from tinytf.train.grid import logged_params, train_cell
from tinytf.train.progress import matrix_line


def main() -> None:
    parser = common.stage_parser("grid_finalists", __doc__)
    parser.add_argument("--rank", required=True, type=int, help="the round-one rank to run (1 = best)")
    parser.add_argument("--seed", required=True, type=int, help="the seed to run it on")
    parser.add_argument("--grid", required=True, help="folder of the round-one cells")
    parser.add_argument("--data", required=True, help="folder holding tokenizer.json and tokens/sentiment/")
    parser.add_argument("--pretrained", required=True, help="the pretrained model (.pt)")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args()
    params = common.load_params("grid_finalists", args)
    grid = params.grid

    cell = cell_at_rank(grid, args.grid, args.rank)
    key = cell_key(**cell)
    logged = logged_params(params, cell, args.seed, rank=args.rank)
    group = params_hash(params.as_dict())  # one MLflow parent run per matrix and its params
    name = f"grid_finalists-{finalist_key(args.rank, args.seed)}"
    staged = common.staged_outputs(args, name, whole=("out",))
    run_name = f"grid_finalists-{key}-seed{args.seed}"  # the cell, not only its rank, in the UI
    with (
        stage_run(
            "grid_finalists",
            logged,
            run_name=run_name,
            group_key=group,
            system_metrics=True,
            group_params=params.as_dict(),
        ) as tracker,
        staged,
    ):
        common.log_token_inputs(tracker, args.data, "sentiment", ("train", "validation"))
        desc = f"finalist {args.rank} {key} seed {args.seed}"
        run = train_cell(
            params, cell, args.seed, args.data, args.pretrained, [TrackerCallback(tracker)], desc
        )
        tracker.set_tags(
            {"tinytf.precision": run.runtime.precision, "tinytf.compile": str(run.runtime.compile)}
        )
        write_cell(args.out, finalist_key(args.rank, args.seed), run.model, run.result, rank=args.rank)
        accuracy = run.result["final"]["validation_accuracy"]
        # the run's one number to compare, and its parent's best (tinytf.tracking.study)
        tracker.call("report_best", report_best, project_root(), "validation_accuracy", accuracy)
        # for the progress line alone, the lists from the whole params: a finalist reads only its
        # own rank and seed (a new seed reruns only its own runs)
        whole = validated_params(args.params, parse_overrides(args.overrides)).grid
        line, ranks, seeds = (
            f"{desc}: validation accuracy {accuracy:.4f}",
            whole.finalists,
            whole.finalist_seeds,
        )
        if args.rank in ranks and args.seed in seeds:  # DVC runs rank x seed in this order, one stage each
            done = ranks.index(args.rank) * len(seeds) + seeds.index(args.seed) + 1
            line += "; finalist runs " + matrix_line(
                done, len(ranks) * len(seeds), run.result["train_seconds"]
            )
        print(line, file=sys.stderr)


if __name__ == "__main__":
    common.run(main)
