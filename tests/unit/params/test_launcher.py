"""pretrain.launcher: a list of arguments from an allowed set, never shell text (issue 57)."""

from __future__ import annotations

import sys

import pytest

from tinytf.errors import ParamsError
from tinytf.params.launcher import check_launcher
from tinytf.train.distributed import relaunch_command


@pytest.mark.parametrize(
    "value",
    [
        [],
        ["torchrun", "--nproc_per_node=8"],
        ["torchrun", "--nproc-per-node=2", "--standalone", "--master_port=0"],
    ],
)
def test_allowed_launchers_pass(value):
    assert check_launcher(value, "pretrain.launcher", "params.yaml") == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("torchrun --nproc_per_node=8", "a list of arguments, not a string"),
        ({"oops": 1}, "expected a list of strings"),
        ([1], "expected a list of strings"),
        (["bash", "-c", "touch x"], "the first argument must be torchrun"),
        (["torchrun", "stages/other.py"], "is not a --flag"),
        (["torchrun", "--nproc_per_node"], "is not an allowed torchrun flag"),
        (["torchrun", "--no-python"], "is not an allowed torchrun flag"),
        (["torchrun", "--nproc_per_node=8;touch x"], "the value must be"),
        (["torchrun", "--master_addr=$(touch x)"], "the value must be"),
    ],
)
def test_other_launchers_are_refused_naming_the_key(value, message):
    with pytest.raises(ParamsError, match="params.yaml: pretrain.launcher: ") as err:
        check_launcher(value, "pretrain.launcher", "params.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_relaunch_is_an_argument_list_and_only_once(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert relaunch_command([], ["stages/pretrain.py"]) is None
    command = relaunch_command(["torchrun", "--nproc_per_node=2"], ["stages/pretrain.py", "--data", "d"])
    assert command == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "stages/pretrain.py",
        "--data",
        "d",
    ]
    monkeypatch.setenv("LOCAL_RANK", "0")  # started by torchrun: runs the stage itself
    assert relaunch_command(["torchrun", "--nproc_per_node=2"], ["stages/pretrain.py"]) is None
