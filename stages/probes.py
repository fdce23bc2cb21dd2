"""Stage `probes` (course report 004 §1): construct queries and keys that make attention select one
value or average several, in closed form, and verify each against its target weights.
"""

import sys
from pathlib import Path

import common

from tinytf.course.attention_probes import probes_markdown, run_probes
from tinytf.io import write_text
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("probes", __doc__)
    parser.add_argument("--reports", required=True, help="folder for probes.csv and probes.md")
    args = parser.parse_args()
    params = common.load_params("probes", args)
    probe_params = params.probes

    staged = common.staged_outputs(args, "probes", into=("reports",))
    with stage_run("probes", params.as_dict()) as tracker, staged:
        table = run_probes(
            seed=probe_params.seed,
            n=probe_params.n,
            d=probe_params.d,
            scale=probe_params.scale,
            tol=probe_params.tolerance,
        )
        reports = Path(args.reports)
        write_text(reports / "probes.csv", table.to_csv(index=False))
        write_text(reports / "probes.md", probes_markdown(table))
        passed = int(table["pass"].sum())
        tracker.log_metrics(
            {
                "probes_passed": passed,
                "probes_total": len(table),
                "max_weight_error": float(table["weight_err"].max()),
            }
        )
        tracker.log_artifact(reports / "probes.md")
        print(
            f"probes: {passed}/{len(table)} constructions within tolerance {probe_params.tolerance}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    common.run(main)
