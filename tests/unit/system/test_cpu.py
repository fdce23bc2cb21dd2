"""The CPU's name and bf16 units, read once from /proc/cpuinfo for the MLflow tag and for
`auto` precision."""

from __future__ import annotations

import platform

import pytest
import torch

from tinytf.system import cpu
from tinytf.system.cpu import bf16_units, cpu_kind
from tinytf.train import runtime

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx512f {units}

processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx512f {units}
"""


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        ("avx512_bf16 amx_tile amx_bf16", "(amx_bf16, avx512_bf16)"),
        ("avx512_bf16", "(avx512_bf16)"),
        ("avx2", "(no bf16 units)"),
    ],
)
def test_the_cpu_tag_names_the_model_and_its_bf16_units(tmp_path, units, expected):
    # AMX and AVX-512 BF16 machines round bf16 matmuls differently: the tag tells them apart
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(units=units))
    assert cpu_kind(cpuinfo) == f"Intel(R) Xeon(R) Processor {expected}"


def test_the_cpu_tag_falls_back_to_the_platform_without_proc_cpuinfo(tmp_path):
    assert cpu_kind(tmp_path / "missing") == (platform.processor() or platform.machine() or "unknown")


@pytest.mark.parametrize(
    ("units", "capability", "native"),
    [
        ("avx512_bf16 amx_tile amx_bf16", "AVX512", True),
        ("avx512_bf16", "AVX512", True),
        ("avx2", "AVX2", False),
        ("avx2", "AMX", True),  # torch's own probe finds AMX even where the flags were not read
    ],
)
def test_auto_precision_reads_the_same_flags_as_the_tag(tmp_path, monkeypatch, units, capability, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(units=units))
    monkeypatch.setattr(cpu, "CPUINFO", cpuinfo)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert runtime.cpu_has_bf16() is native
    assert bool(bf16_units()) is ("bf16" in units)
    assert runtime.resolve_runtime("cpu", "auto", False, 0).precision == ("bf16" if native else "fp32")


def test_no_cpuinfo_means_no_bf16_units(tmp_path):
    assert bf16_units(tmp_path / "missing") == []
