"""The README's quickstart, walked as a newcomer runs it: its first bash block, line by line in one
shell, in a fresh copy of the repository. `make setup` is checked to have nothing left to do (CI's
own setup just ran; a second would reinstall the shared venv into the copy), and `make ui` is
started in the background, asked for its page, then stopped. The walk is the one that builds the
shared tiny run (tests/e2e/conftest.py): its `tinytf preset tiny` is that run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest

from tests.helpers.paths import REPO
from tests.helpers.quickstart import newcomer_env, quickstart

pytestmark = pytest.mark.slow


def test_the_quickstart_block_is_setup_activate_then_tinytf_and_the_ui():
    commands = quickstart()
    assert commands[:2] == ["make setup", "source .venv/bin/activate"] and commands[-1] == "make ui"
    assert any(c.startswith("tinytf preset tiny") for c in commands)
    assert any(c.startswith("tinytf predict") for c in commands)


def test_the_quickstart_runs_in_order_and_predict_answers(quickstart_walk, workspace):
    walked = quickstart_walk
    assert walked["returncode"] == 0, walked["stdout"][-3000:] + walked["stderr"][-3000:]
    # predict's table: the text, its class and each class's probability
    assert re.search(r"a gripping film +(fresh|rotten) +\d\.\d{3} +\d\.\d{3}", walked["stdout"]), walked[
        "stdout"
    ]
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
