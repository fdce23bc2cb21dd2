"""tinytf.train.workers: every run on one thread, in worker processes or in this one, results in
the items' order, the longest started first, and a clear error for a bad TINYTF_WORKERS."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.helpers.paths import REPO
from tinytf.errors import ParamsError, TinyTFError
from tinytf.train import workers
from tinytf.train.workers import Workers, worker_count

CPU = torch.device("cpu")


def setup(offset: int) -> dict:
    return {"offset": offset, "pid": os.getpid()}


def threads_and_value(state: dict, item: int) -> tuple[int, int, int, float]:
    assert state["pid"] == os.getpid()  # each process built its own state
    return torch.get_num_threads(), item + state["offset"], os.getpid(), time.monotonic()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_run_gets_one_thread_and_results_keep_the_items_order(workers, monkeypatch):
    monkeypatch.setenv("TINYTF_WORKERS", workers)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with Workers(CPU, setup, (100,), "test runs") as pool:
            out = pool.map(threads_and_value, [3, 1, 2], cost=lambda item: item)
        assert torch.get_num_threads() == 2  # the stage's own thread count comes back
    finally:
        torch.set_num_threads(before)
    assert [(threads, value) for threads, value, *_ in out] == [(1, 103), (1, 101), (1, 102)]
    pids = {pid for _, _, pid, _ in out}
    assert (pids == {os.getpid()}) == (workers == "1")  # two workers: none of it ran here
    if workers == "1":  # in one process the order shows: the costliest item (3) first, then 2, then 1
        assert out[0][3] < out[2][3] < out[1][3]


def test_worker_count_reads_the_environment(monkeypatch):
    monkeypatch.setenv("TINYTF_WORKERS", "3")
    assert worker_count(CPU) == 3
    monkeypatch.setenv("TINYTF_WORKERS", "auto")
    cores = workers.usable_cores()
    monkeypatch.setattr(workers, "available_memory", lambda: 2**40)
    assert worker_count(CPU) == min(cores, 2**40 // workers.WORKER_BYTES)
    monkeypatch.setattr(workers, "available_memory", lambda: 2 * 2**30)  # room for one 1.5 GB worker
    assert worker_count(CPU) == 1
    monkeypatch.setattr(workers, "available_memory", lambda: None)  # no /proc/meminfo: the cores decide
    assert worker_count(CPU) == cores
    monkeypatch.undo()
    assert workers.available_memory() > 0  # this Linux says
    monkeypatch.setenv("TINYTF_WORKERS", "auto")
    assert worker_count(torch.device("cuda")) == 1  # one GPU: its runs go one at a time
    monkeypatch.setenv("TINYTF_WORKERS", "3")
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun every rank takes each run together
    assert worker_count(CPU) == 1
    monkeypatch.delenv("WORLD_SIZE")
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("TINYTF_WORKERS", bad)
        with pytest.raises(ParamsError, match=rf"TINYTF_WORKERS='{bad}': expected 'auto' or a whole number"):
            worker_count(CPU)


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie (an orphan waits to be reaped by whoever adopted it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def sleepy(state: dict, item: int) -> int:
    """A run that takes a minute, leaving a file named by its worker's pid once it has started."""
    (Path(os.environ["MARKERS"]) / str(os.getpid())).touch()
    time.sleep(60)
    return item


INTERRUPTED = """
import sys, torch
from tests.unit.train.test_workers import setup, sleepy
from tinytf.train.loop import TrainingInterrupted
from tinytf.train.workers import Workers
try:
    with Workers(torch.device("cpu"), setup, (0,), "test runs") as pool:
        pool.map(sleepy, [1, 2], cost=lambda item: item)
except TrainingInterrupted as exc:
    print(exc)
    sys.exit(exc.exit_code)
"""


def start_stage(script: str, markers: Path, **popen) -> tuple[subprocess.Popen, list[int]]:
    """A stage process running `script` with two workers, and their pids once both have started."""
    env = {**os.environ, "MARKERS": str(markers), "TINYTF_WORKERS": "2", "PYTHONPATH": str(REPO)}
    stage = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, env=env, **popen)
    deadline = time.monotonic() + 120
    while len(list(markers.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [int(p.name) for p in markers.iterdir()]
    assert len(workers) == 2, "the workers did not start"
    return stage, workers


def still_alive(workers: list[int], seconds: float = 20) -> list[int]:
    """The workers still running after up to `seconds` (a worker checks its parent once a second)."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [pid for pid in workers if alive(pid)]


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("started", ["from a terminal", "with SIGINT ignored"])
def test_ctrl_c_stops_the_workers_mid_run_with_one_message(tmp_path, started):
    """Ctrl-C reaches the stage's process (the workers left the terminal's process group): it
    stops the workers in the middle of their runs and says what happened, instead of waiting.
    A stage started with SIGINT ignored (a job a non-interactive shell put in the background, as
    a CI runner may) stops on it too, as the training loop does: that case failed once in a
    fresh-clone CI run started in the background."""
    preexec = ignore_sigint if started == "with SIGINT ignored" else None
    stage, workers = start_stage(
        INTERRUPTED, tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec
    )
    stage.send_signal(signal.SIGINT)
    out, err = stage.communicate(timeout=30)  # far less than the runs' minute
    assert stage.returncode == 130, err
    assert "test runs: interrupted with 0 of 2 runs finished, their results discarded" in out
    assert not still_alive(workers)


def failing(state: dict, item: int) -> int:
    """Item 0 fails at once; the others would take a minute."""
    if item == 0:
        raise TinyTFError("run 0: loss is nan at step 3; stopped")
    time.sleep(60)
    return item


def dying(state: dict, item: int) -> int:
    os._exit(9)  # as the kernel's OOM killer would end it


def test_a_failed_run_stops_the_others_and_a_dead_worker_is_named(monkeypatch):
    monkeypatch.setenv("TINYTF_WORKERS", "2")
    started = time.monotonic()
    with Workers(CPU, setup, (0,), "test runs") as pool, pytest.raises(TinyTFError, match="loss is nan"):
        pool.map(failing, [0, 1, 2], cost=lambda item: -item)  # 0 starts first, 1 beside it
    assert time.monotonic() - started < 40  # run 1's minute was not waited for
    with Workers(CPU, setup, (0,), "test runs") as pool:
        with pytest.raises(
            TinyTFError, match=r"test runs: a worker process died .*TINYTF_WORKERS=1 runs them"
        ):
            pool.map(dying, [0, 1], cost=lambda item: item)


KILLED = """
import torch
from tests.unit.train.test_workers import setup, sleepy
from tinytf.train.workers import Workers
with Workers(torch.device("cpu"), setup, (0,), "test runs") as pool:
    pool.map(sleepy, [1, 2], cost=lambda item: item)
"""


def test_workers_end_with_their_stage_however_it_dies(tmp_path):
    """The workers are out of the stage's process group, so a kill of that group misses them:
    each ends itself once its stage process is gone, instead of running on for minutes."""
    stage, workers = start_stage(KILLED, tmp_path)
    stage.kill()
    stage.wait(timeout=30)
    assert not still_alive(workers)
