"""Data-parallel training under `torchrun` (PyTorch DDP); a plain `python` run is one process.

Every rank draws the same global batch and trains on its slice; DDP averages the gradients, so
N ranks train the model one process would (up to float summation order; each draws its own
dropout masks). Only rank 0 logs and writes files; evaluation runs on every rank, so the loop's
control flow never differs between ranks.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import torch


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def relaunch_command(launcher: list[str], argv: list[str]) -> list[str] | None:
    """The argument list that starts this script again under `launcher` (tinytf.params.launcher), or
    None without one or under torchrun already. Never a shell line: no value is read as code."""
    if not launcher or "LOCAL_RANK" in os.environ:
        return None
    # torchrun is `python -m torch.distributed.run`: the same interpreter, not whatever is on PATH
    return [sys.executable, "-m", "torch.distributed.run", *launcher[1:], *argv]


def enabled() -> bool:
    return world_size() > 1


def is_main() -> bool:
    """Rank 0, or a process not started by torchrun: the one that logs and writes."""
    return rank() == 0


@cache
def init() -> None:
    """Join the process group once per process."""
    import torch.distributed as dist

    if not enabled() or dist.is_initialized():
        return
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank())
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank()))
    else:
        dist.init_process_group("gloo")


class _LossModule(torch.nn.Module):
    """DDP prepares its gradient hooks in `forward`; the loss function calls the model's own
    methods (forward_lm, forward_cls), so the module DDP wraps runs the whole loss."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[[Any], torch.Tensor]):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, batch):
        return self.loss_fn(batch)


def wrap(model: torch.nn.Module, loss_fn: Callable[[Any], torch.Tensor], device: torch.device):
    """The DDP module whose call is `loss_fn(batch)`. find_unused_parameters: the model carries
    both heads and a run trains one of them."""
    from torch.nn.parallel import DistributedDataParallel

    init()
    device_ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(
        _LossModule(model, loss_fn), device_ids=device_ids, find_unused_parameters=True
    )


def no_sync(ddp, sync: bool):
    """DDP's own switch: an accumulation micro-step keeps its gradients local (no all-reduce)."""
    return contextlib.nullcontext() if sync else ddp.no_sync()


def shard(batch: Any) -> tuple[Any, float]:
    """This rank's contiguous slice of a global batch (tensors, or a tuple/list/dict of them) and the
    weight (rows here / mean rows per rank) that makes the ranks' averaged gradient the whole batch's."""
    rows = _rows(batch)
    mine = torch.tensor_split(torch.arange(rows), world_size())[rank()]
    start = int(mine[0]) if len(mine) else rows
    return _slice(batch, start, start + len(mine)), len(mine) * world_size() / rows


def _rows(batch) -> int:
    if isinstance(batch, torch.Tensor):
        return batch.shape[0]
    values = batch.values() if isinstance(batch, dict) else batch
    return _rows(next(iter(values)))


def _slice(batch, start: int, stop: int):
    if isinstance(batch, torch.Tensor):
        return batch[start:stop]
    if isinstance(batch, dict):
        return {k: _slice(v, start, stop) for k, v in batch.items()}
    return type(batch)(_slice(v, start, stop) for v in batch)


def mean(value: torch.Tensor) -> torch.Tensor:
    """The mean over ranks of a per-rank scalar."""
    if not enabled():
        return value
    import torch.distributed as dist

    value = value.detach().clone()
    dist.all_reduce(value)
    return value / world_size()


def sum_counts(counts: dict[str, float]) -> dict[str, float]:
    """Running sums (loss, correct, count) added up over the ranks."""

    if not enabled():
        return counts
    import torch.distributed as dist

    keys = sorted(counts)
    device = torch.device("cuda", local_rank()) if torch.cuda.is_available() else torch.device("cpu")
    values = torch.tensor([float(counts[k]) for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(values)
    return dict(zip(keys, values.tolist(), strict=True))
