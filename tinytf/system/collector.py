"""Python's cyclic garbage collector kept out of a stage process's start and end.

A stage's imports allocate millions of objects, none of them garbage, and the collector walks the
growing heap again and again, and once more at exit (`python benchmarks/stage_process.py`). So a
stage pauses it before its imports (stages/common.py); `resume` freezes what they built (`gc.freeze`:
never walked, freed as usual once unreferenced) and turns it back on for the stage's own work;
`freeze_for_exit` freezes the heap again at the end; `paused` does the same around MLflow's import
and store. When garbage is collected changes no result. `TINYTF_GC=default` leaves Python's own.
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
