"""The stages' own tables and summaries (data/reports/, DVC-cached, git-ignored), published by the
report beside its README at the same relative paths, so reports/ is the whole of what git holds
of a run; and which of them the README names."""

from __future__ import annotations

import shutil
from pathlib import Path

from tinytf.report.facts import STAGE_FILES

# the stages' own files the README names, when the run wrote them
PUBLISHED = (
    "data.md",
    "pretrain/samples.md",
    "variants/variants.md",
    "finetune/curves.png",
    "evaluate/test_report.json",
    "metrics.json",
    "probes/probes.md",
    "complexity/complexity.md",
    "complexity/attention_cost.png",
)


def published(root: Path) -> list[str]:
    """Of PUBLISHED, the files this run wrote under `root`'s data/reports/."""
    return [rel for rel in PUBLISHED if (Path(root) / STAGE_FILES / rel).exists()]


def publish(stage_files: Path, staging: Path) -> None:
    """Copy each entry under `stage_files` into the report's staging folder: swapped in with the
    README, each replaces its namesake whole."""
    if not stage_files.is_dir():
        return
    for entry in sorted(stage_files.iterdir()):
        if entry.name.startswith("."):  # a stage's staging folder, left by a kill
            continue
        if entry.is_dir():
            shutil.copytree(entry, staging / entry.name)
        else:
            shutil.copyfile(entry, staging / entry.name)
