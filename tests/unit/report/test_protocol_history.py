"""The report's protocol-history table: each revision with its figures before and after, from the
committed benchmarks/results/protocol_history.jsonl; left out where a project has no history."""

import json

import pytest

from tests.helpers.paths import REPO
from tinytf.errors import DataError
from tinytf.report.facts import HISTORY
from tinytf.report.tables import protocol_history


def _row(revision: str, after_rev: str | None) -> dict:
    figures = {
        "gap": {"250": 1.0, "1000": 2.0, "3000": 3.0, "all": -0.5},
        "all_labels": {"pretrained": 75.0, "scratch": 74.0},
    }
    later = {
        "gap": {"250": 1.5, "1000": 2.0, "3000": 2.0, "all": 0.9},
        "all_labels": {"pretrained": 75.3, "scratch": 74.4},
    }
    return {"revision": revision, "why": "because", "before_rev": "aaa", "after_rev": after_rev,
            "when": "2026-11-28 01:06" if after_rev else "", "before": figures, "after": later}  # fmt: skip


def test_the_last_record_gives_one_row_per_revision_with_before_and_after(tmp_path):
    path = tmp_path / "protocol_history.jsonl"
    old = {"script": "protocol_history", "figures": {"rows": [_row("v1", "bbb")]}}
    new = {"script": "protocol_history", "figures": {"rows": [_row("v2", "bbb"), _row("v3", None)]}}
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    frame = protocol_history(path)
    assert frame["revision"].tolist() == ["v2", "v3"]  # the last record only
    assert frame.loc[1, "runs compared"] == "aaa → the committed run"
    assert frame.loc[0, "pretrained − scratch, all labels (points)"] == "-0.5 → +0.9"
    assert frame.loc[0, "scratch, all labels (%)"] == "74.0 → 74.4"


def test_no_history_leaves_the_table_out_and_a_broken_one_is_named(tmp_path):
    assert protocol_history(tmp_path / "absent.jsonl") is None
    broken = tmp_path / "protocol_history.jsonl"
    broken.write_text('{"script": "protocol_history"}\n')
    with pytest.raises(
        DataError, match=r"protocol_history.jsonl: its last line is not a protocol_history record"
    ):
        protocol_history(broken)


def test_the_committed_history_reaches_the_report():
    frame = protocol_history(REPO / HISTORY)
    assert frame is not None and "v3" in frame["revision"].tolist()
    assert "tables/protocol_history.md" in (REPO / "reports" / "README.md").read_text()
