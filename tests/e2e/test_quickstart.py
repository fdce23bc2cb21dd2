"""The README's quickstart, walked as a newcomer runs it: its first bash block, line by line in one
shell, in a fresh copy of the repository. `make setup` is checked to have nothing left to do (CI's
own setup just ran; a second would reinstall the shared venv into the copy), and `make ui` is
started in the background, asked for its page, then stopped. The walk is the one that builds the
shared tiny run (tests/e2e/conftest.py): its `tinytf preset tiny` is that run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest

from tests.helpers.paths import REPO
from tests.helpers.quickstart import first_change, newcomer_env, noise, quickstart, run_lines

pytestmark = pytest.mark.slow


def test_the_first_change_reruns_only_what_it_touches(workspace):
    """The README's first change, walked where the quickstart left a newcomer: the clone as
    committed (the tiny run not applied) beside the run cache the tiny run filled."""
    subprocess.run(["git", "checkout", "-q", "HEAD", "--", "."], cwd=workspace, check=True)
    (workspace / "dvc.lock").unlink()  # the applied run's: the clone has none
    walked = run_lines(workspace, ["source .venv/bin/activate", *first_change()])
    output = walked.stdout + walked.stderr
    assert walked.returncode == 0, output[-3000:]
    assert noise(output) == []
    ran = set(re.findall(r"^Running stage '([^']+)'", walked.stdout, re.M))
    new = {"grid@AdamW-0.003-16-2", "grid@SGD-0.003-16-2"}  # the cells grid.lrs adds
    readers = {"check_params", "grid_finalists@1-2", "evaluate", "report"}
    assert new <= ran <= new | readers, ran  # every other stage came from the run cache
    assert "grid.lrs" in walked.stdout, walked.stdout  # compare names the key that differs


def test_the_quickstart_block_is_setup_activate_then_tinytf_and_the_ui():
    commands = quickstart()
    assert commands[:2] == ["make setup", "source .venv/bin/activate"] and commands[-1] == "make ui"
    assert any(c.startswith("tinytf preset tiny") for c in commands)
    assert any(c.startswith("tinytf predict") for c in commands)


def test_the_quickstart_runs_in_order_and_its_model_learned(quickstart_walk, workspace):
    walked = quickstart_walk
    assert walked["returncode"] == 0, walked["stdout"][-3000:] + walked["stderr"][-3000:]
    assert noise(walked["stdout"] + walked["stderr"]) == []  # no traceback, no DVC warning
    # predict's table: the text, its class and each class's probability; the demo sentences right
    for text, label in (("a gripping, beautifully acted film", "fresh"), ("a dull mess", "rotten")):
        assert re.search(rf"{text} +{label} +\d\.\d{{3}} +\d\.\d{{3}}", walked["stdout"]), walked["stdout"]
    # the served model beats the majority class on its own test split (the tiny run's metrics)
    metrics = json.loads((workspace / "data/reports/metrics.json").read_text())
    assert metrics["test_accuracy"] > metrics["baselines"]["majority"]["test_accuracy"], metrics
    assert walked["status"] == ""  # a temporary experiment: the clone is as it was
    # the block's last command, in a copy of the walked clone (its experiment since applied)
    (workspace / ".venv").symlink_to(REPO / ".venv")
    ui = subprocess.Popen(
        ["bash", "-c", f"source .venv/bin/activate && {quickstart()[-1]}"],
        cwd=workspace,
        env=newcomer_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        page = None
        for _ in range(120):
            try:
                page = urllib.request.urlopen("http://127.0.0.1:5000/", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.5)
        assert page and "<title>MLflow</title>" in page, page
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=30)
