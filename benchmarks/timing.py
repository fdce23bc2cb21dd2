"""What the throughput benchmarks share: alternating timed rounds, the measured matmul peak, MFU.

Every variant of a benchmark runs in one process, round after round in turn, so a busy
machine slows them alike; a figure is the median over rounds, a speedup the ratio of medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds(step: Callable[[], None], calls: int, device) -> float:
    """Wall time of `calls` calls of `step`, the device synchronised on both ends."""
    sync(device)
    started = time.perf_counter()
    for _ in range(calls):
        step()
    sync(device)
    return time.perf_counter() - started


def timed_rounds(
    steps: dict[str, Callable[[], None]], units_per_step: dict[str, int], n: int, rounds: int, device
) -> dict[str, list[float]]:
    """units/s of each step function per round (`n` calls a round), rounds interleaved."""
    rates: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            rates[name].append(n * units_per_step[name] / seconds(step, n, device))
    return rates


def warm_up(steps: dict[str, Callable[[], None]], calls: int, device) -> dict[str, float]:
    """Run each step `calls` times (compilation, allocator, kernel choice); seconds per variant."""
    spent = {}
    for name, step in steps.items():
        spent[name] = seconds(step, calls, device)
        print(f"warm-up {name}: {spent[name]:.1f} s", file=sys.stderr, flush=True)
    return spent


def matmul_peak(device: torch.device, dtype: torch.dtype, size: int = 2048) -> float:
    """GFLOP/s of a square matmul in `dtype`: what this machine's matmuls reach (median of 3)."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    calls = 200 if device.type == "cuda" else 4
    for _ in range(2):
        torch.mm(a, b)
    rates = []
    for _ in range(3):
        sync(device)
        started = time.perf_counter()
        for _ in range(calls):
            torch.mm(a, b)
        sync(device)
        rates.append(2 * size**3 * calls / (time.perf_counter() - started) / 1e9)
    return statistics.median(rates)


def device_name(device: torch.device) -> str:
    """What the figures were measured on: the GPU's name, or the CPU's model and bf16 units
    (an AMX CPU and an AVX-512 BF16 one give very different bf16 figures)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from tinytf.cpu import cpu_kind

    return cpu_kind()


def vocabulary(params) -> int:
    """The trained tokenizer's vocabulary size where one exists, else params' target size."""
    path = Path("data/tokenizer.json")
    if not path.exists():
        return params.tokenize.vocab_size
    from tinytf.data.tokenizer import load_tokenizer

    return load_tokenizer(path).get_vocab_size()


def median(values: list[float]) -> float:
    return statistics.median(values)


def benchmark_parser(doc: str, steps: int, steps_help: str) -> argparse.ArgumentParser:
    """The options every throughput benchmark takes: its params file, timed calls, rounds."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--steps", type=int, default=steps, help=steps_help)
    parser.add_argument("--rounds", type=int, default=3)
    return parser


def train_flops_per_token(model, head: torch.nn.Module, length: float) -> float:
    """Training FLOPs of one token of a TinyTransformer: 6 x the matmul weights it passes through
    (the body without its token and position tables, then `head`: the LM head or the classifier's)
    plus the attention matmuls over `length` positions, 12 x layers x width x length."""
    c = model.config
    tables = model.base.token_embedding.weight.numel()
    if c.pos_encoding == "learned":
        tables += model.base.pos_emb.weight.numel()
    weights = (
        sum(p.numel() for p in model.base.parameters()) - tables + sum(p.numel() for p in head.parameters())
    )
    return training_flops(weights, c, length)


def training_flops(weights: int, config, length: float) -> float:
    """Training FLOPs of one token that passes through `weights` matmul weights and attends over
    `length` positions in `config`'s layers: 6 x weights + 12 x layers x width x length."""
    return 6 * weights + 12 * config.n_layer * config.d_model * length
