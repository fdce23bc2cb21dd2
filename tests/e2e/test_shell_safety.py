"""No params value reaches a shell as code (issue 57). DVC puts matrix values (`grid.optimizers`,
`variants` cells) into their stages' shell lines, and `dvc exp run -S` writes its values into
params.yaml first: every shell form below, through either way in, must create nothing, and a
value of the wrong shape must be named in one line. The repository here holds the real
dvc.yaml's grid, variants and pretrain stages with their deps and outs left out, so DVC runs
their commands at once, without the upstream pipeline."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import GIT, dvc

STAGES = ("grid", "variants", "pretrain")


@pytest.fixture(scope="module")
def shell_template(tmp_path_factory) -> Path:
    """The repository below, made once (git init, dvc init, a commit); each test gets a copy."""
    root = tmp_path_factory.mktemp("shell") / "repo"
    root.mkdir()
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    kept = {
        name: {k: v for k, v in stages[name].items() if k in ("cmd", "matrix", "params")} for name in STAGES
    }
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": kept}))
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    shutil.copytree(REPO / "stages", root / "stages", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    dvc(root, "init", "-q")
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "shell"], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
def shell_repo(shell_template, tmp_path) -> Path:
    """A copy of the template of its own: its parent, where a marker would appear, is the test's."""
    return Path(shutil.copytree(shell_template, tmp_path / "repo", symlinks=True))


def forms(marker: Path) -> list[str]:
    """Shell text that, read as code, creates `marker`: substitution, backticks, a separator, a
    new line, and a single quote that closes the quotes dvc.yaml puts around a value."""
    return [
        f"SGD $(touch {marker})",
        f"SGD `touch {marker}`",
        f"SGD; touch {marker}",
        f"SGD\ntouch {marker}",
        f"SGD'; touch {marker}; echo '",
    ]


def set_param(root: Path, section: str, key: str, value) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    params[section][key] = value
    (root / "params.yaml").write_text(yaml.safe_dump(params))


@pytest.mark.parametrize("form", range(5))
@pytest.mark.parametrize(
    ("section", "key", "stage"), [("grid", "optimizers", "grid"), ("variants", "head_merges", "variants")]
)
def test_shell_text_in_params_yaml_runs_nothing(shell_repo, form, section, key, stage):
    marker = shell_repo.parent / "created"
    set_param(shell_repo, section, key, [forms(marker)[form]])
    result = dvc(shell_repo, "repro", stage, check=False)
    assert result.returncode != 0
    assert not marker.exists(), result.stdout + result.stderr
    assert f"{section}.{key}" in result.stdout + result.stderr


def test_a_matrix_list_given_as_a_mapping_is_named(shell_repo):
    # DVC iterates a mapping's keys as cells, so only the check in the cells' first command sees it
    set_param(shell_repo, "variants", "seeds", {"oops": 1})
    result = dvc(shell_repo, "repro", "variants", check=False)
    assert result.returncode != 0
    assert "tinytf: error: params.yaml: variants.seeds: expected a list, got dict" in result.stderr


@pytest.mark.parametrize("form", range(4))
def test_shell_text_through_exp_run_set_runs_nothing(shell_repo, form):
    marker = shell_repo.parent / "created"
    value = forms(marker)[form].replace("\n", " && ")  # -S takes one line
    result = dvc(shell_repo, "exp", "run", "-S", f"grid.optimizers=['{value}']", "grid", check=False)
    assert yaml.safe_load((shell_repo / "params.yaml").read_text())["grid"]["optimizers"] == [value]
    assert result.returncode != 0
    assert not marker.exists(), result.stdout + result.stderr
    assert "grid.optimizers" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("python; touch {marker}", "pretrain.launcher: a list of arguments, not a string"),
        (["torchrun", "--nproc_per_node=2;touch {marker}"], "pretrain.launcher"),
        (["sh", "-c", "touch {marker}"], "the first argument must be torchrun"),
        ({"oops": 1}, "pretrain.launcher: expected a list"),
    ],
)
def test_a_launcher_that_is_not_an_allowed_list_is_refused_by_name(shell_repo, value, named):
    marker = shell_repo.parent / "created"
    filled = yaml.safe_load(yaml.safe_dump(value).replace("{marker}", str(marker)))
    set_param(shell_repo, "pretrain", "launcher", filled)
    result = dvc(shell_repo, "repro", "pretrain", check=False)
    assert result.returncode != 0
    assert not marker.exists()
    assert named in result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("tinytf: error:")]
    assert len(lines) == 1, result.stderr


def test_the_check_module_names_a_bad_value_in_one_line(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["grid"]["optimizers"] = ["SGD $(touch x)"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    done = subprocess.run(
        [sys.executable, "-m", "tinytf.params.check", "params.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "grid.optimizers" in done.stderr
