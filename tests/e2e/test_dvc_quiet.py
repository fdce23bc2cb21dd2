"""`tinytf exp` and `tinytf preset` run DVC through tinytf.cli.dvc_quiet: a temporary experiment's
first checkout warns once per output not yet made, and the wrapper drops that warning alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

DVC_YAML = """stages:
  a:
    cmd: mkdir -p out && echo ${x} > out/a.txt
    params: [x]
    outs: [out/a.txt]
"""


def test_a_temporary_experiment_says_nothing_of_the_outputs_it_is_about_to_make(tmp_path):
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / "params.yaml").write_text("x: 1\n")
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=tmp_path, check=True)

    def exp_run(*dvc, value):
        command = [*dvc, "exp", "run", "--temp", "-S", f"x={value}"]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)

    plain = exp_run(sys.executable, "-m", "dvc", value=2)  # DVC's own: the warning this is about
    assert plain.returncode == 0 and "No file hash info found for" in plain.stderr, plain.stderr
    quiet = exp_run(sys.executable, "-m", "tinytf.cli.dvc_quiet", value=3)
    assert quiet.returncode == 0, quiet.stderr
    assert "No file hash info" not in quiet.stdout + quiet.stderr
    assert (
        "Running stage 'a'" in quiet.stdout and "Ran experiment(s)" in quiet.stdout
    )  # the rest as DVC says it
