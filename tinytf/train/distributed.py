"""Data-parallel training under `torchrun` (PyTorch DDP); a plain `python` run is one process.

`torchrun --nproc_per_node=N stages/pretrain.py ...` starts N copies of a stage. Each reads
RANK / WORLD_SIZE / LOCAL_RANK from the environment torchrun sets, joins the process group
(NCCL on GPUs, gloo on CPUs) and takes the GPU of its local rank. Every process draws the same
global batch and trains on its slice of it; DDP averages the gradients, so N processes with
the same params train the same model as one process would (the same loss curve up to float
summation order; with dropout each process draws its own masks). Only rank 0 logs, shows a
progress bar and writes files: `tinytf.io` skips the final rename on the other ranks, and
`tracking.stage_run` gives them a disabled tracker. Evaluation runs on every rank (the same
numbers on each), so the loop's control flow never differs between ranks.
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
    """The argument list that starts this script again under `launcher` (a checked list, e.g.
    [torchrun, --nproc_per_node=8]; tinytf.params.launcher), or None when there is no launcher or
    this process was already started by torchrun. An argument list, never a shell line, so no
    value of params.yaml or the command line is read as code."""
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
    """Join the process group once per process (NCCL where this rank has a GPU, else gloo)."""
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
    """The DDP module whose call is `loss_fn(batch)` with gradients averaged over the ranks.
    find_unused_parameters: the model carries both heads and a run trains one of them."""
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
    """This rank's contiguous slice of a global batch (tensors, or a tuple/list/dict of them,
    batch first) and the weight that makes the ranks' averaged gradient equal the whole batch's:
    rows here / mean rows per rank. A batch with fewer rows than ranks leaves some ranks an
    empty slice of weight 0 (their gradients are zeros)."""
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
    """The mean over ranks of a per-rank scalar (the step's loss, already weighted)."""
    if not enabled():
        return value
    import torch.distributed as dist

    value = value.detach().clone()
    dist.all_reduce(value)
    return value / world_size()


def sum_counts(counts: dict[str, float]) -> dict[str, float]:
    """Running sums (loss, correct, count) added up over the ranks, for an epoch's train figures."""
    if not enabled():
        return counts
    import torch.distributed as dist

    keys = sorted(counts)
    device = torch.device("cuda", local_rank()) if torch.cuda.is_available() else torch.device("cpu")
    values = torch.tensor([float(counts[k]) for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(values)
    return dict(zip(keys, values.tolist(), strict=True))
