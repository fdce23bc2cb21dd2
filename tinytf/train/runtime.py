"""Where and how a model runs: device, precision, compilation, seeding and RNG snapshots.

`auto` choices are decided once per run and reported, so a log always says what ran:
CUDA when present (bf16 where the GPU supports it); on CPU, bf16 autocast only where the
CPU has native bf16 instructions *and* a short measurement shows it is faster for this
model; `torch.compile` on CUDA for runs long enough to repay the compile time.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tinytf.errors import ParamsError

COMPILE_MIN_STEPS = 400  # below this the compile time is not repaid


@dataclass
class Runtime:
    device: torch.device
    precision: str  # "fp32" | "bf16"
    compile: bool

    def autocast(self):
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def describe(self) -> str:
        return f"device={self.device} precision={self.precision} compile={'on' if self.compile else 'off'}"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ParamsError(f"device '{name}' requested but CUDA is not available on this machine")
        return torch.device(name)
    raise ParamsError(f"device '{name}': expected auto, cpu, cuda or cuda:N")


def cpu_has_bf16() -> bool:
    capability = torch.backends.cpu.get_cpu_capability().lower()
    if "amx" in capability:
        return True
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def bf16_is_faster(step: Callable[[], None], device: torch.device, repeats: int = 3) -> bool:
    """Time `repeats` calls of `step` in fp32 and in bf16 autocast; True if bf16 wins by 5 %."""

    def timed(precision: str) -> float:
        runtime = Runtime(device, precision, False)
        with runtime.autocast():
            step()  # warm-up (allocations, kernel selection)
            started = time.perf_counter()
            for _ in range(repeats):
                step()
        return time.perf_counter() - started

    return timed("bf16") < 0.95 * timed("fp32")


def _cached_choice(key: str, decide: Callable[[], bool]) -> bool:
    """A measured yes/no, remembered per machine and model shape in the tinytf cache.

    Remembering matters for reproducibility: a timing that flips between two runs (a busy
    machine) would otherwise change the precision and with it every metric of the run.
    """
    from tinytf.data.sources import cache_dir

    path = cache_dir() / "runtime.json"
    try:
        known = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = bool(decide())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(known, indent=1, sort_keys=True))
        except OSError:
            pass
    return known[key]


def resolve_runtime(
    device: str,
    precision: str,
    compile_mode: str | bool,
    planned_steps: int,
    probe_step: Callable[[], None] | None = None,
    probe_key: str = "",
) -> Runtime:
    """Decide the runtime from params. On CPU, `precision: auto` measures: `probe_step` (a
    forward+backward without an optimizer update) runs in fp32 and in bf16, once per machine
    and `probe_key` (the model shape); the answer is cached, see `_cached_choice`."""
    dev = resolve_device(device)
    if precision == "auto":
        if dev.type == "cuda":
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        elif cpu_has_bf16() and probe_step is not None:
            key = f"bf16-faster|{platform.processor() or platform.machine()}|{os.cpu_count()}|{probe_key}"
            precision = "bf16" if _cached_choice(key, lambda: bf16_is_faster(probe_step, dev)) else "fp32"
        else:
            precision = "fp32"
    if compile_mode == "auto":
        # on CPU, benchmarks/pretrain_throughput.py measured no gain from compiling this model
        # (bf16 eager and bf16 + compile both ~1.2x the seed lab's speed), only the compile time
        use_compile = dev.type == "cuda" and planned_steps >= COMPILE_MIN_STEPS
    else:
        use_compile = bool(compile_mode)
    return Runtime(dev, precision, use_compile)


def maybe_compile(fn: Callable, runtime: Runtime) -> Callable:
    if not runtime.compile:
        return fn
    try:
        return torch.compile(fn)
    except Exception as exc:  # no compiler toolchain, unsupported platform
        print(f"warning: torch.compile unavailable ({exc}); running eagerly", file=sys.stderr)
        runtime.compile = False
        return fn


def rng_state(generator: torch.Generator | None = None) -> dict:
    state = {
        "python": random.getstate(),
        # as a tensor: checkpoints load with weights_only=True, which refuses numpy arrays
        "numpy": _numpy_state_to_tensors(np.random.get_state()),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if generator is not None:
        state["generator"] = generator.get_state()
    return state


def _numpy_state_to_tensors(state: tuple) -> tuple:
    name, keys, pos, has_gauss, cached = state
    return (name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached))


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None and "generator" in state:
        generator.set_state(state["generator"])
