"""Python's cyclic garbage collector kept out of a stage process's start and end.

A stage's imports (torch, pandas, MLflow, torch._dynamo) allocate millions of objects in bursts,
none of them garbage, and the collector walks the growing heap again and again; at exit it walks
it once more while the modules are torn down (`python benchmarks/stage_process.py` measures both).

So a stage pauses the collector before its imports (the top of stages/common.py) and `resume`
freezes what they built (`gc.freeze`: moved to a generation the collector never walks; freed as
usual once nothing refers to it) and turns the collector back on before the stage's own work,
whose garbage is collected as it always was; `freeze_for_exit` freezes the heap again once the
stage is done. `paused` does the same around MLflow's import and store, which live as long as
the process. `python benchmarks/stage_process.py` measures a stage process's start and end both
ways. When garbage is collected changes no result.

`TINYTF_GC=default` (against `pause`, the default) leaves the collector as Python set it.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

from tinytf.errors import ParamsError

ENV = "TINYTF_GC"

# set by `pause_for_imports`: only a stage process (and its workers, which import the stage's
# script) opts in; a test or notebook importing tinytf keeps Python's collector as it is
_pausing = False


def _setting() -> str:
    value = os.environ.get(ENV, "pause").strip()
    if value not in ("pause", "default"):
        raise ParamsError(f"{ENV}={value!r}: expected 'pause' (the default) or 'default' (Python's own)")
    return value


def pause_for_imports() -> None:
    """The collector off until `resume`. A bad TINYTF_GC pauses nothing here: `resume`, called
    where the stage reports errors, names it."""
    global _pausing
    if os.environ.get(ENV, "pause").strip() == "pause":
        _pausing = True
        gc.disable()


def resume() -> None:
    """Everything built so far frozen, and the collector on."""
    _setting()
    if _pausing:
        gc.freeze()
        gc.enable()


def freeze_for_exit() -> None:
    """The heap frozen, so the interpreter's collections at exit have nothing to walk."""
    if _pausing:
        gc.freeze()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block and what it built frozen after: only for what lives
    as long as the process (modules, a store), since frozen cycles are never collected."""
    if not _pausing or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
