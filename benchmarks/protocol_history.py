"""What each protocol revision moved: the pretrained − scratch gap per label count, and each start's
all-labels test accuracy, before and after, read from the committed reports at the commits that
hold each run (git show REV:reports/finetune/summary.json). Writes the table into docs/protocol.md
between its `history` markers and appends the figures to benchmarks/results/protocol_history.jsonl.

    python benchmarks/protocol_history.py          # the last row's "after": the working tree's run

Why a script and not the report stage: the report is built from one run's outputs; the history
spans runs, and git holds them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

from timing import ROOT, record

SUMMARY = "reports/finetune/summary.json"
COUNTS = ("250", "1000", "3000", "all")
# (revision, why, the run before, the run after; None: the working tree)
REVISIONS = [
    (
        "v2, first revision",
        "3,000 and all labels from 3 seeds to 5; dropout a candidate for every start; lr 0.0003 dropped",
        "1e50d2a",
        "59edee9",
    ),
    (
        "none: the same protocol rerun in fp32 on a CPU without bf16 units",
        "shows the run-to-run spread one pretraining run hides",
        "59edee9",
        "28dfe0f",
    ),
    (
        "v2, second revision, and the grid's halving",
        "a recipe at every label count (was 1,000 only), after the all-labels gap moved; the grid's "
        "finalists after a three-way tie",
        "28dfe0f",
        "8013f6b",
    ),
    (
        "v3",
        "three pretraining runs; patience; halving recipe search with lr 0.0003 back; TF-IDF's vocabulary "
        "from all train texts; one multi-bootstrap per comparison",
        "2d5f199",
        None,
    ),
]


def summary_at(rev: str | None) -> dict:
    if rev is None:
        return json.loads((ROOT / SUMMARY).read_text(encoding="utf-8"))
    text = subprocess.run(
        ["git", "show", f"{rev}:{SUMMARY}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(text)


def figures(summary: dict) -> dict:
    """pretrained − scratch per count (points) and each start's all-labels mean (%)."""
    curve = summary["label_curve"]
    gaps = {c: 100 * curve[c]["pretrained_vs_scratch"]["mean_difference"] for c in COUNTS if c in curve}
    means = {s: 100 * curve["all"][s]["mean"] for s in ("pretrained", "scratch") if s in curve["all"]}
    return {"gap": gaps, "all_labels": means}


def date_of(rev: str | None) -> str:
    if rev is None:
        return ""
    return subprocess.run(
        ["git", "log", "-1", "--format=%ad", "--date=format:%Y-%m-%d %H:%M", rev],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def table(rows: list[dict]) -> str:
    lines = [
        "| Revision | Why | Runs compared | pretrained − scratch, points (250 / 1,000 / 3,000 / all) "
        "| All labels: pretrained / scratch, % |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        b, a = r["before"], r["after"]
        gap = " / ".join(f"{b['gap'][c]:+.1f} → {a['gap'][c]:+.1f}" for c in COUNTS)
        means = " / ".join(
            f"{b['all_labels'][s]:.1f} → {a['all_labels'][s]:.1f}" for s in ("pretrained", "scratch")
        )
        after = f"`{r['after_rev']}` ({r['when']})" if r["after_rev"] else "the committed run"
        lines.append(f"| {r['revision']} | {r['why']} | `{r['before_rev']}` → {after} | {gap} | {means} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    args = parser.parse_args()
    rows = [
        {
            "revision": name,
            "why": why,
            "before_rev": before,
            "after_rev": after,
            "when": date_of(after),
            "before": figures(summary_at(before)),
            "after": figures(summary_at(after)),
        }
        for name, why, before, after in REVISIONS
    ]
    doc = ROOT / "docs" / "protocol.md"
    text = doc.read_text(encoding="utf-8")
    block = (
        f"<!-- history: benchmarks/protocol_history.py writes this table -->\n{table(rows)}<!-- /history -->"
    )
    text, n = re.subn(r"<!-- history:.*?<!-- /history -->", lambda _: block, text, flags=re.S)
    if n != 1:
        sys.exit(f"{doc}: no history markers")
    doc.write_text(text, encoding="utf-8")
    last = rows[-1]
    headline = f"{last['revision']}: all-labels gap {last['before']['gap']['all']:+.1f} -> {last['after']['gap']['all']:+.1f} points"
    record("protocol_history", headline, {"rows": rows}, args)
    print(table(rows))


if __name__ == "__main__":
    main()
