"""The nanoGPT-style peer of `benchmarks/pretrain_throughput.py --nanogpt` trains the shape it is
given, counts its matmul weights right, runs without deterministic algorithms as nanoGPT does, and
leaves tinytf's process-wide setting as it found it."""

from __future__ import annotations

import math
import sys

import pytest
import torch

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from nanogpt_peer import NanoGPT, matmul_parameters, nanogpt_step  # noqa: E402

from tests.helpers.model_fixtures import small  # noqa: E402
from tinytf.train.runtime import Runtime  # noqa: E402

CONFIG = small(
    vocab_size=50, block_size=8, n_head=2, norm_first=True, activation="gelu"
)  # pre-LN, as nanoGPT


def batches(vocab: int = 50, length: int = 8):
    generator = torch.Generator().manual_seed(0)
    while True:
        block = torch.randint(0, vocab, (4, length + 1), generator=generator)
        yield block[:, :-1], block[:, 1:]  # two slices of one tensor, as tinytf's BlockSource gives them


def test_its_first_loss_is_near_uniform_over_the_vocabulary():
    torch.manual_seed(0)
    x, y = next(batches())
    loss = NanoGPT(CONFIG)(x, y)
    assert loss.item() == pytest.approx(math.log(CONFIG.vocab_size), rel=0.05)


@pytest.mark.parametrize("tied", [False, True])
def test_matmul_weights_count_the_head_once_and_no_table(tied):
    import dataclasses

    model = NanoGPT(dataclasses.replace(CONFIG, tie_weights=tied))
    d, ff, layers, vocab = CONFIG.d_model, CONFIG.d_ff, CONFIG.n_layer, CONFIG.vocab_size
    per_layer = (d * 3 * d + 3 * d) + (d * d + d) + (d * ff + ff) + (ff * d + d) + 4 * d  # linears + 2 norms
    head = vocab * d + (vocab if CONFIG.bias else 0)  # its bias where tinytf's head has one
    assert matmul_parameters(model) == layers * per_layer + 2 * d + head  # + final norm


def test_a_step_trains_without_deterministic_algorithms_and_restores_the_setting():
    source, seen = batches(), []

    def next_batch():
        seen.append(torch.are_deterministic_algorithms_enabled())
        return next(source)

    runtime = Runtime(torch.device("cpu"), "fp32", False)
    model, step = nanogpt_step(CONFIG, 3e-3, 0.1, 1.0, 2, next_batch, runtime)
    before = [p.detach().clone() for p in model.parameters()]
    torch.use_deterministic_algorithms(True, warn_only=True)  # as tinytf's compiled step leaves it
    try:
        step()
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
    assert seen == [False, False]  # two micro-batches, each drawn with the setting off, as nanoGPT runs
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert all(p.grad is None for p in model.parameters())  # zero_grad(set_to_none=True), as nanoGPT
