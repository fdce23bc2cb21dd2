"""Large bring-your-own data: the `prepare` stage on a generated N-row csv (1M by default),
against `pandas.read_csv` of the same file measured in the same run.

Each side runs in its own process, so its peak memory (ru_maxrss) is its own. The stage runs
as `dvc repro` would run it, with the repository's params.yaml except that the sentiment data
is the generated csv (train only: validation and test are carved). Its wall time includes
the rest of what prepare does with that data (the PTB corpus, the in-domain copies of the
sentiment train texts in the LM's train split, the data card); the peer only parses. The
last line is the headline.

    python benchmarks/prepare_scale.py [--rows 1000000] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from timing import record

REPO = Path(__file__).resolve().parent.parent


def write_reviews(path: Path, rows: int, seed: int = 0) -> None:
    """Review-like rows: 5-60 words from a 20k-word vocabulary, some with commas and quotes."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(20_000)] + ["great", "awful", "movie", 'the "best"', "plot,"])
    chunk = 100_000
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write("review,label\n")
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            lengths = rng.integers(5, 60, n)
            picks = rng.integers(0, len(words), lengths.sum())
            texts = np.split(words[picks], np.cumsum(lengths)[:-1])
            frame = pd.DataFrame({"review": [" ".join(t) for t in texts], "label": rng.integers(0, 2, n)})
            frame.to_csv(handle, header=False, index=False)


# runs the command as its only child, then reports that child's peak resident memory (KiB)
PEAK_OF_CHILD = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def measured(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident memory (GiB) of one command, in a process of its own."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", PEAK_OF_CHILD, *command], cwd=REPO, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    peak_kib = int(result.stderr.strip().splitlines()[-1])
    return wall, peak_kib / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated csv")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tinytf-prepare-scale-") as tmp:
        tmp = Path(tmp)
        raw = tmp / "raw"
        raw.mkdir()
        csv_path = raw / "reviews.csv"
        write_reviews(csv_path, args.rows)
        size_mb = csv_path.stat().st_size / 1e6
        params = yaml.safe_load((REPO / "params.yaml").read_text())
        params["prepare"]["sentiment"].update(
            source="files", files={"train": str(csv_path)}, text_column="review", label_column="label"
        )
        params_path = tmp / "params.yaml"
        params_path.write_text(yaml.safe_dump(params))
        peer = [sys.executable, "-c", f"import pandas; pandas.read_csv({str(csv_path)!r})"]
        peer_wall, peer_peak = measured(peer)
        stage = [
            sys.executable,
            "stages/prepare.py",
            "--params",
            str(params_path),
            "--out",
            str(tmp / "prepared"),
        ]
        stage += ["--reports", str(tmp / "reports"), "--raw", str(raw)]
        stage += [item for override in args.overrides for item in ("--set", override)]
        stage_wall, stage_peak = measured(stage)
        print(f"csv: {args.rows:,} rows, {size_mb:.0f} MB")
        print(
            f"pandas.read_csv: {peer_wall:.1f} s ({args.rows / peer_wall:,.0f} rows/s), peak {peer_peak:.2f} GiB"
        )
        print(
            f"prepare stage:   {stage_wall:.1f} s ({args.rows / stage_wall:,.0f} rows/s), peak {stage_peak:.2f} GiB"
        )
        headline = (
            f"prepare: {args.rows / stage_wall:,.0f} rows/s, peak {stage_peak:.2f} GiB; "
            f"{stage_wall / peer_wall:.1f}x the time of pandas.read_csv alone"
        )
        print(headline)
    figures = {
        "ratio": stage_wall / peer_wall,
        "rows": args.rows,
        "csv_mb": size_mb,
        "prepare_s": stage_wall,
        "prepare_peak_gib": stage_peak,
        "read_csv_s": peer_wall,
        "read_csv_peak_gib": peer_peak,
    }
    record("prepare_scale", headline, figures, args)


if __name__ == "__main__":
    main()
