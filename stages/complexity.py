"""Stage `complexity` (course report 003): time and memory of encoder self-, decoder self- and cross
attention over sequence lengths and hidden sizes, and their log-log exponents.
"""

from pathlib import Path

import common

from tinytf.course.complexity import complexity_markdown, fit_exponents, measure, plot_loglog
from tinytf.io import write_text
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("complexity", __doc__)
    parser.add_argument("--reports", required=True, help="folder for measurements, fits, table and plot")
    args = parser.parse_args()
    params = common.load_params("complexity", args)
    c = params.complexity

    staged = common.staged_outputs(args, "complexity", into=("reports",))
    with stage_run("complexity", params.as_dict()) as tracker, staged:
        measured = measure(
            lengths=tuple(c.lengths),
            hidden_sizes=tuple(c.hidden_sizes),
            batch=c.batch,
            heads=c.heads,
            repeats=c.repeats,
            device=c.device,
            fixed_length=c.fixed_length,
            seed=params.base.seed,
        )
        fits = fit_exponents(measured)
        reports = Path(args.reports)
        write_text(reports / "measurements.csv", measured.to_csv(index=False))
        write_text(reports / "fits.csv", fits.to_csv(index=False))
        write_text(reports / "complexity.md", complexity_markdown(measured, fits))
        plot_loglog(measured, fits, reports / "attention_cost.png")
        self_length = fits[(fits["variable"] == "length") & (fits["kind"] == "encoder_self")]
        if not self_length.empty:
            tracker.log_metrics(
                {
                    "self_attention_time_exponent": float(self_length["time_exponent"].median()),
                    "self_attention_memory_exponent": float(self_length["memory_exponent"].median()),
                }
            )
        for name in ("complexity.md", "attention_cost.png", "fits.csv"):
            tracker.log_artifact(reports / name)


if __name__ == "__main__":
    common.run(main)
