"""tinytf.io.staged: a stage's outputs go in together once it has succeeded, or not at all."""

from __future__ import annotations

import argparse
import gc
import os
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.helpers.repo import unwritable
from tinytf import io
from tinytf.errors import OutputError
from tinytf.io import staged
from tinytf.system import collector


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def previous(tmp_path) -> Path:
    out = tmp_path / "out"
    (out / "plots").mkdir(parents=True)
    (out / "README.md").write_text("old readme")
    (out / "plots" / "a.png").write_text("old a")
    (out / "plots" / "stale.png").write_text("old stale")
    (out / "other.json").write_text("another stage's")
    return out


def test_entries_replace_their_namesakes_whole_and_nothing_else(previous):
    with staged([previous], "t") as staging:
        (staging[previous] / "plots").mkdir()
        (staging[previous] / "plots" / "a.png").write_text("new a")
        (staging[previous] / "README.md").write_text("new readme")
        assert tree(previous)["README.md"] == "old readme"  # nothing in place before the end
    assert tree(previous) == {
        "README.md": "new readme",
        "plots/a.png": "new a",
        "other.json": "another stage's",
    }
    assert [p.name for p in previous.parent.iterdir()] == ["out"]  # no staging or old copy left


def test_a_failing_block_leaves_every_previous_output(previous):
    before = tree(previous)
    with pytest.raises(RuntimeError), staged([previous], "t") as staging:
        (staging[previous] / "README.md").write_text("new readme")
        raise RuntimeError("the stage failed")
    assert tree(previous) == before
    assert [p.name for p in previous.parent.iterdir()] == ["out"]


def test_a_rename_failing_part_way_puts_the_old_entries_back(previous, monkeypatch):
    before = tree(previous)
    rename, calls = os.rename, []

    def fail_on_the_fourth(src, dst):  # old README aside, new in; old plots aside, then this
        calls.append(dst)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        rename(src, dst)

    monkeypatch.setattr(io.os, "rename", fail_on_the_fourth)
    with pytest.raises(OutputError, match="No space left on device; the previous outputs are kept"):
        with staged([previous], "t") as staging:
            (staging[previous] / "plots").mkdir()
            (staging[previous] / "plots" / "a.png").write_text("new a")
            (staging[previous] / "README.md").write_text("new readme")
    assert tree(previous) == before
    assert [p.name for p in previous.parent.iterdir()] == ["out"]


def test_a_read_only_output_folder_replaces_nothing(previous):
    before = tree(previous)
    with unwritable(previous / "plots"):
        with pytest.raises(OutputError, match=r"plots: not writable, so .* cannot be replaced"):
            with staged([previous], "t") as staging:
                (staging[previous] / "plots").mkdir()
                (staging[previous] / "README.md").write_text("new readme")
    assert tree(previous) == before


def test_a_killed_run_s_staging_folder_is_cleared_and_never_swapped_in(previous):
    left = previous.parent / ".out.t.staging.tmp"
    (left / "half").mkdir(parents=True)
    (left / "half" / "written.csv").write_text("from a killed run")
    with staged([previous], "t") as staging:
        assert list(staging[previous].iterdir()) == []
        (staging[previous] / "README.md").write_text("new readme")
    assert "half/written.csv" not in tree(previous) and not left.exists()


def test_other_ranks_write_nothing(previous, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    before = tree(previous)
    with staged([previous], "t") as staging:
        assert staging[previous].name == ".out.t.rank1.staging.tmp"  # not rank 0's folder
        (staging[previous] / "README.md").write_text("rank 1's")
    assert tree(previous) == before and not staging[previous].exists()


def test_stage_arguments_point_at_staging_for_the_block(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "stages"))
    monkeypatch.chdir(tmp_path)
    # importing common pauses the garbage collector, as a stage's first import does: the
    # collector's state comes back after the test, so no later test runs as if in a stage
    monkeypatch.setattr(collector, "_pausing", collector._pausing)
    collecting = gc.isenabled()
    import common

    if collecting:
        gc.enable()

    args = argparse.Namespace(reports="reports/x", model="data/models/m.pt", data="data")
    with common.staged_outputs(args, "x", into=("reports",), whole=("model",)):
        assert Path(args.reports) == Path("reports/.x.x.staging.tmp") and args.data == "data"
        assert Path(args.model) == Path("data/.models.x.staging.tmp/m.pt")
        Path(args.reports, "metrics.json").write_text("{}")
        Path(args.model).write_text("weights")
        Path(args.model).with_suffix(".json").write_text("{}")  # written beside it: goes in beside it
    assert (args.reports, args.model) == ("reports/x", "data/models/m.pt")
    assert sorted(p.as_posix() for p in Path().rglob("*") if p.is_file()) == [
        "data/models/m.json",
        "data/models/m.pt",
        "reports/x/metrics.json",
    ]
