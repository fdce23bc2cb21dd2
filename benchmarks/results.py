"""The benchmarks' recorded runs as markdown: per script, its latest runs, newest first, each
with its date, machine, commit and headline. Every benchmark appends its runs to
benchmarks/results/<script>.jsonl (timing.record); $TINYTF_BENCH_RESULTS points elsewhere.

    python benchmarks/results.py [--dir DIR] [--last 5] [script ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from timing import results_dir

KEYS = ("date", "headline", "machine", "commit")


def read_runs(path: Path) -> list[dict]:
    """The runs of one results file, oldest first; a line that is not a run is an error naming it."""
    runs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
        missing = [key for key in KEYS if not isinstance(run, dict) or key not in run]
        if missing:
            raise ValueError(f"{path}:{number}: a run without {', '.join(missing)}")
        runs.append(run)
    return runs


def machine_cell(machine: dict) -> str:
    """The GPU where the run used one, else the CPU with its bf16 units and the cores it had."""
    if machine.get("gpu"):
        return machine["gpu"]
    units = ", ".join(machine.get("bf16_units") or []) or "no bf16 units"
    return f"{machine.get('cpu', 'unknown')} ({units}), {machine.get('usable_cores', '?')} cores"


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(script: str, runs: list[dict], last: int) -> str:
    """One script's section: its `last` latest runs, newest first."""
    shown = runs[::-1][:last]
    count = f"{len(runs)} run{'s' * (len(runs) != 1)} recorded, the latest {len(shown)}:"
    lines = [f"## {script}", "", count, "", "| date | machine | commit | headline |", "|---|---|---|---|"]
    for run in shown:
        commit = run["commit"] + ("+dirty" if run.get("dirty") else "")
        lines.append(
            f"| {cell(run['date'])} | {cell(machine_cell(run['machine']))} | {cell(commit)} | "
            f"{cell(run['headline'])} |"
        )
    return "\n".join(lines)


def render(folder: Path, last: int, scripts: list[str]) -> str:
    """Every results file's section in `folder` (only `scripts`' when given), by script name."""
    paths = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if scripts:
        paths = [path for path in paths if path.stem in scripts]
    sections = [table(path.stem, runs, last) for path in paths if (runs := read_runs(path))]
    return "\n\n".join(sections) if sections else f"no recorded runs in {folder}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="results folder (default: $TINYTF_BENCH_RESULTS, else benchmarks/results)",
    )
    parser.add_argument("--last", type=int, default=5, help="runs shown per script (default 5)")
    parser.add_argument("scripts", nargs="*", help="only these scripts (default: every results file)")
    args = parser.parse_args()
    try:
        print(render(args.dir or results_dir(), args.last, args.scripts))
    except ValueError as exc:  # a damaged results file: one line naming it, exit 2, as the stages do
        print(f"results: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
