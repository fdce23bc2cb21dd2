"""The benchmarks' records (benchmarks/timing.py's `record`) and their markdown summary
(benchmarks/results.py), on fixture files: what a run writes, where, and how it reads back."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import results  # noqa: E402
import timing  # noqa: E402

CPU = {
    "cpu": "Intel(R) Xeon(R) Processor",
    "cores": 8,
    "usable_cores": 2,
    "bf16_units": ["amx_bf16"],
    "gpu": None,
}
H100 = {**CPU, "gpu": "NVIDIA H100 80GB HBM3"}
FIXTURE = [
    {
        "date": "2026-11-20T10:00:00Z",
        "headline": "speedup: 1.50x old",
        "machine": CPU,
        "commit": "aaaaaaa",
        "dirty": False,
    },
    {
        "date": "2026-11-21T10:00:00Z",
        "headline": "speedup: 2.00x a | b",
        "machine": H100,
        "commit": "bbbbbbb",
        "dirty": False,
    },
    {
        "date": "2026-11-22T10:00:00Z",
        "headline": "speedup: 2.50x new",
        "machine": CPU,
        "commit": "ccccccc",
        "dirty": True,
    },
]


def write(folder: Path, name: str, runs: list[dict]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(run) + "\n" for run in runs))


def test_the_summary_shows_each_scripts_latest_runs_newest_first(tmp_path):
    write(tmp_path, "pretrain_throughput", FIXTURE)
    write(tmp_path, "classifier_epoch", FIXTURE[:1])
    assert results.render(tmp_path, 2, []) == "\n".join(
        [
            "## classifier_epoch",
            "",
            "1 run recorded, the latest 1:",
            "",
            "| date | machine | commit | headline |",
            "|---|---|---|---|",
            "| 2026-11-20T10:00:00Z | Intel(R) Xeon(R) Processor (amx_bf16), 2 cores | aaaaaaa | speedup: 1.50x old |",
            "",
            "## pretrain_throughput",
            "",
            "3 runs recorded, the latest 2:",
            "",
            "| date | machine | commit | headline |",
            "|---|---|---|---|",
            "| 2026-11-22T10:00:00Z | Intel(R) Xeon(R) Processor (amx_bf16), 2 cores | ccccccc+dirty | speedup: 2.50x new |",
            "| 2026-11-21T10:00:00Z | NVIDIA H100 80GB HBM3 | bbbbbbb | speedup: 2.00x a \\| b |",
        ]
    )
    assert results.render(tmp_path, 5, ["classifier_epoch"]).startswith("## classifier_epoch")
    assert "pretrain_throughput" not in results.render(tmp_path, 5, ["classifier_epoch"])


def test_the_summary_command_reads_the_folder_the_benchmarks_write(tmp_path):
    write(tmp_path, "classifier_epoch", FIXTURE)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TINYTF_BENCH_RESULTS": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "results.py"), "--last", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "## classifier_epoch"
    assert done.stdout.splitlines()[-1].endswith("| ccccccc+dirty | speedup: 2.50x new |")


def test_the_summary_without_results_says_so(tmp_path):
    assert results.render(tmp_path / "none", 5, []) == f"no recorded runs in {tmp_path / 'none'}"


@pytest.mark.parametrize(
    ("line", "error"),
    [("{not json", "not JSON"), ('{"date": "2026-11-20T10:00:00Z"}', "a run without headline")],
)
def test_a_damaged_results_file_is_named_with_its_line(tmp_path, line, error):
    write(tmp_path, "classifier_epoch", FIXTURE[:1])
    with (tmp_path / "classifier_epoch.jsonl").open("a") as handle:
        handle.write(line + "\n")
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'classifier_epoch.jsonl'}:2: {error}"):
        results.render(tmp_path, 5, [])


def test_record_appends_numbers_as_numbers_and_paths_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv(timing.RESULTS_ENV, str(tmp_path / "out"))
    args = argparse.Namespace(params=Path("params.yaml"), steps=3)
    figures = {"ratio": np.float64(1.5), "tokens": np.int64(7)}
    for _ in range(2):
        path = timing.record("demo", "speedup: 1.50x", figures, args)
    assert path == tmp_path / "out" / "demo.jsonl"
    runs = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(runs) == 2
    assert runs[1]["figures"] == {"ratio": 1.5, "tokens": 7}
    assert runs[1]["args"] == {"params": "params.yaml", "steps": 3}
    assert runs[1]["machine"]["gpu"] is None  # no device: no GPU named, whatever the machine has


def test_record_names_no_commit_outside_git(tmp_path, monkeypatch):
    monkeypatch.setattr(timing, "ROOT", tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no repository above tmp_path
    assert timing.git_commit() == {"commit": "unknown", "dirty": None}


def test_records_default_to_the_repositorys_results_folder(monkeypatch):
    monkeypatch.delenv(timing.RESULTS_ENV, raising=False)
    assert timing.results_dir() == REPO / "benchmarks" / "results"
    assert (REPO / "benchmarks" / "results" / ".gitkeep").exists()
