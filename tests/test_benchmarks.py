"""The benchmarks still run against the current params schema, data sources and training code.

They are scripts nobody imports, so a renamed params key or a changed helper breaks them
silently (the classifier benchmark once read `finetune.lr` after it became `finetune.lrs`).
Each runs here for one step on the tiny preset's shapes, in a folder without `data/`, so on
random ids; only that it runs and prints its headline is checked, never a timing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) else value
    return merged


@pytest.fixture(scope="module")
def tiny_params(tmp_path_factory) -> Path:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    tiny = yaml.safe_load((ROOT / "presets" / "tiny.yaml").read_text())
    path = tmp_path_factory.mktemp("bench") / "params.yaml"
    path.write_text(yaml.safe_dump(_merge(params, tiny)))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("script", ["pretrain_throughput.py", "classifier_throughput.py"])
def test_benchmark_runs_and_ends_with_its_speedup_line(script, tiny_params):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--params", str(tiny_params),
         "--steps", "1", "--rounds", "1"],
        cwd=tiny_params.parent, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    last = result.stdout.strip().splitlines()[-1]
    assert re.match(r"speedup: \d+\.\d\dx tinytf", last), last


@pytest.mark.slow
@pytest.mark.parametrize(
    "script, args, expected",
    [
        ("grouped_split_vs_sklearn.py", ["--seeds", "1"], r"sklearn +worst share error"),
        ("prepare_scale.py", ["--rows", "2000"], r"prepare: \d+ rows/s, peak [\d.]+ GiB; [\d.]+x the time"),
    ],
)
def test_data_benchmark_runs_and_prints_its_headline(script, args, expected):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(expected, result.stdout.strip().splitlines()[-1]), result.stdout[-2000:]
