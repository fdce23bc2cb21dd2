"""One optimizer step, decided on the device: what `run_loop` runs each step.

A step whose loss is not finite applies no update. Where the optimizer is fused that decision is
a found-inf flag the update kernel reads (as AMP's GradScaler passes it), so the host never waits
for the device mid-run. Other optimizers, and a first step (whose skip would still create the
optimizer's state), read the loss on the host and skip the update there.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tinytf.train import distributed
from tinytf.train.runtime import Runtime


@dataclass
class StepResult:
    loss: torch.Tensor  # the step's mean loss, a 0-d tensor on the device
    grad_norm: torch.Tensor | None  # the gradient norm before clipping; None without clipping

    def values(self) -> tuple[float, float | None]:
        """The loss and norm as numbers: a host sync."""
        return float(self.loss), None if self.grad_norm is None else float(self.grad_norm)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    source: Any,
    loss_fn: Callable[[Any], torch.Tensor],
    cfg: Any,
    runtime: Runtime,
    ddp: torch.nn.Module | None = None,
) -> StepResult:
    """cfg.grad_accum micro-batches, clipping, the update (none for a non-finite loss). With `ddp`
    (torchrun) each micro-batch is this rank's slice, and only the last all-reduces the gradients."""
    if ddp is not None:
        return _ddp_train_step(model, optimizer, source, cfg, runtime, ddp)
    loss_sum = None
    for _ in range(cfg.grad_accum):
        batch = source.next_batch()
        with runtime.autocast():
            loss = loss_fn(batch) / cfg.grad_accum
        loss.backward()
        loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
    return _finish_step(model, optimizer, loss_sum, cfg)


def _ddp_train_step(model, optimizer, source, cfg, runtime, ddp):
    loss_sum = None
    for micro in range(cfg.grad_accum):
        batch, weight = distributed.shard(source.next_batch())
        with distributed.no_sync(ddp, sync=micro == cfg.grad_accum - 1), runtime.autocast():
            loss = ddp(batch)
            # an empty slice's loss is NaN but its gradients are zeros: weight 0 keeps both out
            loss = loss * weight / cfg.grad_accum if weight else loss.nan_to_num(0.0) * 0.0
            loss.backward()  # inside no_sync: DDP decides at backward whether to all-reduce
        loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
    return _finish_step(model, optimizer, distributed.mean(loss_sum), cfg)


_STEPPED: weakref.WeakSet = weakref.WeakSet()  # optimizers that have updated once in this process


def skips_on_device(optimizer: torch.optim.Optimizer) -> bool:
    """Fused torch optimizers skip on a found-inf flag; on a first step the skip would still
    create their (zero) state, so the host decides."""
    started = bool(optimizer.state) or optimizer in _STEPPED
    return bool(optimizer.defaults.get("fused")) and started


def _finish_step(model, optimizer, loss: torch.Tensor, cfg) -> StepResult:
    loss = loss.float()
    on_device = skips_on_device(optimizer)
    if not on_device and not math.isfinite(float(loss)):  # the host sync this path cannot avoid
        optimizer.zero_grad(set_to_none=True)
        return StepResult(loss, None)
    grad_norm = None
    if cfg.grad_clip:
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip, foreach=True)
    if on_device:
        optimizer.found_inf = (~torch.isfinite(loss)).float()
    try:
        optimizer.step()
    finally:
        optimizer.found_inf = None
    _STEPPED.add(optimizer)
    optimizer.zero_grad(set_to_none=True)
    return StepResult(loss, grad_norm)


class FiniteCheck:
    """The losses of the steps since the last check, kept on the device; `first_bad()` reads them
    back in one sync."""

    def __init__(self):
        self._window: list[tuple[int, torch.Tensor]] = []

    def add(self, step: int, loss: torch.Tensor) -> None:
        self._window.append((step, loss))

    def first_bad(self) -> tuple[int, float] | None:
        """(step, loss) of the first non-finite loss since the last call, or None; empties the window."""
        if not self._window:
            return None
        steps, losses = zip(*self._window, strict=True)
        self._window.clear()
        finite = torch.isfinite(torch.stack(losses)).tolist()
        if all(finite):
            return None
        first = finite.index(False)
        return steps[first], float(losses[first])
