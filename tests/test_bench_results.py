"""The benchmarks' records (benchmarks/timing.py's `record`): what a run writes, and where."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import timing  # noqa: E402


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
    assert timing.results_dir() == ROOT / "benchmarks" / "results"
    assert (ROOT / "benchmarks" / "results" / ".gitkeep").exists()
