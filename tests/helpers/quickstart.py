"""The README's quickstart, walked as a newcomer walks it: its first bash block, line by line in one
shell, in a copy of the repository with the venv linked in. The shared tiny run is built by this
walk (tests/e2e/conftest.py), so the quickstart's `tinytf preset tiny` is the suite's one tiny
pipeline run instead of a second one."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .paths import REPO
from .repo import COMMAND_TIMEOUT_S, tracked_env


def quickstart() -> list[str]:
    """The commands of the first bash block under '## Quickstart', comments cut."""
    return _block("## Quickstart")


def first_change() -> list[str]:
    """The commands of the quickstart's "A first change" block, comments cut."""
    return _block("A first change")


def _block(after: str) -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index(after) :]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line]


def noise(output: str) -> list[str]:
    """The lines of a command's output that a newcomer should never meet: a Python traceback, or
    a DVC warning or error."""
    return [
        line
        for line in output.splitlines()
        if line.startswith(("Traceback (most recent call last)", "WARNING:", "ERROR:"))
    ]


def newcomer_env() -> dict[str, str]:
    """Tracking on into the copy's own store, and no venv on PATH: the block's `source` puts it there."""
    env = tracked_env()
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    return env


def walk(root: Path) -> subprocess.CompletedProcess:
    """Every command of the block but the last (`make ui`, which serves until stopped), in `root`
    with `.venv` linked to the repository's; `make -q setup` instead of `make setup`: exit 0 only
    when setup has nothing left to do (a second setup would reinstall the shared venv)."""
    return run_lines(root, ["make -q setup", *quickstart()[1:-1]])


def run_lines(root: Path, lines: list[str]) -> subprocess.CompletedProcess:
    """`lines` in one bash shell in `root` (stopping at the first failure), as a newcomer runs them,
    with `.venv` linked to the repository's."""
    (root / ".venv").symlink_to(REPO / ".venv")
    return subprocess.run(
        ["bash", "-c", "\n".join(["set -euo pipefail", *lines])],
        cwd=root,
        env=newcomer_env(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
