"""The run card that opens the report: the commit the outputs were made at (and any uncommitted
code), the machine, the tools' versions and every stage's wall time, from the records the
stages write (`data/runs/*.json`, tinytf.system.record). A stage DVC restored from its cache
keeps the record of the run that made its outputs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tinytf.errors import DataError


def load_records(folder: Path) -> list[dict]:
    """Every record in `folder`, in the order the stages finished; DataError naming a bad file."""
    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            record["seconds"], record["stage"], record["finished"]  # noqa: B018 - the keys the card needs
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path}: not a stage run record ({type(exc).__name__}: {exc})") from None
        records.append(record)
    return sorted(records, key=lambda r: r["finished"])


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _grouped(records: list[dict], key) -> dict[str, list[str]]:
    """{value: [stages]} in first-seen order."""
    out: dict[str, list[str]] = {}
    for record in records:
        stages = out.setdefault(key(record), [])
        if record["stage"] not in stages:
            stages.append(record["stage"])
    return out


def _each(groups: dict[str, list[str]]) -> str:
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{value} ({', '.join(stages)})" for value, stages in groups.items())


def _code(r: dict) -> str:
    commit = f"commit `{r['commit'][:12]}`" if r.get("commit") else "no git commit"
    changed = r.get("changed") or []
    return commit + (
        f" with uncommitted changes to {', '.join(changed)}" if changed else ", code as committed"
    )


def _machine(r: dict) -> str:
    m = r["machine"]
    units = ", ".join(m.get("bf16_units") or []) or "no bf16 units"
    gpu = f"GPU {m['gpu']}" if m.get("gpu") else "no GPU used"
    return f"{m['cpu']}, {m['cores']} cores, {units}; {gpu}"


def _versions(r: dict) -> str:
    v = r["versions"]
    return ", ".join(
        f"{name} {v[key]}"
        for key, name in (("python", "Python"), ("torch", "torch"), ("dvc", "dvc"), ("mlflow", "mlflow"))
        if v.get(key)
    )


def run_card(records: list[dict], precision: dict[str, str] | None = None) -> list[str]:
    """The README's opening lines; [] without records. `precision`: what each training stage ran
    in ("fp32", "bf16"), a protocol fact: two machines that chose differently train differently."""
    if not records:
        return []
    seconds: Counter[str] = Counter()
    for record in records:
        seconds[record["stage"]] += record["seconds"]
    runs = Counter(record["stage"] for record in records)
    times = ", ".join(
        f"{stage}{f' ({runs[stage]} cells)' if runs[stage] > 1 else ''} {duration(s)}"
        for stage, s in seconds.items()
    )
    by_precision: dict[str, list[str]] = {}
    for stage, value in (precision or {}).items():
        by_precision.setdefault(value, []).append(stage)
    return [
        f"- Code: {_each(_grouped(records, _code))}.",
        f"- Machine: {_each(_grouped(records, _machine))}.",
        *([f"- Precision: {_each(by_precision)}."] if by_precision else []),
        f"- Versions: {_each(_grouped(records, _versions))}.",
        f"- Wall time per stage, in the order they finished: {times}; {duration(sum(seconds.values()))} in "
        "all (each stage's own process, summed over a matrix's cells; DVC's work between stages is not in "
        "it, nor is this report's).",
    ]
