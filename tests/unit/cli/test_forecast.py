"""`tinytf exp` says, before it starts, how many stage runs have no outputs yet and roughly how
long they took on the committed run's machine, and points at the tiny preset."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml

from tests.helpers.paths import REPO
from tinytf.cli.forecast import cache_dir, card_times, forecast, unmade
from tinytf.report.run_card import duration


@pytest.fixture
def clone(tmp_path):
    """A fresh clone's view: the committed dvc.lock and run card, no outputs, an empty cache."""
    shutil.copy(REPO / "dvc.lock", tmp_path / "dvc.lock")
    (tmp_path / "reports").mkdir()
    shutil.copy(REPO / "reports" / "readme.json", tmp_path / "reports" / "readme.json")
    (tmp_path / ".dvc").mkdir()
    return tmp_path


def stages() -> dict:
    return yaml.safe_load((REPO / "dvc.lock").read_text())["stages"]


def test_the_run_card_times_add_up_to_its_total(clone):
    times, machine = card_times(clone)
    card = yaml.safe_load((REPO / "reports" / "readme.json").read_text())["run_card"]
    line = next(line for line in card if line.startswith("- Wall time per stage"))
    cells = dict(re.findall(r"([a-z_]+) \((\d+) cells\)", line))
    total = sum(seconds * int(cells.get(stage, 1)) for stage, seconds in times.items())
    # each figure is shown rounded (0.1 min or 1 s), the total too: they agree to those roundings
    shown = float(re.search(r"; ([\d.]+) min in all", line).group(1)) * 60
    slack = 3 + sum(3 if seconds * int(cells.get(s, 1)) >= 60 else 0.5 for s, seconds in times.items())
    assert abs(total - shown) <= slack, (duration(total), line)
    assert "pretrain" in times and "cores" in machine


def test_a_fresh_clone_is_told_that_every_stage_runs_and_the_quick_way(clone):
    note = forecast(clone, ["tokenize.vocab_size=4000", "grid.lrs=[0.1, 0.2]"])
    count = len(stages())
    times, machine = card_times(clone)
    seconds = sum(times.get(name.split("@")[0], 0) for name in stages())
    assert f"{count} of the {count} stage runs dvc.lock records" in note
    assert f"about {duration(seconds)} of stage time on the committed run's machine ({machine};" in note
    assert note.endswith("tinytf preset tiny -S tokenize.vocab_size=4000 -S 'grid.lrs=[0.1, 0.2]'")
    assert note.count("\n") == 1


def test_outputs_in_the_workspace_or_the_cache_are_not_counted(clone):
    cache = clone / ".dvc" / "cache"
    for i, (name, stage) in enumerate(stages().items()):
        if name == "pretrain":
            continue
        for out in stage.get("outs") or []:
            if i % 2:  # in the workspace
                path = clone / out["path"]
            else:  # only in the cache
                path = cache / "files" / "md5" / out["md5"][:2] / out["md5"][2:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    assert unmade(clone) == (["pretrain"], len(stages()))
    times, _ = card_times(clone)
    assert f"1 of the {len(stages())} stage runs" in forecast(clone, [])
    assert f"about {duration(times['pretrain'])} of stage time" in forecast(clone, [])
    for out in stages()["pretrain"]["outs"]:
        (clone / out["path"]).parent.mkdir(parents=True, exist_ok=True)
        (clone / out["path"]).touch()
    assert forecast(clone, []) is None


def test_the_cache_folder_dvc_is_configured_with(clone):
    assert cache_dir(clone) == clone / ".dvc" / "cache"
    (clone / ".dvc" / "config").write_text("[core]\n    analytics = false\n[cache]\n    dir = ../../shared\n")
    assert cache_dir(clone) == (clone.parent / "shared").resolve()


def test_no_lock_or_a_damaged_one_says_nothing(clone):
    (clone / "dvc.lock").write_text("stages: [unclosed\n")
    assert forecast(clone, []) is None
    (clone / "dvc.lock").unlink()
    assert forecast(clone, []) is None


def test_the_masked_export_reads_heads_run_from_the_configured_cache(tmp_path):
    """`dvc cache dir` moves the cache out of .dvc/cache: the causal run's predictions are read
    from where the config puts them, and a missing copy is named with the pull that brings it."""
    import subprocess

    from tinytf.cli.presets import PREDICTIONS, _cached_at_head
    from tinytf.errors import ParamsError

    md5 = "ab" + "0" * 30
    lock = {"schema": "2.0", "stages": {"finetune": {"outs": [{"path": PREDICTIONS, "md5": md5}]}}}
    (tmp_path / ".dvc").mkdir()
    (tmp_path / ".dvc" / "config").write_text("[cache]\n    dir = ../elsewhere\n")
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    for git in (
        ["init", "-q"],
        ["add", "dvc.lock"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run"],
    ):
        subprocess.run(["git", *git], cwd=tmp_path, check=True)
    with pytest.raises(ParamsError, match=f"md5 {md5}\\) is not in the DVC cache: run `dvc pull"):
        _cached_at_head(tmp_path, PREDICTIONS)
    cached = tmp_path / "elsewhere" / "files" / "md5" / "ab" / ("0" * 30)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"parquet")
    assert _cached_at_head(tmp_path, PREDICTIONS) == cached.resolve()
