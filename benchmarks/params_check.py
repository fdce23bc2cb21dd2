"""The params check every matrix cell runs before its stage (`python -m tinytf.params.check
params.yaml` in dvc.yaml): torch.optim's optimizer names read from its source, as the check does,
against importing torch.optim to list them, as it did. Each side is its own process, started in
turn round after round; figures are medians of wall-clock from start to exit, and the last line is
the headline: `speedup: <ratio>x ...`.

    python benchmarks/params_check.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from timing import ROOT, record

SIDES = {
    "source": "from tinytf.params.check import main; raise SystemExit(main(['params.yaml']))",
    "import": (
        "import tinytf.params.config as c; c.optimizer_names = c.optimizer_classes\n"
        "from tinytf.params.check import main; raise SystemExit(main(['params.yaml']))"
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    for _ in range(args.rounds):
        for side, code in SIDES.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
            seconds[side].append(time.perf_counter() - started)
    medians = {side: statistics.median(s) for side, s in seconds.items()}
    for side, s in seconds.items():
        print(f"  {side:6s} {medians[side]:.2f} s  (rounds {', '.join(f'{x:.2f}' for x in s)})")
    headline = (
        f"speedup: {medians['import'] / medians['source']:.1f}x the params check with torch.optim's names "
        f"read from its source over importing it, {medians['source']:.2f} vs {medians['import']:.2f} s"
    )
    print(headline)
    record(
        "params_check", headline, {"ratio": medians["import"] / medians["source"], "seconds": seconds}, args
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
