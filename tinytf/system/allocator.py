"""The C library's allocator told to keep freed memory for the next step, in every stage process.

glibc's malloc mmaps each request above its mmap threshold and unmaps it on free, so the next
step's tensor of the same size is faulted in again, a zeroed page at a time (benchmarks/README.md,
"Studies that ended"). So: no mmap for large requests, and the heap's free top given back only
beyond `KEEP_BYTES`. jemalloc or tcmalloc would need LD_PRELOAD in every stage, DDP rank and worker.

`TINYTF_ALLOCATOR=default` leaves the C library's allocator as it is (no result changes either
way); without glibc nothing is changed. The MLflow tag `tinytf.allocator` says which a run had.
"""

from __future__ import annotations

import ctypes
import os
import platform

from tinytf.errors import ParamsError

ENV = "TINYTF_ALLOCATOR"
KEEP_BYTES = 1 << 30
# glibc's malloc.h: the mallopt parameters
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4

_setting = "default (not set by this process)"


def keep_freed_memory(choice: str | None = None) -> str:
    """Apply the settings once per process; returns what this process's allocator does. `choice`
    ('keep' or 'default') wins over `TINYTF_ALLOCATOR`: a benchmark's flag names it."""
    global _setting
    if not _setting.startswith("kept"):
        source = "choice" if choice else ENV
        _setting = _apply(choice or os.environ.get(ENV, "keep").strip(), source)
    return _setting


def _apply(value: str, source: str) -> str:
    if value not in ("keep", "default"):
        raise ParamsError(
            f"{source}={value!r}: expected 'keep' (the default) or 'default' (the C library's own)"
        )
    if value == "default":
        return f"default ({source}=default)"
    if platform.libc_ver()[0] != "glibc":
        return "default (no glibc)"
    libc = ctypes.CDLL(None)
    if not (libc.mallopt(M_MMAP_MAX, 0) and libc.mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)):
        return "default (mallopt refused)"
    return f"kept (glibc: no mmap, trim above {KEEP_BYTES >> 20} MiB)"


def setting() -> str:
    """What this process's allocator does, for the run's tags."""
    return _setting
