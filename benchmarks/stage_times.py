"""Where a whole pipeline run's time goes: each stage's wall time, from the MLflow runs the stages
opened (every stage run is one; a matrix's cells are one each, summed under the stage's name),
between two moments. `durations.py` calls it after `make-repro` and `tiny-preset`; run it alone
for a run whose window you know:

    python benchmarks/stage_times.py --since 2026-11-27T21:25:39Z [--until ...] [--store URI]

Nested runs (a fine-tuning run inside the finetune stage) are inside their stage's time and are
not counted again. What is left of the window besides the stages is DVC's own work between them
(hashing, the lock file) and process start-up before a stage opens its run. Records the table in
results/stage_times.jsonl; the headline is the slowest stage's share.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

from timing import ROOT, record


def stage_seconds(store: str, since: float, until: float) -> dict[str, float]:
    """{stage: seconds} of the top-level runs that started in [since, until] (epoch seconds)."""
    import mlflow

    mlflow.set_tracking_uri(store)
    runs = mlflow.search_runs(
        search_all_experiments=True,
        filter_string=f"attributes.start_time >= {int(since * 1000)}",
        output_format="list",
    )
    by_id = {run.info.run_id: run for run in runs}
    seconds: dict[str, float] = {}
    for run in runs:
        tags, info = run.data.tags, run.info
        stage = tags.get("tinytf.stage", "")
        if not stage or stage.endswith("(parent)") or not info.end_time or info.start_time / 1000 > until:
            continue
        parent = tags.get("mlflow.parentRunId")
        if parent:  # a matrix cell (under its group's parent) counts; a run inside a stage's does not
            found = by_id.get(parent) or mlflow.get_run(parent)
            if not found.data.tags.get("tinytf.stage", "").endswith("(parent)"):
                continue
        seconds[stage] = seconds.get(stage, 0.0) + (info.end_time - info.start_time) / 1000
    return seconds


def default_store() -> str:
    """$MLFLOW_TRACKING_URI, else the repository's own SQLite store (as the stages use it)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{ROOT / 'mlflow.db'}"


def slowest_first(seconds: dict[str, float]) -> dict[str, float]:
    """The stages, slowest first, to a tenth of a second (what the records hold)."""
    return {stage: round(seconds[stage], 1) for stage in sorted(seconds, key=lambda s: -seconds[s])}


def moment(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def report(seconds: dict[str, float], window: float) -> tuple[str, list[str]]:
    lines = [f"  {stage:<16} {s:8.1f} s  {100 * s / window:5.1f} %" for stage, s in seconds.items()]
    rest = window - sum(seconds.values())
    lines.append(f"  {'(between)':<16} {rest:8.1f} s  {100 * rest / window:5.1f} %")
    slowest = max(seconds, key=seconds.get)
    headline = f"stage times: {slowest} {100 * seconds[slowest] / window:.0f} % of {window:.0f} s"
    return headline, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--since", required=True, help="UTC ISO time the run began")
    parser.add_argument("--until", help="UTC ISO time it ended (default: now)")
    parser.add_argument("--store", help="tracking URI (default: $MLFLOW_TRACKING_URI or ./mlflow.db)")
    parser.add_argument("--label", default="", help="what ran, recorded with the figures")
    args = parser.parse_args(argv)
    store = args.store or default_store()
    since = moment(args.since)
    until = moment(args.until) if args.until else datetime.datetime.now(datetime.UTC).timestamp()
    seconds = stage_seconds(store, since, until)
    if not seconds:
        print(f"stage_times: no stage run started after {args.since} in {store}", file=sys.stderr)
        return 2
    seconds = slowest_first(seconds)
    headline, lines = report(seconds, until - since)
    print("\n".join(lines))
    print(headline)
    figures = {"stages_s": seconds, "window_s": round(until - since, 1), "label": args.label}
    record("stage_times", headline, figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
