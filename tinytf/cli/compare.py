"""`tinytf compare`: experiments side by side, in a terminal's width.

`dvc exp show` lists every param, metric and dep of every experiment, far wider than a terminal.
This reads the same data (`dvc exp show --json`) and prints the headline metrics and only the
params that differ. A row whose stages did not all run with its own params (freshness.py) shows no
metrics, since its reports/headline.json is an older run's.
"""

from __future__ import annotations

import json
import subprocess

from tinytf.cli import dvc_quiet
from tinytf.cli.freshness import dig, git_reader, is_stale
from tinytf.errors import DataError
from tinytf.params.schema import flatten

# (column, dotted key in reports/headline.json, what it is): the answers to the study's question
HEADLINE = (
    ("test_acc", "test.accuracy", "the served model's test accuracy"),
    ("gain", "pretrained_minus_scratch.estimate", "pretrained - scratch accuracy, all labels"),
    ("p_holm", "pretrained_minus_scratch.p_holm", "its p over every resampled source, Holm across counts"),
    ("tfidf_lr", "label_curve.all.tfidf_lr", "TF-IDF + logistic regression, all labels"),
    ("lm_ppl", "lm.validation_perplexity", "the LM's validation perplexity per token"),
)
# only with --wide: the interval, raw p and verdict, each start's accuracy, all labels
WIDE_HEADLINE = (
    ("ci_low", "pretrained_minus_scratch.ci95_low", "the gain's 95 % interval, low end"),
    ("ci_high", "pretrained_minus_scratch.ci95_high", "the gain's 95 % interval, high end"),
    ("p", "pretrained_minus_scratch.p_value", "the same comparison's raw p"),
    ("verdict", "pretrained_minus_scratch.verdict", "what the Holm p and the interval say"),
    ("vs_tfidf", "pretrained_minus_tfidf.estimate", "pretrained - TF-IDF + LR, all labels"),
    ("pretrained", "label_curve.all.pretrained", "pretrained start, all labels"),
    ("scratch", "label_curve.all.scratch", "scratch start, all labels"),
)
METRICS_FILE = "reports/headline.json"
WIDTH = 120  # a terminal's width, with room to spare beside an editor
NAME_WIDTH = 18  # an experiment's name is cut to this (DVC's generated names are shorter)
CELL_WIDTH = 14  # a param's value is cut to this; --wide prints it whole
GAP = "  "
NO_METRICS = "no metrics (a stage did not run with these params):"


def rows_from_show(show: list[dict]) -> list[dict]:
    """One row per workspace, baseline commit and experiment (`experiment`: neither of the others)."""

    def row(entry: dict, experiment: bool) -> dict:
        rev, data = str(entry.get("rev", "")), entry.get("data") or {}
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        metrics = ((data.get("metrics") or {}).get(METRICS_FILE) or {}).get("data") or {}
        name = entry.get("name") or (rev[:7] if len(rev) == 40 else rev)
        return dict(
            name=name, rev=entry.get("rev"), params=flatten(params), metrics=metrics, experiment=experiment
        )

    rows = []
    for baseline in show:
        rows.append(row(baseline, False))
        rows += [row(rev, True) for exp in baseline.get("experiments") or [] for rev in exp.get("revs") or []]
    return rows


def _value(row: dict, key: str) -> str:
    return json.dumps(row["params"].get(key), sort_keys=True)


def differing(rows: list[dict]) -> tuple[list[str], list[str]]:
    """The params keys whose values differ between rows, as (ranked, shared). `shared`: those every
    experiment sets alike, where there are two or more (a preset's keys beside main). `ranked`: the
    others, most distinct values among the experiments first, then among all rows, then each row's
    first change from the first row before its second (a sweep of one key still shows it)."""
    keys = list(dict.fromkeys(k for row in rows for k in row["params"]))
    differ = [k for k in keys if len({_value(row, k) for row in rows}) > 1]
    experiments = [row for row in rows if row.get("experiment")]
    shared = []
    if len(experiments) >= 2:
        shared = [k for k in differ if len({_value(row, k) for row in experiments}) == 1]
    ranked = [k for k in differ if k not in shared]
    place = dict.fromkeys(ranked, len(ranked))
    for row in rows[1:]:
        own = [k for k in ranked if _value(row, k) != _value(rows[0], k)]
        for at, key in enumerate(own):
            place[key] = min(place[key], at)

    def rank(key: str) -> tuple[int, int, int]:
        among = len({_value(row, key) for row in experiments})
        return (-among, -len({_value(row, key) for row in rows}), place[key])

    return sorted(ranked, key=rank), shared  # stable: params.yaml's order within a rank


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _cell(value, limit: int | None) -> str:
    """A metric (4 significant digits) or a param's value as YAML would take it back in -S."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    text = f"{value:.4g}" if isinstance(value, float) else json.dumps(value, separators=(",", ":"))
    return _cut(text, limit)


def table(
    rows: list[dict], stale: set[str], wide: bool = False
) -> tuple[list[list[str]], list[str], list[str]]:
    """The columns (header first, one cell per row), the differing params left out for width and
    those every experiment sets alike (see `differing`). Without `wide` the columns end before
    WIDTH characters and the shared params are no columns; a stale row's metrics are "-"."""
    limit = None if wide else CELL_WIDTH
    names = [_cut(row["name"], None if wide else NAME_WIDTH) for row in rows]
    columns = [["experiment", *names]]
    for header, path, _ in HEADLINE + (WIDE_HEADLINE if wide else ()):
        values = [None if row["name"] in stale else dig(row["metrics"], path) for row in rows]
        columns.append([header, *(_cell(v, None) for v in values)])
    left_out: list[str] = []
    used = sum(max(map(len, c)) for c in columns) + len(GAP) * (len(columns) - 1)
    ranked, shared = differing(rows)
    for key in ranked + (shared if wide else []):
        column = [key, *(_cell(row["params"].get(key), limit) for row in rows)]
        width = len(GAP) + max(map(len, column))
        if not wide and (left_out or used + width > WIDTH):
            left_out.append(key)
            continue
        columns.append(column)
        used += width
    return columns, left_out, [] if wide else shared


