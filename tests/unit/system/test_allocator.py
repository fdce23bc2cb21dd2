"""The stages' allocator setting: freed memory is kept for the next step instead of being unmapped
and faulted in again, a page at a time."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from tinytf.errors import ParamsError
from tinytf.system import allocator

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# a 160 MB tensor made and dropped 18 times, as an eager step's logits are: page faults over the
# last six (glibc's heap settles within nine here: torch's posix_memalign leaves holes at first)
CYCLES = """
import json, resource, sys
import torch
from tinytf.system import allocator
torch.set_num_threads(1)  # the same allocations whatever the machine's cores
choices = {"apply": allocator.keep_freed_memory, "keep": lambda: allocator.keep_freed_memory("keep")}
setting = choices.get(sys.argv[1], allocator.setting)()
for _ in range(12):
    torch.ones(40_000_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(6):
    torch.ones(40_000_000)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"setting": setting, "faults": faults}))
"""


def cycles(mode: str, env: dict | None = None) -> dict:
    """mode: apply (as a stage does), keep (the benchmark's flag), leave."""
    out = subprocess.run(
        [sys.executable, "-c", CYCLES, mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(out.stdout)


@glibc
def test_kept_memory_is_not_faulted_in_again():
    kept = cycles("apply")
    assert kept["setting"].startswith("kept (glibc")
    # 40M floats are 39,063 pages: the C library's default faults them in on every cycle
    assert kept["faults"] < 2_000, kept
    left = cycles("leave")
    assert left["setting"].startswith("default")
    assert left["faults"] > 6 * 39_000, left


@glibc
def test_tinytf_allocator_default_leaves_the_c_library_alone():
    env = {**os.environ, allocator.ENV: "default"}
    result = cycles("apply", env=env)
    assert result["setting"] == "default (TINYTF_ALLOCATOR=default)"
    assert result["faults"] > 6 * 39_000


@glibc
def test_a_callers_choice_wins_over_the_variable():
    env = {**os.environ, allocator.ENV: "default"}
    result = cycles("keep", env=env)
    assert result["setting"].startswith("kept (glibc")
    assert result["faults"] < 2_000, result


def test_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv(allocator.ENV, "jemalloc")
    monkeypatch.setattr(allocator, "_setting", "default (not set by this process)")
    with pytest.raises(ParamsError, match="TINYTF_ALLOCATOR='jemalloc': expected 'keep'"):
        allocator.keep_freed_memory()


def test_a_stage_applies_it_before_its_main_and_a_bad_value_is_one_line():
    env = {**os.environ, allocator.ENV: "jemalloc"}
    script = "import sys; sys.path.insert(0, 'stages'); import common; common.run(lambda: print('ran'))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "tinytf: error: TINYTF_ALLOCATOR='jemalloc': expected 'keep' (the default) or 'default' (the C library's own)"
    )
    assert "ran" not in out.stdout
