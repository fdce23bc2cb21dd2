"""The training loop shared by pretraining and fine-tuning: the schedule, accumulation, clipping,
training-state checkpoints and resuming, a stop on the first non-finite loss or on SIGINT. Events
go to callbacks (minGPT style), so MLflow stays outside; tasks supply a `BatchSource` and a loss.
"""

from __future__ import annotations

import inspect
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from tqdm import tqdm

from tinytf.errors import TinyTFError
from tinytf.model.checkpoint import load_training_state, save_training_state
from tinytf.train import distributed
from tinytf.train.runtime import Runtime, rng_state, set_rng_state
from tinytf.train.step import FiniteCheck, train_step


class TrainingDiverged(TinyTFError):
    """The loss became NaN or infinite; `step` and `history` let a caller that kept its best epoch
    go on from there."""

    step: int = 0
    history: list[dict] = []


class TrainingInterrupted(TinyTFError):
    exit_code = 130


class BatchSource(Protocol):
    def next_batch(self) -> Any: ...
    def state(self) -> dict: ...
    def load_state(self, state: dict) -> None: ...


class Callback:
    def on_step(self, step: int, metrics: dict[str, float]) -> None: ...
    def on_epoch(self, epoch: int, metrics: dict[str, float]) -> None: ...
    def on_end(self, metrics: dict[str, float]) -> None:
        """Once, with the run's final figures (e.g. test accuracy), after the loop's caller has them."""

    def replay(self, events: list[tuple[str, int, dict[str, float]]]) -> None:
        """A finished run's ("on_step" | "on_epoch", index, metrics) calls, recorded in a worker."""
        for name, index, metrics in events:
            getattr(self, name)(index, metrics)


@dataclass
class LoopConfig:
    total_steps: int
    steps_per_epoch: int
    lr: float
    weight_decay: float = 0.0
    warmup_steps: int = 0
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    grad_accum: int = 1
    log_every: int = 10
    checkpoint_every: int = 200
    optimizer: str = "AdamW"
    optimizer_kwargs: dict = field(default_factory=dict)
    schedule: str = "cosine"  # "cosine" (warmup + cosine decay) | "constant"
    tokens_per_step: int = 0  # for the tokens/s readout; 0 = not a token-counting task
    desc: str = "train"
    progress: bool = True  # a bar per run; off where runs go side by side (tinytf.train.workers)


def lr_at(step: int, cfg: LoopConfig) -> float:
    """Linear warmup to cfg.lr, then cosine decay to cfg.lr * min_lr_ratio at the last step."""
    if cfg.schedule == "constant":
        return cfg.lr
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(cfg.total_steps - cfg.warmup_steps, 1)
    progress = min((step - cfg.warmup_steps) / span, 1.0)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1 + math.cos(math.pi * progress))


def build_optimizer(model: torch.nn.Module, cfg: LoopConfig) -> torch.optim.Optimizer:
    """Any `torch.optim` class by name. With weight decay, only matrices decay (not biases,
    norms): decaying a LayerNorm gain towards 0 fights the normalisation it exists for."""
    if not hasattr(torch.optim, cfg.optimizer):
        raise TinyTFError(f"optimizer '{cfg.optimizer}' is not in torch.optim")
    params = [p for p in model.parameters() if p.requires_grad]
    groups: Any = params
    if cfg.weight_decay:
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
    optimizer_cls = getattr(torch.optim, cfg.optimizer)
    kwargs = dict(cfg.optimizer_kwargs)
    if "fused" in inspect.signature(optimizer_cls).parameters and "fused" not in kwargs:
        # one kernel for the whole update instead of a few per parameter (benchmarks/profile_step.py);
        # where the class or device has none, torch raises and the plain implementation is used
        try:
            return optimizer_cls(groups, lr=cfg.lr, fused=True, **kwargs)
        except (RuntimeError, ValueError):
            pass
    return optimizer_cls(groups, lr=cfg.lr, **kwargs)


class _StopFlag:
    """SIGINT sets a flag the loop checks between steps, so a stop never lands mid-update."""

    def __init__(self):
        self.raised = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.raised:  # a second Ctrl-C means "now"
            raise KeyboardInterrupt
        self.raised = True
        print("\ninterrupt: stopping after this step and saving a checkpoint", file=sys.stderr)

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _step_metrics(result, lr: float, cfg: LoopConfig, steps_per_s: float) -> dict[str, float]:
    """A logging step's figures: reading the loss and norm back is this step's host sync."""
    loss_value, grad_norm = result.values()
    metrics = {"train_loss": loss_value, "lr": lr}
    if grad_norm is not None:
        metrics["grad_norm"] = grad_norm
    if cfg.tokens_per_step:
        metrics["tokens_per_s"] = cfg.tokens_per_step * steps_per_s
    return metrics


def _diverged(cfg: LoopConfig, step: int, loss: float, saved: Path | str | None, saved_step: int):
    where = f"{saved} (step {saved_step})" if saved else "none saved yet"
    return TrainingDiverged(
        f"{cfg.desc}: loss is {loss} at step {step}; stopped. Last good checkpoint: {where}. Lower the "
        f"learning rate or enable gradient clipping."
    )


