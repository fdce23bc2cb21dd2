"""A fake report tree, for the tests of what copies one (preset exports)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import REPO
from tinytf.params.config import load_params
from tinytf.report.derive import derive
from tinytf.report.facts import Facts, Listing
from tinytf.report.render import write_view


def fake_report_tree(reports: Path) -> Path:
    """The files a preset export copies, each but the view holding its own relative path, under
    `reports`; the view (readme.json) lists tables/a.md and the published data.md."""
    for rel in (
        "metrics.json",
        "finetune/summary.json",
        "baselines/summary.json",
        "variants/summary.json",
        "tables/a.md",
        "plots/a.png",
    ):
        (reports / rel).parent.mkdir(parents=True, exist_ok=True)
        (reports / rel).write_text(rel)
    fake_view(reports)
    return reports


def fake_view(reports: Path, notes: tuple[str, ...] = ()) -> None:
    """A report view with no facts: the README it renders names the table tables/a.md, the
    published reports/data.md and `notes`."""
    listing = Listing(
        missing=[],
        notes=list(notes),
        tables=[("tables/a.md", "the table a")],
        plots=[],
        published=["data.md"],
    )
    write_view(reports / "readme.json", derive(Facts(), load_params(REPO / "params.yaml"), listing))
