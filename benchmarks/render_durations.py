"""The durations the docs quote, written from benchmarks/results/durations.jsonl (the latest
record of each name), so that README.md, CONTRIBUTING.md and docs/ cannot disagree.

    python benchmarks/render_durations.py           # rewrite the figures in place
    python benchmarks/render_durations.py --check   # exit 1, naming each spot, where they differ

Each spot is a regular expression whose one group is the figure ("about 27 minutes"); a spot
that no longer matches its file is an error, so a reworded sentence is not silently skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "durations.jsonl"
NAMES = ("make-setup", "make-repro", "make-test", "tiny-preset")
# (file, spot whose group is the figure, which record)
SPOTS = (
    ("README.md", r"make setup .*\((about \d+ minutes?)\)", "make-setup"),
    ("README.md", r"make repro .*\((about \d+ minutes?) on a 2-core CPU\)", "make-repro"),
    ("README.md", r"make test .*\((about \d+ minutes?)\)", "make-test"),
    ("README.md", r"the whole pipeline in (about \d+ minutes?) \(the end-to-end", "tiny-preset"),
    ("CONTRIBUTING.md", r"make test .*\((about \d+ minutes?) on 2 cores\)", "make-test"),
    ("docs/performance.md", r"The default `make repro` takes (about \d+ minutes?) on a 2-core", "make-repro"),
)


def phrase(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    return f"about {minutes} minute{'s' if minutes > 1 else ''}"


def latest(results: Path = RESULTS) -> dict[str, float]:
    """Seconds of the newest record of each name."""
    newest: dict[str, tuple[str, float]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        if line.strip():
            run = json.loads(line)
            name, seconds = run["figures"]["name"], run["figures"]["seconds"]
            if name not in newest or run["date"] >= newest[name][0]:
                newest[name] = (run["date"], seconds)
    return {name: seconds for name, (_, seconds) in newest.items()}


def render(root: Path = ROOT, results: Path = RESULTS) -> dict[str, str]:
    """Each file's text with the recorded figures in its spots; raises ValueError for a spot
    gone from its file or a name without a record."""
    seconds = latest(results)
    texts: dict[str, str] = {}
    for file, spot, name in SPOTS:
        text = texts.get(file) or (root / file).read_text(encoding="utf-8")
        if name not in seconds:
            raise ValueError(f"{results}: no record of {name}; time it with benchmarks/durations.py")
        match = re.search(spot, text)
        if not match:
            raise ValueError(f"{file}: no longer has the {name} duration (/{spot}/); update SPOTS")
        texts[file] = text[: match.start(1)] + phrase(seconds[name]) + text[match.end(1) :]
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 where a file differs")
    args = parser.parse_args(argv)
    stale = []
    for file, text in render().items():
        if (ROOT / file).read_text(encoding="utf-8") != text:
            stale.append(file)
            if not args.check:
                (ROOT / file).write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"durations differ from {RESULTS.name} in: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
