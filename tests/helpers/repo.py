"""A copy of the repository to run DVC in, and the commands the end-to-end tests run there."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .paths import REPO


def repo_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [f for f in listed if (REPO / f).is_file()]


GIT = ["git", "-c", "user.name=tinytf-test", "-c", "user.email=test@example.invalid"]


def repo_copy(root: Path) -> Path:
    """A copy of the repository's files in `root`, committed to a fresh git repo (DVC experiments
    need a commit to start from)."""
    for name in repo_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    (root / "dvc.lock").unlink(missing_ok=True)  # the committed lock is for the default params
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "copy"], cwd=root, check=True, capture_output=True)
    return root


# the longest single command here is the tiny pipeline's first `dvc exp run` (~3 min on 2 cores);
# a command past this fails its test instead of holding the whole suite
COMMAND_TIMEOUT_S = 900


def tracked_env(tracking_uri: str | None = None) -> dict[str, str]:
    """This interpreter's environment first on PATH, tracking on: into `tracking_uri` when given,
    else into the copy's own mlflow.db (never the developer's MLFLOW_TRACKING_URI)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["TINYTF_TRACKING"] = "1"
    env.pop("MLFLOW_TRACKING_URI", None)
    if tracking_uri:
        env["MLFLOW_TRACKING_URI"] = tracking_uri
    return env


def dvc(
    root: Path,
    *args: str,
    command: tuple[str, ...] = (),
    tracking_uri: str | None = None,
    log: Path | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run dvc (or `command`) in `root` with tracking on (see tracked_env), failing the test unless
    it exits 0 (`check`). With `log`, its output goes to that file instead of a pipe: a command that
    forks a daemon (`dvc queue start`) hands it its stdout, and a pipe would keep subprocess.run
    waiting until the daemon exits."""
    command = command or (str(Path(sys.executable).parent / "dvc"),)
    with open(log, "w") if log else contextlib.nullcontext() as out:
        output = {"stdout": out, "stderr": subprocess.STDOUT} if log else {"capture_output": True}
        result = subprocess.run(
            [*command, *args],
            cwd=root,
            env=tracked_env(tracking_uri),
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            **output,
        )
    assert result.returncode == 0 or not check, log.read_text() if log else result.stdout + result.stderr
    return result


def file_bytes(root: Path, names: list[str]) -> dict[str, bytes]:
    """Every file under each name (a file or a folder), by path: what a failed stage must keep."""
    found = {}
    for name in names:
        path = root / name
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                found[file.relative_to(root).as_posix()] = file.read_bytes()
    return found


@contextlib.contextmanager
def unwritable(folder: Path):
    """chmod 555; for root, whom permissions do not stop, the immutable flag (chattr +i)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root where chattr +i is refused: no way to make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