def _wrapped(words: list[str], first: str) -> list[str]:
    lines = [first]
    for word in words:
        if len(lines[-1]) + len(word) + 1 > WIDTH:
            lines.append(" ")
        lines[-1] += " " + word
    return lines


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells in columns: the first left-aligned, the others right-aligned."""
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    return [
        GAP.join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]


def format_table(columns: list[list[str]], left_out: list[str], shared: list[str], stale: set[str]) -> str:
    """The table, a legend of the metrics, and the rows without metrics, the params left out and
    those every experiment shares, each wrapped at WIDTH."""
    lines = _aligned([list(cells) for cells in zip(*columns, strict=True)])
    shown = {c[0] for c in columns}
    lines += _wrapped([f"{h}: {what};" for h, _, what in HEADLINE + WIDE_HEADLINE if h in shown], "metrics:")
    if stale:
        lines += _wrapped(sorted(stale), NO_METRICS)
    if left_out:
        lines += _wrapped(left_out, "more params differ (tinytf compare --wide shows them):")
    if shared:  # a preset's thirty keys: by section, in one line
        sections = ", ".join(dict.fromkeys(key.split(".")[0] for key in shared))
        lines += _wrapped(
            f"{len(shared)} params of {sections} (--wide shows them).".split(),
            "set alike in every experiment, not in every row:",
        )
    return "\n".join(line.rstrip() for line in lines)


def pair_table(rows: list[dict], stale: set[str]) -> str:
    """Two rows side by side: every headline metric and each param that differs, cut to fit WIDTH."""
    metrics = [
        (header, [None if row["name"] in stale else dig(row["metrics"], path) for row in rows], what)
        for header, path, what in HEADLINE + WIDE_HEADLINE
    ]
    differ = [
        k
        for k in dict.fromkeys(k for row in rows for k in row["params"])
        if _value(rows[0], k) != _value(rows[1], k)
    ]
    keys = [m[0] for m in metrics] + differ
    key_width = max(map(len, ["", *keys]))
    limit = (WIDTH - key_width - 2 * len(GAP)) // 2
    lines = [[""] + [_cut(row["name"], limit) for row in rows]]
    lines += [[h, *(_cell(v, None) for v in values)] for h, values, _ in metrics]
    lines += [[k, *(_cell(row["params"].get(k), limit) for row in rows)] for k in differ]
    text = _aligned(lines)
    text += _wrapped([f"{h}: {what};" for h, _, what in metrics], "metrics:")
    if not differ:
        text.append("params: the same in both")
    if named := sorted(stale & {row["name"] for row in rows}):
        text += _wrapped(named, NO_METRICS)
    return "\n".join(line.rstrip() for line in text)


# the `dvc exp show` options that take a value: what follows one is not an experiment's name
VALUE_OPTIONS = ("--rev", "-n", "--num", "--drop", "--keep", "--sort-by", "--sort-order", "--precision")


def split_names(args: list[str]) -> tuple[list[str], list[str]]:
    """The experiments' names, apart from the options (and their values) for `dvc exp show`."""
    names, dvc_args = [], []
    takes_value = False
    for arg in args:
        if takes_value or arg.startswith("-"):
            dvc_args.append(arg)
            takes_value = not takes_value and arg in VALUE_OPTIONS
        else:
            names.append(arg)
    return names, dvc_args


def pick(rows: list[dict], names: list[str]) -> list[dict]:
    """The row each name names: a name, `workspace`, or a rev's first characters (at least 4)."""
    picked = []
    for name in names:
        found = [r for r in rows if r["name"] == name or (len(name) >= 4 and str(r["rev"]).startswith(name))]
        if not found:
            known = ", ".join(dict.fromkeys(r["name"] for r in rows))
            raise DataError(
                f"compare: no experiment {name!r} in dvc exp show (it lists {known}); "
                "an older commit's experiments: add --all-commits"
            )
        picked.append(found[0])
    return picked


def compare_command(extra: list[str], wide: bool = False) -> None:
    names, extra = split_names(extra)
    if names and len(names) != 2:
        raise DataError(f"compare takes two experiments, A B, or none; got {len(names)}: {' '.join(names)}")
    result = subprocess.run(
        [dvc_quiet.dvc_executable(), "exp", "show", "--json", *extra], capture_output=True, text=True
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"dvc exp show failed: {last}")
    rows = rows_from_show(json.loads(result.stdout))
    if names:
        rows = pick(rows, names)
    stale = {row["name"] for row in rows if is_stale(str(row["rev"]), git_reader)}
    if names:
        print(pair_table(rows, stale))
    else:
        print(format_table(*table(rows, stale, wide), stale))
