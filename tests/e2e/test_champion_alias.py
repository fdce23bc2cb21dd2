"""@champion moves only once evaluate's outputs are in place (issue 57): it once moved before they
were written, so a kill in between left the alias on a version from a failed run. Here evaluate is
killed (SIGKILL) at the moment it would move the alias: its outputs are already in place, the alias
still names the version before, and the next run moves it to the version the outputs describe."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import mlflow
import pytest

from tests.helpers.repo import dvc
from tinytf.tracking.champion import SERVED_TAG

pytestmark = pytest.mark.slow  # it works on the tiny run's copy: a whole pipeline behind it

# run in the stage's process (PYTHONPATH): at the alias step, note what is on disk, then die
KILL_AT_ALIAS = textwrap.dedent(
    """
    import json, os, signal
    from pathlib import Path
    import tinytf.tracking.champion as champion

    moved = champion.set_alias

    def killed(name, alias, version):
        if alias != "champion":  # @previous moves first, to the version that is still @champion
            return moved(name, alias, version)
        metrics = Path("data/reports/metrics.json")
        staging = sorted(p.name for p in Path("data/reports").glob(".*staging.tmp"))
        Path(os.environ["ALIAS_NOTE"]).write_text(json.dumps(
            {"version": version, "metrics_mtime": metrics.stat().st_mtime, "staging": staging}))
        os.kill(os.getpid(), signal.SIGKILL)

    champion.set_alias = killed
    """
)


def champion_version(workspace: Path) -> str | None:
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{workspace / 'mlflow.db'}")
    aliases = client.get_registered_model("tinytf-sentiment").aliases
    return aliases.get("champion")


def test_a_kill_before_the_alias_leaves_it_on_the_version_before(workspace, tmp_path, monkeypatch):
    dvc(workspace, "repro", "--force", "--single-item", "evaluate")  # the workspace's own champion
    before = champion_version(workspace)
    assert before is not None
    # as if it served other weights: a rerun serving the same ones reuses their version instead
    # of registering one, and this test needs the killed run to register one
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{workspace / 'mlflow.db'}")
    client.set_model_version_tag("tinytf-sentiment", before, SERVED_TAG, "other weights")

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILL_AT_ALIAS)
    note = tmp_path / "note.json"
    monkeypatch.setenv("PYTHONPATH", f"{hook}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("ALIAS_NOTE", str(note))
    started = time.time()
    killed = dvc(workspace, "repro", "--force", "--single-item", "evaluate", check=False)
    assert killed.returncode != 0
    seen = json.loads(note.read_text())
    # at the alias step the outputs were already in place: written by this run, none still staged
    assert seen["metrics_mtime"] >= started and seen["staging"] == []
    assert int(seen["version"]) > int(before)
    assert champion_version(workspace) == before  # never a version whose outputs are not in place

    monkeypatch.delenv("ALIAS_NOTE")
    monkeypatch.setenv("PYTHONPATH", os.environ["PYTHONPATH"].split(os.pathsep, 1)[1])
    dvc(workspace, "repro", "--force", "--single-item", "evaluate")
    # the next run serves the killed run's weights, so it reuses that version and moves the alias
    # to it: the version its outputs, now in place, describe
    after = str(champion_version(workspace))  # a SQL store gives an int
    assert after == seen["version"]
    metrics = json.loads((workspace / "data/reports/metrics.json").read_text())
    assert metrics["promotion"]["candidate_version"] == after and metrics["promotion"]["promoted"]
    card = (workspace / "data/reports/evaluate/model_card.md").read_text()
    assert f"Registered as tinytf-sentiment version {after}." in card
