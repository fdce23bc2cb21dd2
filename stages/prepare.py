"""Stage `prepare`: fetch and verify the corpus and sentiment sources, split them, and write
the parquet splits and the data card. Nothing is written until every check has passed.

params: base.seed, prepare
"""

import sys

import common

from tinytf.data.prepare import run_prepare
from tinytf.tracking import stage_run


def main() -> None:
    parser = common.stage_parser("prepare", __doc__)
    parser.add_argument("--out", required=True, help="folder for the parquet splits (corpus/, sentiment/)")
    parser.add_argument("--reports", required=True, help="folder for the data card (data.md, data.json)")
    args = parser.parse_args()
    params = common.load_params("prepare", args)

    with stage_run("prepare", params.as_dict()) as tracker:
        datasets, _ = run_prepare(params.prepare, params.base.seed, args.out, args.reports)
        for data in datasets:
            for split, frame in data.splits.items():
                path = f"{args.out}/{data.name}/{split}.parquet"
                tracker.log_dataset(frame, path, f"{data.name}-{split}", split)
                tracker.log_metrics({f"{data.name}.{split}.rows": len(frame)})
            rows = ", ".join(f"{s} {len(f)}" for s, f in data.splits.items())
            print(f"prepared {data.name} ({data.source}): {rows}", file=sys.stderr)
        tracker.log_artifact(f"{args.reports}/data.md")
        tracker.log_artifact(f"{args.reports}/data.json")


if __name__ == "__main__":
    common.run(main)
