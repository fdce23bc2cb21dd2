"""The GPU's utilisation and memory beside the GPU study's timings, without MLflow: gpu_study.sh
samples `nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,memory.total
--format=csv,noheader,nounits -l 1` in the background and writes each stage's start and end (Unix
seconds) to a file; this summarises the samples that fall in each stage's window.

    python benchmarks/gpu_use.py SAMPLES.csv STAGES.tsv [--json OUT.json]

Prints one line a stage (mean and peak utilisation, peak memory) and the whole run's last.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path


def read_samples(path: Path) -> list[tuple[float, float, float, float]]:
    """(Unix seconds, utilisation %, memory used MiB, memory total MiB) a sample; nvidia-smi stamps
    them in local time. Lines it could not measure ("[N/A]") or cut short are left out."""
    samples = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 4:
            continue
        try:
            when = datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((when, float(fields[1]), float(fields[2]), float(fields[3])))
        except ValueError:
            continue
    return samples


def read_stages(path: Path) -> list[tuple[str, float, float]]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(name, float(start), float(end)) for name, start, end in rows]


def summarise(samples, stages) -> dict:
    """{stage: figures} for each stage with samples in its window, and "all" over every stage."""
    out = {}
    windows = [*stages, ("all", min(s for _, s, _ in stages), max(e for _, _, e in stages))] if stages else []
    for name, start, end in windows:
        inside = [s for s in samples if start <= s[0] <= end]
        if not inside:
            continue
        util = [s[1] for s in inside]
        out[name] = {
            "samples": len(inside),
            "util_mean_pct": round(sum(util) / len(util), 1),
            "util_max_pct": max(util),
            "memory_max_mib": max(s[2] for s in inside),
            "memory_total_mib": inside[0][3],
        }
    return out


def lines(summary: dict) -> list[str]:
    return [
        f"{name}: GPU {f['util_mean_pct']:.0f}% busy on average (peak {f['util_max_pct']:.0f}%), memory peak "
        f"{f['memory_max_mib']:,.0f} of {f['memory_total_mib']:,.0f} MiB ({f['samples']} samples)"
        for name, f in summary.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("samples", type=Path)
    parser.add_argument("stages", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    samples = read_samples(args.samples) if args.samples.exists() else []
    summary = summarise(samples, read_stages(args.stages))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print("\n".join(lines(summary)) if summary else f"no GPU samples in {args.samples}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
