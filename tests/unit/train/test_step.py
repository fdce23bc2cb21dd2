"""The training step decides a non-finite step on the device: the same weights, optimizer state and
stop as when the host read every loss, and no host sync between logging steps."""

from __future__ import annotations

import math

import pytest
import torch

from tests.helpers.lm_fixtures import make_corpus_dir, tiny_model, tiny_pretrain
from tinytf.train.loop import LoopConfig, TrainingDiverged, build_optimizer
from tinytf.train.pretrain import pretrain
from tinytf.train.runtime import Runtime
from tinytf.train.step import FiniteCheck, skips_on_device, train_step


class Batches:
    def __init__(self, seed: int = 0):
        self.generator = torch.Generator().manual_seed(seed)

    def next_batch(self):
        return torch.randn(8, 12, generator=self.generator), torch.randn(8, 3, generator=self.generator)


def model_and_loss(poison_at: int | None = None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    calls = {"n": 0}

    def loss_fn(batch):
        calls["n"] += 1
        x, y = batch
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        return loss * math.inf if calls["n"] == poison_at else loss

    return model, loss_fn


def old_step(model, optimizer, source, loss_fn, cfg, runtime):
    """The step as it was before the device decided: the host reads the loss every step."""
    batch = source.next_batch()
    with runtime.autocast():
        loss = loss_fn(batch)
    loss.backward()
    if not math.isfinite(float(loss.detach())):
        optimizer.zero_grad(set_to_none=True)
        return
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip, foreach=True)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def train(step_fn, precision: str, optimizer: str, steps: int, poison_at: int | None = None):
    model, loss_fn = model_and_loss(poison_at)
    cfg = LoopConfig(total_steps=steps, steps_per_epoch=steps, lr=0.05, weight_decay=0.1, grad_clip=0.5)
    cfg.optimizer = optimizer
    opt = build_optimizer(model, cfg)
    runtime, source = Runtime(torch.device("cpu"), precision, False), Batches()
    for _ in range(steps):
        step_fn(model, opt, source, loss_fn, cfg, runtime)
    return model.state_dict(), opt.state_dict(), opt


def assert_same(a, b):
    (weights_a, state_a, _), (weights_b, state_b, _) = a, b
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    assert state_a["state"].keys() == state_b["state"].keys()
    for key, entry in state_a["state"].items():
        for name, value in entry.items():
            other = state_b["state"][key][name]
            assert torch.equal(value, other) if torch.is_tensor(value) else value == other, (key, name)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("optimizer", ["AdamW", "SGD", "Adagrad", "RMSprop"])
def test_finite_steps_give_the_bytes_the_host_decided_step_gave(precision, optimizer):
    new = train(train_step, precision, optimizer, steps=5)
    assert skips_on_device(new[2]) == (optimizer != "RMSprop")  # RMSprop has no fused kernel: host path
    assert_same(new, train(old_step, precision, optimizer, steps=5))


@pytest.mark.parametrize(
    "poison_at", [1, 3]
)  # the first step is decided on the host, later ones on the device
@pytest.mark.parametrize("optimizer", ["AdamW", "SGD"])
def test_an_inf_step_leaves_weights_and_optimizer_state_as_the_host_decided_step(poison_at, optimizer):
    new = train(train_step, "fp32", optimizer, steps=4, poison_at=poison_at)
    assert_same(new, train(old_step, "fp32", optimizer, steps=4, poison_at=poison_at))
    before = train(train_step, "fp32", optimizer, steps=poison_at - 1)
    after = train(train_step, "fp32", optimizer, steps=poison_at, poison_at=poison_at)
    assert_same(after, before)  # the poisoned step itself changed nothing


def test_steps_after_the_first_wait_for_the_device_never(monkeypatch):
    model, loss_fn = model_and_loss(poison_at=4)
    cfg = LoopConfig(total_steps=6, steps_per_epoch=6, lr=0.05, grad_clip=1.0)
    opt, source, runtime = build_optimizer(model, cfg), Batches(), Runtime(torch.device("cpu"), "fp32", False)
    train_step(model, opt, source, loss_fn, cfg, runtime)
    reads = []
    for name in ("__float__", "__bool__", "item", "tolist"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(
            torch.Tensor, name, lambda self, *a, _o=original, _n=name: reads.append(_n) or _o(self, *a)
        )
    results = [train_step(model, opt, source, loss_fn, cfg, runtime) for _ in range(5)]
    assert reads == []
    monkeypatch.undo()
    assert [math.isfinite(r.values()[0]) for r in results] == [True, True, False, True, True]


def test_finite_check_names_the_first_non_finite_step_and_empties_its_window():
    check = FiniteCheck()
    for step, value in [(1, 2.0), (2, math.nan), (3, math.inf)]:
        check.add(step, torch.tensor(value))
    step, loss = check.first_bad()
    assert step == 2 and math.isnan(loss)
    assert check.first_bad() is None
    check.add(4, torch.tensor(1.0))
    assert check.first_bad() is None


def test_a_run_stops_at_the_poisoned_step_with_the_checkpoint_before_it(tmp_path, monkeypatch):
    (tmp_path / "corpus").mkdir()
    corpus = make_corpus_dir(tmp_path / "corpus")
    import tinytf.train.pretrain as stage

    original, calls = stage.lm_step_loss, {"n": 0}

    def poisoned(model, runtime):
        step_loss = original(model, runtime)

        def loss(x, y):
            calls["n"] += 1
            return step_loss(x, y) * (math.inf if calls["n"] == 7 else 1.0)

        return loss

    monkeypatch.setattr(stage, "lm_step_loss", poisoned)
    state = tmp_path / "state.pt"
    with pytest.raises(TrainingDiverged, match=rf"loss is inf at step 7; stopped.*{state.name} \(step 6\)"):
        pretrain(
            tiny_model(),
            tiny_pretrain(log_every=3),  # epoch ends at 6; the check comes at step 8 (a checkpoint), not 7
            seed=3,
            data_dir=corpus,
            state_path=state,
            params_hash="h",
            callbacks=[],
            stats_path=corpus / "none.json",
        )
    assert torch.load(state, weights_only=False)["step"] == 6  # the epoch end before it; never saved after it
    assert calls["n"] == 8  # the steps up to the check ran


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_pretraining_run_writes_the_bytes_of_the_host_decided_steps(tmp_path, monkeypatch, precision):
    """The run as the stage writes it (weights, step log, history), with every step decided on the
    host as before the flag, and as now."""
    (tmp_path / "corpus").mkdir()
    corpus = make_corpus_dir(tmp_path / "corpus")
    import tinytf.train.step as step

    def run():
        result = pretrain(
            tiny_model(),
            tiny_pretrain(precision=precision),
            seed=3,
            data_dir=corpus,
            params_hash="h",
            callbacks=[],
            stats_path=corpus / "none.json",
        )
        return result.model.state_dict(), result.step_log, result.history

    now = run()
    monkeypatch.setattr(step, "skips_on_device", lambda optimizer: False)
    before = run()
    assert all(torch.equal(now[0][k], before[0][k]) for k in now[0])
    assert now[1:] == before[1:] and len(now[1]) == 6 and "grad_norm" in now[1][0]
