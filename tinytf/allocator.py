"""The C library's allocator told to keep freed memory for the next step, in every stage process.

glibc's malloc serves each request above its mmap threshold (32 MB at most) with a fresh mmap and
unmaps it on free, so the next step's tensor of the same size is faulted in again, a zeroed 4 KB
page at a time. An eager language-model step or evaluation batch makes several such tensors (the
8000-way logits of 32 blocks of 128 tokens are 65 MB in bf16, 131 MB in fp32): an evaluation pass
over PTB validation took 2.4 s and 1.8M page faults on a 2-core machine, and 1.3 s with freed
memory kept; a variants cell's eager step 1.54x as fast (`python benchmarks/allocator.py`).

Two `mallopt` settings, set as a stage or worker process starts: no mmap for large requests
(they come from the heap, whose freed chunks malloc reuses), and the heap's free top given back
to the system only beyond `KEEP_BYTES`. The memory stays with the process: the benchmark's peak
rose by 65 MB, and a loop making one 160 MB tensor after another grows the heap to about 1.1 GB
before it reuses one (torch's posix_memalign leaves holes at first; tests/test_allocator.py).
jemalloc or tcmalloc, which PyTorch's tuning guide suggests, would do the same, but only loaded
with LD_PRELOAD before the process starts, a Debian package and an environment every stage
command, DDP rank and worker would need; these two calls need neither.

`TINYTF_ALLOCATOR=default` (against `keep`, the default) leaves the allocator as the C library
set it: an allocator changes no result, the same params give the same numbers either way.
Without glibc (macOS, musl) nothing is changed. The MLflow tag `tinytf.allocator` says which a
run had.
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
