"""`tinytf compare`: experiments side by side, readable in a terminal and piped.

`dvc exp show` lists every param, metric and dep of every experiment (over 200 columns here), so a
piped table is all ellipses. This reads the same data (`dvc exp show --json`) and keeps the
headline metrics and only the params that differ between the rows shown.
"""

from __future__ import annotations

import json
import subprocess

from tinytf.errors import DataError
from tinytf.params.schema import flatten

# (column, key path in reports/headline.json): what the study's question is answered by
HEADLINE = (
    ("test acc", ("test", "accuracy")),
    ("pre-scr", ("pretrained_minus_scratch", "mean")),
    ("p", ("pretrained_minus_scratch", "p_value")),
    ("pretrained", ("label_curve", "all", "pretrained")),
    ("scratch", ("label_curve", "all", "scratch")),
    ("tfidf+lr", ("label_curve", "all", "tfidf_lr")),
    ("lm ppl", ("lm", "validation_perplexity")),
)
METRICS_FILE = "reports/headline.json"
MAX_COLUMNS = 30


def _dig(values: dict, path: tuple[str, ...]):
    for key in path:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def rows_from_show(show: list[dict]) -> list[dict]:
    """One row per workspace, baseline commit and experiment: its name, params and headline metrics."""
    rows = []

    def label(entry: dict) -> str:
        rev = str(entry.get("rev", ""))
        return entry.get("name") or (rev[:7] if len(rev) == 40 else rev)

    def add(entry: dict, name: str) -> None:
        data = entry.get("data") or {}
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        metrics = ((data.get("metrics") or {}).get(METRICS_FILE) or {}).get("data") or {}
        rows.append({"name": name, "params": flatten(params), "metrics": metrics})

    for baseline in show:
        add(baseline, label(baseline))
        for experiment in baseline.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                add(rev, label(rev))
    return rows


def table(rows: list[dict]):
    """The comparison: headline metrics, then the params whose values differ between the rows, at
    most MAX_COLUMNS columns in all; returns (frame, the differing params left out)."""
    import pandas as pd

    keys = sorted({k for row in rows for k in row["params"]})
    differ = [k for k in keys if len({json.dumps(row["params"].get(k), sort_keys=True) for row in rows}) > 1]
    room = MAX_COLUMNS - 1 - len(HEADLINE)
    last = [k.rsplit(".", 1)[-1] for k in differ]
    # a param's last name where it is unique among the columns, else its dotted key
    names = {k: name if last.count(name) == 1 else k for k, name in zip(differ, last, strict=True)}
    records = []
    for row in rows:
        record = {"experiment": row["name"]}
        record.update({col: _dig(row["metrics"], path) for col, path in HEADLINE})
        record.update({names[k]: json.dumps(row["params"].get(k)) for k in differ[:room]})
        records.append(record)
    frame = pd.DataFrame(records)
    return frame, differ[room:]


def format_table(frame, left_out: list[str]) -> str:
    def cell(value) -> str:
        if value is None or (isinstance(value, float) and value != value):
            return "-"
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    text = frame.to_string(index=False, formatters={c: cell for c in frame.columns})
    if left_out:
        text += f"\n(more params differ, not shown: {', '.join(left_out)})"
    return text


def compare_command(extra: list[str]) -> None:
    from tinytf.cli.presets import dvc_executable

    result = subprocess.run(
        [dvc_executable(), "exp", "show", "--json", *extra], capture_output=True, text=True
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"dvc exp show failed: {last}")
    rows = rows_from_show(json.loads(result.stdout))
    print(format_table(*table(rows)))
