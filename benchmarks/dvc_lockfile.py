"""DVC's reads of dvc.lock with ruamel.yaml's C parser (ruamel.yaml.clib) against its pure-Python one.

`dvc repro` reads dvc.lock before every stage it runs (a safe load: the stage's recorded hashes)
and, after the stage, parses it again in round-trip mode and writes it back whole (to keep its
layout). The default pipeline's dvc.lock is about 7,000 lines: 39 stages, and every grid and
variants cell lists the 40-odd modules it reaches. ruamel.yaml 0.19 made its C extension an
optional extra, so a plain `pip install dvc` reads the file with the pure-Python parser; tinytf's
dependencies add `ruamel.yaml.clib`. The round trip cannot use the C parser (ruamel has none for
it) and is timed for scale, not in the ratio.

Both loads run in one process, round after round in turn; figures are medians over rounds, the
speedup the ratio of medians, and the two loads must give the same data. The last line is the
headline: `speedup: <ratio>x ...`.

    python benchmarks/dvc_lockfile.py [--lockfile dvc.lock] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

from timing import median, record


def loader(pure: bool):
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=pure)
    return yaml.load


def round_trip(text: str) -> str:
    """What DVC does to dvc.lock after each stage (dvc.utils.serialize.modify_yaml): parse with
    comments and layout kept, then dump the whole file."""
    from dvc.utils.serialize._yaml import _dump, parse_yaml_for_update

    data = parse_yaml_for_update(text, "dvc.lock")
    out = io.StringIO()
    _dump(data, out)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lockfile", default="dvc.lock", help="the lock file to read (default: dvc.lock)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    path = Path(args.lockfile)
    if not path.exists():
        sys.exit(f"{path}: not found (run from the repository root, or pass --lockfile)")
    from ruamel.yaml.main import CParser

    if CParser is None:
        sys.exit(
            "ruamel.yaml's C parser is not installed: pip install ruamel.yaml.clib (tinytf's dependencies have it)"
        )
    text = path.read_text(encoding="utf-8")
    loads = {"pure Python": loader(pure=True), "C (ruamel.yaml.clib)": loader(pure=False)}
    results = {name: load(text) for name, load in loads.items()}
    if results["pure Python"] != results["C (ruamel.yaml.clib)"]:
        sys.exit(f"{path}: the two parsers read different data")
    seconds: dict[str, list[float]] = {name: [] for name in [*loads, "round trip"]}
    for _ in range(args.rounds):
        for name, load in loads.items():
            started = time.perf_counter()
            load(text)
            seconds[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        round_trip(text)
        seconds["round trip"].append(time.perf_counter() - started)
    lines = text.count("\n")
    print(
        f"{path}: {lines:,} lines, {len(results['pure Python'].get('stages', {}))} stages; median of {args.rounds} rounds"
    )
    for name, values in seconds.items():
        what = (
            "load (DVC, before each stage)"
            if name != "round trip"
            else "parse + dump (DVC, after each stage; no C path)"
        )
        print(f"  {name:22s} {median(values):6.3f} s  {what}")
    pure, fast = median(seconds["pure Python"]), median(seconds["C (ruamel.yaml.clib)"])
    headline = (
        f"speedup: {pure / fast:.2f}x DVC's load of {path.name} with ruamel.yaml's C parser "
        f"({pure - fast:.2f} s less per stage run)"
    )
    print(headline)
    figures = {
        "ratio": pure / fast,
        "pure_python_s": pure,
        "c_s": fast,
        "round_trip_s": median(seconds["round trip"]),
        "lines": lines,
    }
    record("dvc_lockfile", headline, figures, args)


if __name__ == "__main__":
    main()
