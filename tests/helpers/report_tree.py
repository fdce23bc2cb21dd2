"""A fake report tree, for the tests of what copies one (preset exports)."""

from __future__ import annotations

from pathlib import Path


def fake_report_tree(reports: Path) -> Path:
    """The files a preset export copies, each holding its own relative path, under `reports`."""
    for rel in (
        "README.md",
        "metrics.json",
        "finetune/summary.json",
        "baselines/summary.json",
        "variants/summary.json",
        "tables/a.md",
        "plots/a.png",
    ):
        (reports / rel).parent.mkdir(parents=True, exist_ok=True)
        (reports / rel).write_text(rel)
    return reports
