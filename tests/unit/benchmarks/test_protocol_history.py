"""The protocol-history table: each revision's figures before and after, from the summaries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import protocol_history  # noqa: E402


def summary(gaps: dict[str, float], pretrained: float, scratch: float) -> dict:
    curve = {c: {"pretrained_vs_scratch": {"mean_difference": g}} for c, g in gaps.items()}
    curve["all"] |= {"pretrained": {"mean": pretrained}, "scratch": {"mean": scratch}}
    return {"label_curve": curve}


def test_each_revision_row_gives_the_gap_per_count_and_the_all_labels_means_before_and_after():
    before = protocol_history.figures(
        summary({"250": 0.039, "1000": 0.028, "3000": 0.024, "all": 0.024}, 0.7676, 0.7433)
    )
    after = protocol_history.figures(
        summary({"250": 0.016, "1000": 0.027, "3000": 0.012, "all": 0.021}, 0.749, 0.728)
    )
    row = {"revision": "v2", "why": "5 seeds", "before_rev": "1e50d2a", "after_rev": None, "when": "",
           "before": before, "after": after}  # fmt: skip
    line = protocol_history.table([row]).splitlines()[-1]
    assert line == (
        "| v2 | 5 seeds | `1e50d2a` → the committed run | +3.9 → +1.6 / +2.8 → +2.7 / +2.4 → +1.2 / "
        "+2.4 → +2.1 | 76.8 → 74.9 / 74.3 → 72.8 |"
    )


def test_the_committed_revisions_are_readable_at_their_commits():
    revs = [r for _, _, before, after in protocol_history.REVISIONS for r in (before, after) if r]
    have = subprocess.run(["git", "cat-file", "-e", f"{revs[0]}^{{commit}}"], cwd=REPO, capture_output=True)
    if have.returncode != 0:
        pytest.skip("a shallow clone: the revisions' commits are not here")
    for _, _, before, after in protocol_history.REVISIONS:
        for rev in (before, after):
            if rev is not None:
                assert set(protocol_history.figures(protocol_history.summary_at(rev))["gap"]) == {
                    "250", "1000", "3000", "all"
                }  # fmt: skip
