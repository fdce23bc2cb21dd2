"""Where and how a model runs: device, precision, compilation, seeding and RNG snapshots.

`auto` choices are decided once per run and reported, so a log always says what ran: CUDA
when present; bf16 autocast where the device computes bf16 natively (a GPU that supports it,
a CPU with AVX-512 BF16 or AMX); `torch.compile` of the whole training step for runs long
enough to repay the compile time, where a compiler is available. Weights, optimizer state
and the loss stay fp32.
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

# Below this many optimizer steps compiling does not repay its time, per device type. Pretraining
# on a CPU: the compile's cost over what it saves a step (benchmarks/pretrain_throughput.py, with
# and without --compile) puts the break-even well under 200 steps. CUDA: not measured here.
COMPILE_MIN_STEPS = {"cpu": 200, "cuda": 400}
# The classifier (tinytf.train.classify): never under `auto` on a CPU, where its small batches of
# varying length do not repay the compile (benchmarks/classifier_throughput.py); on CUDA an eager
# epoch is bound by kernel launches, and one compile (dynamic shapes) serves every run of a
# process, so a 319-step run compiles (benchmarks/results/classifier_epoch.jsonl).
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
        """Texts per batch in the classifiers' validation and test passes. On a CPU a batch of 64
        keeps its activations in cache: a validation pass ran 0.83 s there against 1.14 s at 256
        (benchmarks/finetune_breakdown.py --eval-batch); a GPU wants the larger batch."""
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
    """Native bf16 matmuls (AVX-512 BF16 or AMX): there bf16 autocast roughly doubles matmul speed;
    elsewhere it only adds casts."""
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
    """Decide the runtime from params. `auto` depends only on what the machine has (a GPU, bf16
    instructions, a compiler) and on the planned number of steps against `min_steps` of the
    device's type (None: never), never on a timing, so the same machine always makes the same
    choice; stages record it in their outputs."""
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
    """`torch.compile(fn)` when the runtime says so. A compile that fails (no working compiler,
    an unsupported platform) fails at the first call: then that call, and every later one, runs
    eagerly after one warning, and `runtime.compile` records that it is off."""
    if not runtime.compile:
        return fn
    # inductor's CPU kernels accumulate scatters (the embedding's backward) with atomic adds
    # across threads, so two runs of the same params differed in the sixth digit of the loss;
    # deterministic algorithms make it use ordered kernels, and reruns are identical again
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
