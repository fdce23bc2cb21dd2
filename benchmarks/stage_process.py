"""A stage process's start and end with the garbage collector as the stages set it
(tinytf.system.collector: paused for imports, heap frozen for exit) against Python's default.

Each side is its own process (`TINYTF_GC=pause` or `default`), started in turn round after round,
doing what every stage process does around its work: `import common` and the imports of the
heaviest stage (tinytf.train.pretrain: torch, pandas, tinytf), an MLflow run opened and closed by
`stage_run` in a SQLite store (MLflow's import and store), the first optimizer (torch.optim's
first use imports torch._dynamo), and exit. A first process, not timed, creates the store's
tables. Figures are medians over rounds, wall-clock from start to exit; the speedup is a ratio of
medians, and the last line is the headline: `speedup: <ratio>x ...`.

    python benchmarks/stage_process.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import record

ROOT = Path(__file__).resolve().parents[1]
MODES = ("default", "pause")

# one stage process, as stages/*.py start: `import common` first
CHILD = """
import time
started = time.time()
import json, sys
import common
import torch
from tinytf.tracking.runs import stage_run
from tinytf.train.pretrain import pretrain

def main():
    imported = time.time()
    with stage_run("benchmark", {"stage": "process"}, run_name="stage-process"):
        torch.optim.AdamW(torch.nn.Linear(8, 8).parameters())
    print(json.dumps({"started": started, "imported": imported, "done": time.time()}), flush=True)

common.run(main)
"""


def run_child(mode: str, store: Path) -> dict:
    env = {
        **os.environ,
        "TINYTF_GC": mode,
        "MLFLOW_TRACKING_URI": f"sqlite:///{store / 'mlflow.db'}",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "stages"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    launched = time.time()
    # in the store's folder: MLflow puts its default artifact root beside where it runs
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=store, env=env, capture_output=True, text=True)
    ended = time.time()
    if done.returncode:
        sys.exit(f"stage process benchmark: the {mode} process failed:\n{done.stderr}")
    marks = json.loads(done.stdout.splitlines()[-1])
    return {
        "imports": marks["imported"] - marks["started"],
        "work": marks["done"] - marks["imported"],
        "exit": ended - marks["done"],
        "total": ended - launched,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        run_child("default", store)  # creates the store's tables (seconds of migrations), not timed
        for round_ in range(args.rounds):
            # alternate which side starts a round, so neither always follows the other
            for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                results[mode].append(run_child(mode, store))
                print(
                    f"round {round_ + 1} {mode}: {results[mode][-1]['total']:.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
    print(
        f"a stage process's start and end: `import common` and the pretrain stage's imports, an MLflow "
        f"run in a SQLite store, the first optimizer, exit; {args.rounds} rounds, each side in its own "
        f"process, medians"
    )
    figures = {}
    for mode in MODES:
        rows = results[mode]
        figures[mode] = f = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        print(
            f"  {mode:8s} TINYTF_GC={mode:8s} imports {f['imports']:5.2f} s  MLflow run and optimizer "
            f"{f['work']:5.2f} s  exit {f['exit']:5.2f} s  total {f['total']:5.2f} s  (rounds "
            + ", ".join(f"{r['total']:.2f}" for r in rows)
            + ")"
        )
    pause, default = figures["pause"], figures["default"]
    headline = (
        f"speedup: {default['total'] / pause['total']:.2f}x a stage process's start and end with the "
        f"collector paused for imports and the heap frozen for exit (TINYTF_GC=pause, the stages' "
        f"setting) over Python's default, {pause['total']:.2f} vs {default['total']:.2f} s"
    )
    print(headline)
    record("stage_process", headline, {"ratio": default["total"] / pause["total"], **figures}, args)


if __name__ == "__main__":
    sys.exit(main())
