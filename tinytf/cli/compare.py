"""`tinytf compare`: experiments side by side, in a terminal's width.

`dvc exp show` lists every param, metric and dep of every experiment (about 1,000 characters a
line here). This reads the same data (`dvc exp show --json`) and prints the headline metrics,
then only the params whose values differ between the rows, named by their key as `-S` takes it,
in at most WIDTH characters; `--wide` prints every headline metric and every differing param.
A row whose stages did not all run with its own params (see freshness.py) shows no metrics, since
its reports/headline.json is an older run's.
"""

from __future__ import annotations

import json
import subprocess

from tinytf.cli.freshness import git_reader, is_stale
from tinytf.errors import DataError
from tinytf.params.schema import flatten

# (column, key path in reports/headline.json, what it is): the answers to the study's question
HEADLINE = (
    ("test_acc", ("test", "accuracy"), "the served model's test accuracy"),
    ("gain", ("pretrained_minus_scratch", "mean"), "pretrained - scratch accuracy, all labels"),
    ("p_holm", ("pretrained_minus_scratch", "p_holm"), "its paired t over seeds, Holm across label counts"),
    ("tfidf_lr", ("label_curve", "all", "tfidf_lr"), "TF-IDF + logistic regression, all labels"),
    ("lm_ppl", ("lm", "validation_perplexity"), "the LM's validation perplexity per token"),
)
# only with --wide: the raw p and the verdict, the test over texts, each start's accuracy, all labels
WIDE_HEADLINE = (
    ("p", ("pretrained_minus_scratch", "p_value"), "the same test's raw p"),
    ("verdict", ("pretrained_minus_scratch", "verdict"), "what the Holm p says"),
    ("p_items", ("pretrained_minus_scratch", "items_p_value"), "the same comparison over test texts"),
    ("vs_tfidf", ("pretrained_minus_tfidf", "mean"), "pretrained - TF-IDF + LR, all labels"),
    ("pretrained", ("label_curve", "all", "pretrained"), "pretrained start, all labels"),
    ("scratch", ("label_curve", "all", "scratch"), "scratch start, all labels"),
)
METRICS_FILE = "reports/headline.json"
WIDTH = 120  # a terminal's width, with room to spare beside an editor
NAME_WIDTH = 18  # an experiment's name is cut to this (DVC's generated names are shorter)
CELL_WIDTH = 14  # a param's value is cut to this; --wide prints it whole
GAP = "  "


def _dig(values: dict, path: tuple[str, ...]):
    for key in path:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def rows_from_show(show: list[dict]) -> list[dict]:
    """One row per workspace, baseline commit and experiment: its name, rev, params and metrics."""
    rows = []

    def label(entry: dict) -> str:
        rev = str(entry.get("rev", ""))
        return entry.get("name") or (rev[:7] if len(rev) == 40 else rev)

    def add(entry: dict, name: str) -> None:
        data = entry.get("data") or {}
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        metrics = ((data.get("metrics") or {}).get(METRICS_FILE) or {}).get("data") or {}
        rows.append({"name": name, "rev": entry.get("rev"), "params": flatten(params), "metrics": metrics})

    for baseline in show:
        add(baseline, label(baseline))
        for experiment in baseline.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                add(rev, label(rev))
    return rows


def differing(rows: list[dict]) -> list[str]:
    """The dotted params keys whose values are not the same in every row: each row's first change
    from the first row, then each row's second, ..., so that a sweep of one key beside a preset of
    thirty still shows its key within the width; params.yaml's order otherwise."""

    def value(row: dict, key: str) -> str:
        return json.dumps(row["params"].get(key), sort_keys=True)

    keys = list(dict.fromkeys(k for row in rows for k in row["params"]))
    differ = [k for k in keys if len({value(row, k) for row in rows}) > 1]
    rank = dict.fromkeys(differ, len(differ))
    for row in rows[1:]:
        own = [k for k in differ if value(row, k) != value(rows[0], k)]
        for place, key in enumerate(own):
            rank[key] = min(rank[key], place)
    return sorted(differ, key=lambda k: rank[k])  # stable: params.yaml's order within a rank


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _cell(value, limit: int | None) -> str:
    """A metric (4 significant digits) or a param's value as YAML would take it back in -S."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    text = f"{value:.4g}" if isinstance(value, float) else json.dumps(value, separators=(",", ":"))
    return _cut(text, limit)


def table(rows: list[dict], stale: set[str], wide: bool = False) -> tuple[list[list[str]], list[str]]:
    """The columns (header first, one cell per row) and the differing params left out. Without
    `wide` the columns end before WIDTH characters; a stale row's metrics are "-"."""
    limit = None if wide else CELL_WIDTH
    names = [_cut(row["name"], None if wide else NAME_WIDTH) for row in rows]
    columns = [["experiment", *names]]
    for header, path, _ in HEADLINE + (WIDE_HEADLINE if wide else ()):
        values = [None if row["name"] in stale else _dig(row["metrics"], path) for row in rows]
        columns.append([header, *(_cell(v, None) for v in values)])
    left_out: list[str] = []
    used = sum(max(map(len, c)) for c in columns) + len(GAP) * (len(columns) - 1)
    for key in differing(rows):
        column = [key, *(_cell(row["params"].get(key), limit) for row in rows)]
        width = len(GAP) + max(map(len, column))
        if not wide and (left_out or used + width > WIDTH):
            left_out.append(key)
            continue
        columns.append(column)
        used += width
    return columns, left_out


def _wrapped(words: list[str], first: str) -> list[str]:
    lines = [first]
    for word in words:
        if len(lines[-1]) + len(word) + 1 > WIDTH:
            lines.append(" ")
        lines[-1] += " " + word
    return lines


def format_table(columns: list[list[str]], left_out: list[str], stale: set[str]) -> str:
    """The table (names left-aligned, values right-aligned), a legend of the metrics, and the
    rows without metrics and the params left out, each wrapped at WIDTH."""
    widths = [max(map(len, c)) for c in columns]
    lines = [
        GAP.join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        for cells in zip(*columns, strict=True)
    ]
    shown = {c[0] for c in columns}
    lines += _wrapped([f"{h}: {what};" for h, _, what in HEADLINE + WIDE_HEADLINE if h in shown], "metrics:")
    if stale:
        lines += _wrapped(sorted(stale), "no metrics (a stage did not run with these params):")
    if left_out:
        lines += _wrapped(left_out, "more params differ (tinytf compare --wide shows them):")
    return "\n".join(line.rstrip() for line in lines)


def compare_command(extra: list[str], wide: bool = False) -> None:
    from tinytf.cli.experiments import dvc_executable

    result = subprocess.run(
        [dvc_executable(), "exp", "show", "--json", *extra], capture_output=True, text=True
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"dvc exp show failed: {last}")
    rows = rows_from_show(json.loads(result.stdout))
    stale = {row["name"] for row in rows if is_stale(str(row["rev"]), git_reader)}
    print(format_table(*table(rows, stale, wide), stale))
