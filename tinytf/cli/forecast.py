"""What a `tinytf exp` is about to run, said before it starts: in a fresh clone nothing the
pipeline makes is in the workspace or the DVC cache, so `dvc exp run -S one.key=value` runs every
stage, where the user meant to try one value. The count comes from dvc.lock, the time from the
committed report's run card (reports/readme.json), which names the machine it was measured on.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import yaml

from tinytf.report.run_card import duration

# one stage in the run card's wall-time line: "pretrain 12.2 min", "grid (12 cells) 3.9 min"
TIMED = re.compile(r"([A-Za-z0-9_]+)(?: \((\d+) cells\))? (\d+(?:\.\d+)?) (s|min)\b")


def cache_dir(root: Path) -> Path:
    """`cache.dir` of .dvc/config.local or .dvc/config (relative to .dvc/), else .dvc/cache."""
    for name in ("config.local", "config"):
        section = None
        path = root / ".dvc" / name
        for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
            if line.strip().startswith("["):
                section = line.strip().strip("[]'\" ")
            elif section == "cache" and (found := re.match(r"\s*dir\s*=\s*(.+?)\s*$", line)):
                return (root / ".dvc" / found.group(1)).resolve()
    return root / ".dvc" / "cache"


def _made(out: dict, root: Path, cache: Path) -> bool:
    """Whether a dvc.lock output is in the workspace or the cache (DVC 3's files/md5 layout)."""
    digest = str(out.get("md5") or "")
    cached = bool(digest) and (cache / "files" / "md5" / digest[:2] / digest[2:]).exists()
    return cached or (root / out["path"]).exists()


def unmade(root: Path) -> tuple[list[str], int]:
    """(dvc.lock's stage runs with an output in neither the workspace nor the cache, how many it records)."""
    lock = root / "dvc.lock"
    if not lock.exists():
        return [], 0
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stages = (yaml.load(lock.read_text(encoding="utf-8"), Loader=loader) or {}).get("stages") or {}
    cache = cache_dir(root)
    missing = [
        name
        for name, stage in stages.items()
        if not all(_made(out, root, cache) for out in stage.get("outs") or [])
    ]
    return missing, len(stages)


def card_times(root: Path) -> tuple[dict[str, float], str]:
    """({stage: seconds per run, or per cell}, the machine) from the committed run card, or ({}, "")."""
    try:
        card = json.loads((root / "reports" / "readme.json").read_text(encoding="utf-8"))["run_card"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}, ""
    times, machine = {}, ""
    for line in card:
        if line.startswith("- Machine: "):
            machine = line.removeprefix("- Machine: ").split(";")[0].split(", no bf16")[0].rstrip(".")
        elif line.startswith("- Wall time per stage"):
            listed = line.split(": ", 1)[1].split(";")[0]
            for stage, cells, amount, unit in TIMED.findall(listed):
                times[stage] = float(amount) * (60 if unit == "min" else 1) / int(cells or 1)
    return times, machine


def forecast(root: str | Path, sets: list[str]) -> str | None:
    """The lines to print before `dvc exp run` when stages have no outputs yet (`sets`: the -S items)."""
    root = Path(root)
    try:
        missing, recorded = unmade(root)
    except (OSError, ValueError, AttributeError, yaml.YAMLError):
        return None  # a damaged dvc.lock is DVC's to name; this is only a note
    if not missing:
        return None
    times, machine = card_times(root)
    seconds = sum(times.get(name.split("@")[0], 0.0) for name in missing)
    when = (
        f"about {duration(seconds)} of stage time on the committed run's machine ({machine}; "
        f"reports/README.md's run card), this one has {os.cpu_count()} cores"
        if seconds
        else "no committed run card times them"
    )
    quick = shlex.join(["tinytf", "preset", "tiny", *(a for item in sets for a in ("-S", item))])
    return (
        f"tinytf: {len(missing)} of the {recorded} stage runs dvc.lock records (a matrix's cells each) have "
        f"no outputs here or in the DVC cache, so this run makes them: {when}.\n"
        f"tinytf: for a first look in minutes, the whole pipeline on tiny data: {quick}"
    )
