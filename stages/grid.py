"""Stage `grid` (one cell of a DVC matrix), round one: the classifier trained with one optimizer x
lr x batch size x epochs, from grid.start, on grid.seed. Writes the trained model (<out>.pt and
<out>.json) and the cell's curves, final validation metrics and per-text validation results
(<out>.result.json); `grid_finalists` reruns the best cells on more seeds and `evaluate` picks the
winner among them. Adding a value to a list in params.yaml runs only the new cells.
"""

import sys

import common

from tinytf.analysis.grid import cell_key, cells, write_cell
from tinytf.params.config import load_params as validated_params
from tinytf.params.schema import parse_overrides
from tinytf.tracking.connect import project_root
from tinytf.tracking.runs import TrackerCallback, params_hash, stage_run
from tinytf.tracking.study import report_best
from tinytf.train.grid import logged_params, train_cell
from tinytf.train.progress import matrix_line


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
    grid = params.grid

    cell = {"optimizer": args.optimizer, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs}
    key = cell_key(**cell)
    logged = logged_params(params, cell, grid.seed)
    group = params_hash(params.as_dict())  # one MLflow parent run per matrix and its params
    staged = common.staged_outputs(args, f"grid-{key}", whole=("out",))
    with (
        stage_run(
            "grid",
            logged,
            run_name=f"grid-{key}",
            group_key=group,
            system_metrics=True,
            group_params=params.as_dict(),
        ) as tracker,
        staged,
    ):
        common.log_token_inputs(tracker, args.data, "sentiment", ("train", "validation"))
        run = train_cell(
            params, cell, grid.seed, args.data, args.pretrained, [TrackerCallback(tracker)], f"grid {key}"
        )
        tracker.set_tags(
            {"tinytf.precision": run.runtime.precision, "tinytf.compile": str(run.runtime.compile)}
        )
        write_cell(args.out, key, run.model, run.result)
        accuracy = run.result["final"]["validation_accuracy"]
        # the run's one number to compare, and its parent's best (tinytf.tracking.study)
        tracker.call("report_best", report_best, project_root(), "validation_accuracy", accuracy)
        line, order = f"grid {key}: validation accuracy {accuracy:.4f}", cells(whole_grid(args))
        if cell in order:  # DVC runs the matrix's cells in this order, one stage each (a cell by hand: not)
            line += "; grid cells " + matrix_line(
                order.index(cell) + 1, len(order), run.result["train_seconds"]
            )
        print(line, file=sys.stderr)


def whole_grid(args):
    """The grid's lists, for the progress line alone: read from the whole params, not the stage's
    declared keys, which leave them out on purpose (a new value reruns only its own cells)."""
    return validated_params(args.params, parse_overrides(args.overrides)).grid


if __name__ == "__main__":
    common.run(main)
