"""The README's quickstart, walked as a newcomer runs it: its first bash block, line by line in one
shell, in a fresh copy of the repository. `make setup` is checked to have nothing left to do (CI's
own setup just ran; a second would reinstall the shared venv into the copy), and `make ui` is
started in the background, asked for its page, then stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest

from tests.helpers.paths import REPO
from tests.helpers.repo import COMMAND_TIMEOUT_S, repo_copy, tracked_env

pytestmark = pytest.mark.slow


def quickstart() -> list[str]:
    """The commands of the first bash block under '## Quickstart', comments cut."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quickstart") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line]


def test_the_quickstart_block_is_setup_activate_then_tinytf_and_the_ui():
    commands = quickstart()
    assert commands[:2] == ["make setup", "source .venv/bin/activate"] and commands[-1] == "make ui"
    assert any(c.startswith("tinytf preset tiny") for c in commands)
    assert any(c.startswith("tinytf predict") for c in commands)


def test_the_quickstart_runs_in_order_and_predict_answers(tmp_path):
    root = repo_copy(tmp_path / "clone")
    (root / ".venv").symlink_to(REPO / ".venv")
    commands = quickstart()
    # `make -q`: exit 0 only when setup has nothing to do
    shell = ["set -euo pipefail", "make -q setup", *commands[1:-1]]
    env = tracked_env()
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    walked = subprocess.run(
        ["bash", "-c", "\n".join(shell)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert walked.returncode == 0, walked.stdout[-3000:] + walked.stderr[-3000:]
    # predict's table: the text, its class and each class's probability
    assert re.search(r"a gripping film +(fresh|rotten) +\d\.\d{3} +\d\.\d{3}", walked.stdout), walked.stdout
    clean = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
    )
    assert clean.stdout == ""  # a temporary experiment: the clone is as it was
    ui = subprocess.Popen(
        ["bash", "-c", f"source .venv/bin/activate && {commands[-1]}"],
        cwd=root,
        env=env,
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
