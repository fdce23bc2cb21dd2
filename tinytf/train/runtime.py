"""Where and how a model runs: device, precision, compilation, seeding and RNG snapshots.

`auto` choices are decided once per run and reported: CUDA when present; bf16 autocast where the
device computes bf16 natively; `torch.compile` for runs long enough to repay it, where a compiler is
available. Weights, optimizer state and the loss stay fp32.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tinytf.errors import ParamsError
from tinytf.system import cpu

# Below this many optimizer steps compiling does not repay its time, per device type
# (benchmarks/pretrain_throughput.py, with and without --compile).
COMPILE_MIN_STEPS = {"cpu": 200, "cuda": 400}
# The classifier: never on a CPU, where its small batches of varying length do not repay it
# (benchmarks/classifier_throughput.py); on CUDA an eager epoch is bound by kernel launches.
CLASSIFIER_COMPILE_MIN_STEPS = {"cpu": None, "cuda": 100}


@dataclass
class Runtime:
    device: torch.device
    precision: str  # "fp32" | "bf16"
    compile: bool

    def autocast(self):
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @property
    def inference_batch(self) -> int:
        """Texts per batch in the classifiers' validation and test passes: on a CPU 64 keeps the
        activations in cache (benchmarks/finetune_breakdown.py --eval-batch)."""
        return 64 if self.device.type == "cpu" else 256

    def describe(self) -> str:
        return f"device={self.device} precision={self.precision} compile={'on' if self.compile else 'off'}"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    if name == "auto":  # under torchrun, each process takes the GPU of its local rank
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        return torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ParamsError(f"device '{name}' requested but CUDA is not available on this machine")
        return torch.device(name)
    raise ParamsError(f"device '{name}': expected auto, cpu, cuda or cuda:N")


def cpu_has_bf16() -> bool:
    """Native bf16 matmuls (AVX-512 BF16 or AMX): elsewhere bf16 autocast only adds casts."""
    return "amx" in torch.backends.cpu.get_cpu_capability().lower() or bool(cpu.bf16_units())


def compiler_available(device: torch.device) -> bool:
    """torch.compile's CPU backend writes C++ and needs a compiler; CUDA's uses Triton."""
    if device.type == "cuda":
        return True
    return any(shutil.which(name) for name in (os.environ.get("CXX", "g++"), "g++", "clang++", "c++"))


def resolve_runtime(
    device: str,
    precision: str,
    compile_mode: str | bool,
    planned_steps: int,
    min_steps: dict[str, int | None] = COMPILE_MIN_STEPS,
) -> Runtime:
    """`auto` depends only on what the machine has and on the planned steps against `min_steps` of
    the device's type (None: never), never on a timing, so a machine always makes the same choice."""
    dev = resolve_device(device)
    if precision == "auto":
        native = torch.cuda.is_bf16_supported() if dev.type == "cuda" else cpu_has_bf16()
        precision = "bf16" if native else "fp32"
    if compile_mode == "auto":
        threshold = min_steps.get(dev.type)
        use_compile = threshold is not None and planned_steps >= threshold and compiler_available(dev)
    else:
        use_compile = bool(compile_mode)
    return Runtime(dev, precision, use_compile)


def maybe_compile(fn: Callable, runtime: Runtime, **options) -> Callable:
    """`torch.compile(fn)` when the runtime says so. A compile that fails does so at the first call:
    then every call runs eagerly after one warning, and `runtime.compile` records that it is off."""
    if not runtime.compile:
        return fn
    # inductor's CPU kernels accumulate scatters (the embedding's backward) with atomic adds across
    # threads; deterministic algorithms make it use ordered kernels, so reruns are identical
    torch.use_deterministic_algorithms(True, warn_only=True)
    compiled = torch.compile(fn, **options)
    state = {"failed": False}

    def call(*args, **kwargs):
        if not state["failed"]:
            try:
                return compiled(*args, **kwargs)
            except Exception as exc:  # inductor's errors have no common base class to catch
                if not _is_compile_failure(exc):
                    raise
                state["failed"], runtime.compile = True, False
                print(
                    f"warning: torch.compile failed ({type(exc).__name__}); running eagerly", file=sys.stderr
                )
        return fn(*args, **kwargs)

    return call


def _is_compile_failure(exc: Exception) -> bool:
    from torch._dynamo.exc import BackendCompilerFailed, InternalTorchDynamoError, Unsupported

    return isinstance(exc, (BackendCompilerFailed, InternalTorchDynamoError, Unsupported, OSError))


def rng_state() -> dict:
    state = {
        "python": random.getstate(),
        # as a tensor: checkpoints load with weights_only=True, which refuses numpy arrays
        "numpy": _numpy_state_to_tensors(np.random.get_state()),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _numpy_state_to_tensors(state: tuple) -> tuple:
    name, keys, pos, has_gauss, cached = state
    return (name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached))


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
