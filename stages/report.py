"""Stage `report`: reports/README.md and every table (markdown + CSV twin) and plot it links,
built from the upstream stages' output files only (nothing is trained or run here), and the
stages' own tables and summaries (data/reports/) published beside it. A missing input is listed
in the README with the command that makes it; a malformed one stops the stage naming the file.
"""

import sys
from pathlib import Path

import common

from tinytf.report.build import build_report
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("report", __doc__)
    parser.add_argument("--root", required=True, help="the workspace whose outputs are reported")
    parser.add_argument("--out", required=True, help="folder for README.md, tables/ and plots/")
    args = parser.parse_args()
    params = common.load_params("report", args)

    with stage_run("report", params.as_dict()) as tracker:
        written = build_report(params, args.root, args.out)
        for path in written:
            if path.suffix in (".md", ".csv", ".png"):
                folder = Path(args.out).name
                tracker.log_artifact(
                    path, f"{folder}/{path.parent.name}" if path.parent.name != folder else folder
                )
        print(f"report: wrote {len(written)} files; start at {args.out}/README.md", file=sys.stderr)


if __name__ == "__main__":
    common.run(main)
