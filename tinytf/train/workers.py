"""Independent runs side by side: on a CPU, one worker process per core and one thread per run.

Processes, as a small model's step spreads poorly over threads (benchmarks/classifier_throughput.py)
and every run draws its dropout from torch's one global generator. One thread each, as a run's
numbers depend on its thread count (reductions split differently): results are the same on 2 cores
or 32. `TINYTF_WORKERS` (default `auto`: the usable cores, fewer where memory would not hold them;
1 on CUDA and under torchrun) changes how long a stage takes, never what it computes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import torch

from tinytf.errors import ParamsError, TinyTFError
from tinytf.system import collector
from tinytf.system.allocator import keep_freed_memory
from tinytf.train import distributed
from tinytf.train.loop import TrainingInterrupted
from tinytf.train.progress import RunProgress

ENV = "TINYTF_WORKERS"

# `auto` starts no more workers than the available memory holds at 1.5 GB each (one held about 1 GB)
WORKER_BYTES = 3 * 2**29

_STATE: Any = None  # in a worker: what `setup` built once, handed to every task


def worker_count(device: torch.device) -> int:
    """`TINYTF_WORKERS`, or on `auto` the cores this process may use. Under torchrun, 1: each run
    is already spread over the ranks (DDP), which must take it together."""
    value = os.environ.get(ENV, "auto").strip()
    if value != "auto" and (not value.isdigit() or int(value) < 1):
        raise ParamsError(f"{ENV}={value!r}: expected 'auto' or a whole number of worker processes >= 1")
    if distributed.enabled():
        return 1
    if value != "auto":
        return int(value)
    if device.type != "cpu":
        return 1
    cores, memory = usable_cores(), available_memory()
    return max(1, min(cores, memory // WORKER_BYTES)) if memory else cores


def usable_cores() -> int:
    """The cores this process may run on, within a container's CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cgroup("cpu.max")  # "<quota> <period>" in microseconds, or "max <period>"
    if quota and quota[0].isdigit():
        cores = min(cores, max(1, int(quota[0]) // int(quota[1])))
    return cores


def _cgroup(name: str) -> list[str] | None:
    """This process's cgroup v2 limit file's fields, or None outside a container."""
    try:
        return Path("/sys/fs/cgroup", name).read_text().split()
    except OSError:
        return None


def available_memory() -> int | None:
    """Bytes new processes can have: MemAvailable, or a container's memory limit when lower;
    None where the system does not say."""
    found = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    limit = _cgroup("memory.max")
    if limit and limit[0].isdigit():
        found = min(found or int(limit[0]), int(limit[0]))
    return found


@contextlib.contextmanager
def one_thread(device: torch.device) -> Iterator[None]:
    """A CPU run on one thread, as in a worker; the thread count is restored afterwards."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _start(setup: Callable[..., Any], args: tuple) -> None:
    global _STATE
    if hasattr(os, "setpgrp"):
        # out of the terminal's process group: Ctrl-C reaches the stage alone, which stops the workers
        os.setpgrp()
        # ...so a worker whose stage died (SIGTERM, SIGKILL) would finish its queue: it watches instead
        threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True).start()
    torch.set_num_threads(1)
    keep_freed_memory()  # a spawned process starts with the C library's own settings
    # spawn imported the stage's script here, and its `import common` paused the collector
    collector.resume()
    _STATE = setup(*args)


def _exit_with(parent: int) -> None:
    """End this worker within a second of its stage process ending (it is then reparented)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _task(work: Callable[[Any, Any], Any], item: Any) -> Any:
    return work(_STATE, item)


@contextlib.contextmanager
def _ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt while the workers run, even where the stage was started with
    SIGINT ignored (a background job of a non-interactive shell)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Workers:
    """`map(work, items)`: `work(state, item)` for every item, in worker processes each holding
    `state = setup(*args)`; in the items' order, the longest (by `cost`) started first."""

    def __init__(self, device: torch.device, setup: Callable[..., Any], args: tuple, desc: str):
        self.device, self.setup, self.args, self.desc = device, setup, args, desc
        self.count = worker_count(device)
        self._pool: ProcessPoolExecutor | None = None
        self._local: Any = None

    def map(
        self,
        work: Callable[[Any, Any], Any],
        items: Sequence,
        cost: Callable[[Any], float],
        done: Callable[[Any, Any], None] | None = None,
        progress: RunProgress | None = None,
    ) -> list:
        """`done(item, result)` as each result comes back. `progress`: the stage's count of runs
        over several calls, else one of its own."""
        done = done or (lambda item, result: None)
        if not items:
            return []
        order = sorted(range(len(items)), key=lambda i: -cost(items[i]))
        bar = progress or RunProgress(len(items), self.desc)
        finished = 0
        results: list = [None] * len(items)
        try:
            if self.count == 1 or len(items) == 1:
                if self._local is None:
                    self._local = self.setup(*self.args)
                with one_thread(self.device):
                    for i in order:
                        results[i] = work(self._local, items[i])
                        done(items[i], results[i])
                        finished += 1
                        bar.update(1)
                return results
            with _ctrl_c_raises():
                try:
                    pool = self._executor()
                    futures = {pool.submit(_task, work, items[i]): i for i in order}
                    for future in as_completed(futures):
                        i = futures[future]
                        results[i] = future.result()
                        done(items[i], results[i])
                        finished += 1
                        bar.update(1)
                except BaseException as exc:  # a run failed, or Ctrl-C: the other runs are not waited for
                    self._terminate()
                    if isinstance(exc, KeyboardInterrupt):
                        raise TrainingInterrupted(
                            f"{self.desc}: interrupted with {finished} of {len(items)} runs finished, their "
                            f"results discarded. Run again to start over."
                        ) from None
                    if isinstance(exc, BrokenProcessPool):
                        raise TinyTFError(
                            f"{self.desc}: a worker process died ({exc}); out of memory? {ENV}=1 runs them "
                            f"one at a time in this process"
                        ) from exc
                    raise
            return results
        finally:
            if progress is None:
                bar.close()

    def _terminate(self) -> None:
        """Stop the workers mid-run: the executor can only wait for running tasks to end."""
        if self._pool is not None:
            for process in list(self._pool._processes.values()):
                process.terminate()
        self.close()

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, not fork: a fork of a process whose OpenMP threads have run can hang
            self._pool = ProcessPoolExecutor(
                self.count, multiprocessing.get_context("spawn"), _start, (self.setup, self.args)
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
