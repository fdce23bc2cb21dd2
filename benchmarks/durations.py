"""How long a newcomer's commands take: time one and record it, the one source of the durations
README.md, CONTRIBUTING.md and docs/ quote (render_durations.py writes them there).

    python benchmarks/durations.py NAME -- COMMAND ...   e.g. make-repro -- make repro

NAME is one of render_durations.NAMES. The command runs once, from the repository root; its wall
time, exit status and the machine go to benchmarks/results/durations.jsonl. Run it on the machine
the docs speak of (the 2-core CPU), then `python benchmarks/render_durations.py`.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time

from render_durations import NAMES, phrase
from timing import ROOT, record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", choices=NAMES, help="which duration the command measures")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to time")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: put it after --, e.g. make-repro -- make repro")
    began, start = time.time(), time.perf_counter()
    code = subprocess.call(command, cwd=ROOT)
    seconds = round(time.perf_counter() - start, 1)
    if code:  # a failed run's time says nothing about a successful one
        print(f"durations: `{shlex.join(command)}` exited with {code}; nothing recorded", file=sys.stderr)
        return code
    figures = {"name": args.name, "command": shlex.join(command), "seconds": seconds}
    if args.name in ("make-repro", "tiny-preset"):  # the pipeline's stages opened MLflow runs
        figures["stages_s"] = stages(began, time.time())
    headline = f"{args.name}: {seconds:.1f} s ({phrase(seconds)})"
    record("durations", headline, figures, args)
    print(headline)
    return 0


def stages(began: float, ended: float) -> dict[str, float] | None:
    """Each stage's wall time in the window (stage_times.py), None where no store says."""
    from stage_times import default_store, slowest_first, stage_seconds

    try:
        return slowest_first(stage_seconds(default_store(), began, ended))
    except Exception as exc:  # a measurement aid: the duration stands without it
        print(f"durations: no stage times ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


if __name__ == "__main__":
    sys.exit(main())
