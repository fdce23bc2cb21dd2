"""What the benchmarks share: alternating timed rounds, the measured matmul peak, MFU, and the
record of each run in benchmarks/results/<script>.jsonl.

Every variant of a benchmark runs in one process, round after round in turn, so a busy
machine slows them alike; a figure is the median over rounds, a speedup the ratio of medians.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
# where each run's record goes; tests point it at a temporary folder
RESULTS_ENV = "TINYTF_BENCH_RESULTS"


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
    from tinytf.system.cpu import cpu_kind

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


def results_dir() -> Path:
    """$TINYTF_BENCH_RESULTS, else benchmarks/results beside this file (whatever the cwd)."""
    return Path(os.environ.get(RESULTS_ENV) or Path(__file__).resolve().parent / "results")


def record(
    script: str,
    headline: str,
    figures: dict,
    args: argparse.Namespace,
    device: torch.device | str | None = None,
) -> Path:
    """Append one run to results_dir()/<script>.jsonl: its headline line, its figures, the
    machine, versions, commit, UTC date and command-line arguments. `device` is where the sides
    ran (a CUDA device's name is recorded); None for a script that runs no model."""
    device = torch.device(device) if isinstance(device, str) else device
    entry = {
        "script": script,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "headline": headline,
        "figures": figures,
        "machine": machine(device),
        "torch": torch.__version__,
        "python": platform.python_version(),
        **git_commit(),
        "args": vars(args),
    }
    path = results_dir() / f"{script}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, default=_plain) + "\n")
    print(f"recorded in {path}", file=sys.stderr)
    return path


def _plain(value):
    """What json cannot write itself: numpy and torch scalars as numbers, the rest (Paths) as text."""
    return value.item() if hasattr(value, "item") else str(value)


def machine(device: torch.device | None) -> dict:
    """The CPU's model, its cores and bf16 units (they decide bf16 figures on a CPU), and the
    GPU's name where the run used one."""
    from tinytf.system.cpu import bf16_units, cpu_model
    from tinytf.train.workers import usable_cores

    gpu = torch.cuda.get_device_name(device) if device is not None and device.type == "cuda" else None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "bf16_units": bf16_units(),
        "gpu": gpu,
    }


def git_commit() -> dict:
    """{'commit': short hash or 'unknown' outside git, 'dirty': uncommitted changes to tracked
    files outside benchmarks/results (None when unknown)}."""

    def git(*command: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(ROOT), *command], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit is None:
        return {"commit": "unknown", "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results")
    return {"commit": commit, "dirty": None if status is None else bool(status)}