def _show(bar, metrics: dict[str, float]) -> None:
    postfix = {"loss": f"{metrics['train_loss']:.3f}", "lr": f"{metrics['lr']:.2e}"}
    if "tokens_per_s" in metrics:
        postfix["tok/s"] = f"{metrics['tokens_per_s']:,.0f}"
    bar.set_postfix(postfix, refresh=False)


def _resume(saved: dict, model, optimizer, source: BatchSource, extra_state: dict | None):
    """Returns (history, step, step_log)."""
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    source.load_state(saved["source"])
    set_rng_state(saved["rng"])
    for key, value in (extra_state or {}).items():  # in place: the caller holds these objects
        if isinstance(value, dict) and isinstance(saved.get(key), dict):
            value.clear()
            value.update(saved[key])
    return saved["history"], saved["step"], saved.get("step_log", [])


def _progress_bar(cfg: LoopConfig, step: int):
    return tqdm(
        total=cfg.total_steps,
        initial=step,
        desc=cfg.desc,
        unit="step",
        file=sys.stderr,
        mininterval=1.0,
        disable=None if distributed.is_main() and cfg.progress else True,
        dynamic_ncols=True,
    )


# One function on purpose: it reads top to bottom like nanoGPT's train.py, and the state it mutates
# would otherwise travel through half a dozen helpers' arguments.
def run_loop(  # noqa: PLR0915
    model: torch.nn.Module,
    source: BatchSource,
    loss_fn: Callable[[Any], torch.Tensor],
    cfg: LoopConfig,
    runtime: Runtime,
    on_epoch_end: Callable[[int, int], dict[str, float]],
    callbacks: list[Callback] = (),
    state_path: str | Path | None = None,
    params_hash: str = "",
    resume: bool = True,
    extra_state: dict | None = None,
    stop_early: Callable[[list[dict]], bool] | None = None,
) -> dict:
    """Train for cfg.total_steps optimizer steps; returns {"history", "step_log", "step"}.

    `on_epoch_end(epoch, step)` returns that epoch's metrics. `extra_state` is stored in every
    checkpoint; a dict in it is the task's own state, refilled in place on resume. `stop_early(history)`,
    asked after each epoch, ends the training there (the schedule stays the planned one).
    """
    optimizer = build_optimizer(model, cfg)
    # step_log: the deterministic per-step values (no timings), for loss curves
    history, step, step_log = [], 0, []
    saved = load_training_state(state_path, params_hash) if (state_path and resume) else None
    if saved is not None:
        history, step, step_log = _resume(saved, model, optimizer, source, extra_state)
        print(f"resuming {cfg.desc} from step {step} ({state_path})", file=sys.stderr)
    last_good = step
    ddp = distributed.wrap(model, loss_fn, runtime.device) if distributed.enabled() else None
    if not distributed.is_main():
        callbacks = ()  # rank 0 logs

    def checkpoint():
        nonlocal last_good
        if state_path is None:
            return
        save_training_state(
            state_path,
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "source": source.state(),
                "rng": rng_state(),
                "history": history,
                "step_log": step_log,
                "step": step,
                "params_hash": params_hash,
                **(extra_state or {}),
            },
        )
        last_good = step

    model.train()
    bar = _progress_bar(cfg, step)
    window_started, window_steps = time.perf_counter(), 0
    finite = FiniteCheck()
    with _StopFlag() as stop:
        while step < cfg.total_steps:
            lr = lr_at(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            result = train_step(model, optimizer, source, loss_fn, cfg, runtime, ddp)
            step += 1
            finite.add(step, result.loss)
            window_steps += 1
            bar.update(1)
            at_epoch = step % cfg.steps_per_epoch == 0 or step == cfg.total_steps
            # the host waits for the device only here: before a step is logged or checkpointed
            if step % cfg.log_every == 0 or at_epoch or step % cfg.checkpoint_every == 0 or stop.raised:
                if (bad := finite.first_bad()) is not None:
                    bar.close()
                    error = _diverged(cfg, *bad, state_path if last_good else None, last_good)
                    error.step, error.history = bad[0], history
                    raise error
            if step % cfg.log_every == 0 or step == cfg.total_steps:
                elapsed = max(time.perf_counter() - window_started, 1e-9)
                metrics = _step_metrics(result, lr, cfg, window_steps / elapsed)
                step_log.append({"step": step, **{k: v for k, v in metrics.items() if k != "tokens_per_s"}})
                _show(bar, metrics)
                for cb in callbacks:
                    cb.on_step(step, metrics)
                window_started, window_steps = time.perf_counter(), 0
            if at_epoch:
                epoch = math.ceil(step / cfg.steps_per_epoch)
                metrics = {"epoch": epoch, "step": step, **on_epoch_end(epoch, step)}
                history.append(metrics)
                for cb in callbacks:
                    cb.on_epoch(epoch, metrics)
                checkpoint()
                if stop_early is not None and stop_early(history):
                    break
            elif step % cfg.checkpoint_every == 0:
                checkpoint()
            if stop.raised:
                checkpoint()
                bar.close()
                raise TrainingInterrupted(
                    f"{cfg.desc}: interrupted at step {step}; checkpoint saved to {state_path}. "
                    f"Run again to resume."
                )
    bar.close()
    return {"history": history, "step_log": step_log, "step": step}
