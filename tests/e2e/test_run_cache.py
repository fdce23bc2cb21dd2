"""Experiments reuse DVC's run cache: a stage an earlier experiment ran with the same inputs is
restored from the cache, not computed again (issue 56: a sweep of fine-tuning changes runs
prepare, tokenize and pretrain once)."""

from __future__ import annotations

import pytest

from tests.helpers.repo import dvc

pytestmark = pytest.mark.slow

UPSTREAM = ("check_params", "prepare", "tokenize", "pretrain@1", "pretrain@2")  # tiny: two bodies


def ran(result) -> set[str]:
    """The stages an experiment's output says it ran (not the ones it restored)."""
    output = result.stdout + result.stderr
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage '")}


def test_a_second_experiment_differing_in_finetune_keys_reruns_nothing_upstream(workspace):
    # both change pretraining from the workspace's run, so the first has to compute it
    upstream = ("-S", "pretrain.lr=0.002")
    first = dvc(workspace, "exp", "run", "--temp", *upstream, "-S", "finetune.epochs=1", "finetune")
    second = dvc(workspace, "exp", "run", "--temp", *upstream, "-S", "finetune.epochs=3", "finetune")
    assert {"pretrain@1", "pretrain@2", "finetune"} <= ran(first), first.stdout
    # check_params validates every new params.yaml (about a second); nothing upstream computes again
    assert ran(second) & set(UPSTREAM) == {"check_params"}, second.stdout
    for body in ("pretrain@1", "pretrain@2"):  # each pretraining run a stage of its own
        assert f"Stage '{body}' is cached - skipping run" in second.stdout + second.stderr, second.stdout
    assert "finetune" in ran(second)
