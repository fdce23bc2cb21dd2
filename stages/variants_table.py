"""Stage `variants_table`: course report 004's perplexity table from the cells of `variants`, mean ± std
over seeds per positional encoding x head merge (only the cells the current params define), and
summary.json: what the design detects and one verdict per main effect.
"""

import common

from tinytf.analysis.power import variants_verdicts
from tinytf.analysis.variants import summarize, write_summary
from tinytf.io import write_json
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("variants_table", __doc__)
    parser.add_argument("--cells", required=True, help="folder of the variants cells' JSON results")
    parser.add_argument("--reports", required=True, help="folder for variants.md, cells.csv, summary.json")
    args = parser.parse_args()
    params = common.load_params("variants_table", args)
    v = params.variants

    staged = common.staged_outputs(args, "variants_table", into=("reports",))
    with stage_run("variants_table", params.as_dict()) as tracker, staged:
        cells = summarize(v, args.cells)
        write_summary(cells, args.reports, len(v.seeds), v.steps)
        summary = {"steps": v.steps, "seeds": list(v.seeds), **variants_verdicts(cells)}
        write_json(f"{args.reports}/summary.json", summary)
        tracker.log_artifact(f"{args.reports}/variants.md")
        tracker.log_artifact(f"{args.reports}/summary.json")
        tracker.log_artifact(f"{args.reports}/cells.csv")


if __name__ == "__main__":
    common.run(main)
