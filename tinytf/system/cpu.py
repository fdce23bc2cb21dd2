"""What this CPU offers bf16 matmuls, read from /proc/cpuinfo without torch (for the run's tags and
the runtime's bf16 choice). An AMX machine and an AVX-512 BF16 one round bf16 matmuls differently,
so the same params give figures that differ in the last digits."""

from __future__ import annotations

import functools
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
BF16_UNITS = ("amx_bf16", "avx512_bf16")


@functools.cache  # one read a process: the finetune stage opens a child run per start and seed
def _fields(cpuinfo: Path) -> tuple[str, tuple[str, ...]] | None:
    """(model name, flags) of the first processor, or None where there is no such file."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    model = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
        platform.machine(),
    )
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []
    )
    return model, tuple(flags)


def bf16_units(cpuinfo: str | Path | None = None) -> list[str]:
    """The units of BF16_UNITS this CPU has: native bf16 matmuls run on them."""
    fields = _fields(Path(cpuinfo or CPUINFO))
    return [unit for unit in BF16_UNITS if fields and unit in fields[1]]


def cpu_model(cpuinfo: str | Path | None = None) -> str:
    """The CPU's model name; the platform's processor string where there is no /proc/cpuinfo."""
    fields = _fields(Path(cpuinfo or CPUINFO))
    if fields is None:
        return platform.processor() or platform.machine() or "unknown"
    return fields[0]


def cpu_kind(cpuinfo: str | Path | None = None) -> str:
    """'<model name> (<bf16 units>)', e.g. 'Intel(R) Xeon(R) Processor (amx_bf16, avx512_bf16)';
    the platform's processor string where there is no /proc/cpuinfo."""
    if _fields(Path(cpuinfo or CPUINFO)) is None:
        return cpu_model(cpuinfo)
    return f"{cpu_model(cpuinfo)} ({', '.join(bf16_units(cpuinfo)) or 'no bf16 units'})"
