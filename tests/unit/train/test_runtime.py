"""The runtime: what `auto` resolves to, and a compiled training step that matches the eager one."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.model_fixtures import small
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import FinetuneParams
from tinytf.train import runtime as rt
from tinytf.train.classify import classifier_runtime
from tinytf.train.finetune_trainer import finetune_runtime
from tinytf.train.pretrain import lm_step_loss
from tinytf.train.runtime import (
    CLASSIFIER_COMPILE_MIN_STEPS,
    COMPILE_MIN_STEPS,
    Runtime,
    maybe_compile,
    resolve_runtime,
)

# a pre-LN GELU model, as the pipeline trains: what compiling must reproduce
PRE_LN = dict(vocab_size=97, d_model=32, n_head=2, d_ff=64, block_size=16, norm_first=True, activation="gelu")


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_follows_the_cpu_not_a_timing(monkeypatch, native):
    monkeypatch.setattr(rt, "cpu_has_bf16", lambda: native)
    for _ in range(3):  # the same machine always makes the same choice
        assert resolve_runtime("cpu", "auto", False, 0).precision == ("bf16" if native else "fp32")
    assert resolve_runtime("cpu", "fp32", False, 0).precision == "fp32"


def test_auto_compile_needs_enough_steps_and_a_compiler(monkeypatch):
    enough = COMPILE_MIN_STEPS["cpu"]
    monkeypatch.setattr(rt, "compiler_available", lambda device: True)
    assert resolve_runtime("cpu", "fp32", "auto", enough).compile
    assert not resolve_runtime("cpu", "fp32", "auto", enough - 1).compile
    monkeypatch.setattr(rt, "compiler_available", lambda device: False)
    assert not resolve_runtime("cpu", "fp32", "auto", enough).compile
    assert resolve_runtime("cpu", "fp32", True, 1).compile  # an explicit true is obeyed


def fake_device(monkeypatch, kind: str) -> None:
    """`device` resolves to `kind` on this machine, whatever it has; a compiler is present."""
    monkeypatch.setattr(rt, "resolve_device", lambda name: torch.device(kind))
    monkeypatch.setattr(rt, "compiler_available", lambda device: True)


@pytest.mark.parametrize("kind", ["cpu", "cuda"])
def test_pretraining_compiles_from_its_threshold_on_each_device_type(monkeypatch, kind):
    fake_device(monkeypatch, kind)
    enough = COMPILE_MIN_STEPS[kind]
    assert resolve_runtime("auto", "fp32", "auto", enough).compile
    assert not resolve_runtime("auto", "fp32", "auto", enough - 1).compile


def test_the_classifier_never_compiles_on_a_cpu_and_does_on_cuda_from_its_threshold(monkeypatch):
    params = FinetuneParams(device="auto", precision="fp32", compile="auto")
    fake_device(monkeypatch, "cpu")
    assert not classifier_runtime(params, 100_000).compile  # however long the run
    assert classifier_runtime(FinetuneParams(device="auto", precision="fp32", compile=True), 1).compile
    fake_device(monkeypatch, "cuda")
    threshold = CLASSIFIER_COMPILE_MIN_STEPS["cuda"]
    assert threshold <= 319  # one epoch of the default data: the run benchmarks/classifier_epoch.py times
    assert classifier_runtime(params, threshold).compile
    assert not classifier_runtime(params, threshold - 1).compile
    assert not classifier_runtime(
        FinetuneParams(device="auto", precision="fp32", compile=False), 10**6
    ).compile


def test_the_finetune_stage_decides_on_its_all_labels_run(monkeypatch):
    """One process trains every run on CUDA, so the longest run's steps decide, not a run's own."""
    data = type("Data", (), {"splits": {"train": list(range(3200))}})()
    params = FinetuneParams(device="auto", precision="fp32", compile="auto", batch_size=32, epochs=2)
    fake_device(monkeypatch, "cuda")
    assert finetune_runtime(params, data).compile  # 200 steps planned by its all-labels run
    monkeypatch.setitem(rt.CLASSIFIER_COMPILE_MIN_STEPS, "cuda", 201)
    assert not finetune_runtime(params, data).compile
    fake_device(monkeypatch, "cpu")
    assert not finetune_runtime(params, data).compile


def test_a_failing_compile_falls_back_to_eager_once(monkeypatch, capsys):
    from torch._dynamo.exc import BackendCompilerFailed

    def broken_compile(fn, **options):
        def call(*args, **kwargs):
            raise BackendCompilerFailed("inductor", RuntimeError("no C++ compiler"), None)

        return call

    monkeypatch.setattr(torch, "compile", broken_compile)
    runtime = Runtime(torch.device("cpu"), "fp32", True)
    double = maybe_compile(lambda x: 2 * x, runtime)
    assert double(3) == 6 and double(4) == 8
    assert not runtime.compile
    assert capsys.readouterr().err.count("torch.compile failed") == 1


def test_a_model_error_inside_a_compiled_step_is_not_swallowed():
    runtime = Runtime(torch.device("cpu"), "fp32", True)
    step = maybe_compile(lambda x: x @ x, runtime)
    with pytest.raises(RuntimeError):
        step(torch.ones(2, 3))  # a shape error is the caller's bug, not a compile failure


@pytest.mark.slow
def test_compiled_step_matches_the_eager_step():
    torch.manual_seed(0)
    config = small(**PRE_LN)
    eager, compiled = TinyTransformer(config), TinyTransformer(config)
    compiled.load_state_dict(eager.state_dict())
    x, y = torch.randint(5, 97, (4, 16)), torch.randint(5, 97, (4, 16))
    losses = []
    for model, on in ((eager, False), (compiled, True)):
        loss = lm_step_loss(model, Runtime(torch.device("cpu"), "fp32", on))(x, y)
        loss.backward()
        losses.append(loss)
    assert losses[0].dtype == losses[1].dtype == torch.float32
    assert torch.allclose(losses[0], losses[1], atol=1e-5)
    for (name, a), b in zip(eager.named_parameters(), compiled.parameters(), strict=True):
        if a.grad is None:  # the classification head takes no part in the LM loss
            assert b.grad is None, name
            continue
        assert torch.allclose(a.grad, b.grad, atol=1e-5, rtol=1e-4), name


@pytest.mark.slow
def test_a_classifier_step_with_dropout_compiles_instead_of_falling_back(capsys):
    # what `finetune.compile: true` (or auto on CUDA) runs: dropout inside the compiled graph,
    # lengths symbolic; once, a traceback in the dropout made every such step run eagerly
    from tinytf.train.classify import classifier_step_loss

    torch.manual_seed(0)
    config = small(**PRE_LN, dropout=0.1)
    model = TinyTransformer(config).train()
    runtime = Runtime(torch.device("cpu"), "fp32", True)
    step = classifier_step_loss(model, runtime)
    for length in (9, 13):
        ids, mask = torch.randint(5, 97, (4, length)), torch.ones(4, length, dtype=torch.bool)
        loss, _ = step(ids, mask, torch.tensor([0, 1, 1, 0]))
        loss.backward()
    assert runtime.compile and "torch.compile failed" not in capsys.readouterr().err
    assert torch.isfinite(loss) and model.base.blocks[0].attn.qkv.weight.grad.abs().sum() > 0
