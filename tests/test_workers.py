"""tinytf.train.workers: every run on one thread, in worker processes or in this one, results in
the items' order, the longest started first, and a clear error for a bad TINYTF_WORKERS."""

import os

import pytest
import torch

from tinytf.errors import ParamsError
from tinytf.train.workers import Workers, worker_count

CPU = torch.device("cpu")


def setup(offset: int) -> dict:
    return {"offset": offset, "pid": os.getpid()}


def threads_and_value(state: dict, item: int) -> tuple[int, int, bool]:
    return torch.get_num_threads(), item + state["offset"], state["pid"] == os.getpid()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_every_run_gets_one_thread_and_results_keep_the_items_order(workers, monkeypatch):
    monkeypatch.setenv("TINYTF_WORKERS", workers)
    torch.set_num_threads(2)
    with Workers(CPU, setup, (100,), "test runs") as pool:
        out = pool.map(threads_and_value, [3, 1, 2], cost=lambda item: item)
    assert [(threads, value) for threads, value, _ in out] == [(1, 103), (1, 101), (1, 102)]
    assert all(built_here for *_, built_here in out)  # each process built its own state
    assert torch.get_num_threads() == 2  # the stage's own thread count comes back


def test_worker_count_reads_the_environment(monkeypatch):
    monkeypatch.setenv("TINYTF_WORKERS", "3")
    assert worker_count(CPU) == 3
    monkeypatch.setenv("TINYTF_WORKERS", "auto")
    assert worker_count(CPU) == len(os.sched_getaffinity(0))
    assert worker_count(torch.device("cuda")) == 1  # one GPU: its runs go one at a time
    monkeypatch.setenv("TINYTF_WORKERS", "3")
    monkeypatch.setenv("WORLD_SIZE", "2")  # under torchrun every rank takes each run together
    assert worker_count(CPU) == 1
    monkeypatch.delenv("WORLD_SIZE")
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("TINYTF_WORKERS", bad)
        with pytest.raises(ParamsError, match=rf"TINYTF_WORKERS='{bad}': expected 'auto' or a whole number"):
            worker_count(CPU)
