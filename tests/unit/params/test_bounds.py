"""Upper bounds (issue 72): every params key that sizes memory or time has one, and its bound plus
one is refused in one line naming the key and the bound, through the check and from a stage's
command line, before any work. `evaluate.registry_name` must be a name MLflow registers."""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
import typing

import pytest

from tests.helpers.paths import REPO
from tinytf.errors import ParamsError
from tinytf.params.config import Params, load_params

# the keys that size memory or time: each must carry an upper bound (a test below fails if one goes)
SIZING = """
base.seed tokenize.vocab_size tokenize.max_length model.d_model model.n_layer model.n_head
model.d_ff model.block_size pretrain.seeds pretrain.batch_size pretrain.grad_accum pretrain.epochs
pretrain.steps_per_epoch pretrain.warmup_steps pretrain.eval_batches variants.seeds variants.steps
variants.batch_size variants.eval_batches finetune.label_counts finetune.seeds finetune.epochs
finetune.min_steps finetune.batch_size finetune.search_labels finetune.search_seeds
finetune.snapshot_labels hf.max_length baselines.word_ngrams baselines.char_ngrams grid.batch_sizes
grid.epochs grid.seed grid.finalist_seeds evaluate.bootstrap_resamples probes.seed probes.n probes.d
complexity.lengths complexity.hidden_sizes complexity.fixed_length complexity.batch complexity.heads
complexity.repeats
""".split()


def upper_bounds(cls: type = Params, prefix: str = "") -> dict[str, int]:
    """{dotted key: its `le` bound} over the whole schema, nested sections included."""
    found = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hints[f.name]):
            found |= upper_bounds(hints[f.name], key + ".")
        elif "le" in f.metadata:
            found[key] = f.metadata["le"]
    return found


BOUNDS = upper_bounds()


def test_every_key_that_sizes_memory_or_time_has_an_upper_bound():
    assert sorted(set(SIZING) - set(BOUNDS)) == []


@pytest.mark.parametrize("key", sorted(BOUNDS))
def test_a_bound_plus_one_is_refused_naming_the_key_and_the_bound(key):
    over = BOUNDS[key] + 1
    current = functools.reduce(getattr, key.split("."), load_params(REPO / "params.yaml"))
    value = [*current[:-1], over] if isinstance(current, list) else over  # a list keeps its length
    with pytest.raises(ParamsError) as err:
        load_params(REPO / "params.yaml", {key: value})
    said = f"{REPO / 'params.yaml'}: {key}: must be <= {BOUNDS[key]}, got {over}"
    assert str(err.value) in (said, said + ".0")  # a float key reads 2 as 2.0


@pytest.mark.parametrize("key", ["finetune.seeds", "complexity.lengths", "grid.lrs", "pretrain.seeds"])
def test_a_list_of_more_than_a_thousand_values_is_refused_naming_the_key(key):
    with pytest.raises(ParamsError) as err:
        load_params(REPO / "params.yaml", {key: list(range(2, 1003))})
    assert str(err.value) == f"{REPO / 'params.yaml'}: {key}: 1,001 values; at most 1,000"


@pytest.mark.parametrize(
    "name", ["team/sentiment", "models:/x", "a@champion", "it's", " x", "..", "a..b", ""]
)
def test_a_registry_name_mlflow_would_refuse_is_refused_by_the_check(name):
    with pytest.raises(ParamsError, match=r"evaluate.registry_name: .* is not a registered model name"):
        load_params(REPO / "params.yaml", {"evaluate.registry_name": name})


def test_a_stage_refuses_a_bound_plus_one_in_one_line_before_any_work(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "stages/train_tokenizer.py"), "--params", str(REPO / "params.yaml")]
        + [
            "--set",
            "base.seed=100000000000000000000000",
            "--prepared",
            "p",
            "--out",
            "o",
            "--report",
            "r.json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "TINYTF_TRACKING": "0", "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"tinytf: error: {REPO / 'params.yaml'}: base.seed: must be <= 4294967295, "
        "got 100000000000000000000000\n"
    )
    assert not (REPO / "o").exists()
