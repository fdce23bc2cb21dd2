"""A params edit while a stage runs (issue 72): DVC reads params.yaml when it records the stage, so
an edit made mid-run once put values into dvc.lock that the outputs were never made with. The real
`tokenize` stage, on a tiny prepared corpus, edits its own params file just after training (patched
in-process, in a subprocess of its own): a key it declares fails it in one line with its outputs
left as they were; a key it does not declare changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO

# the stage as dvc.yaml runs it, with run_tokenize wrapped to edit params.yaml once it has trained
SCRIPT = """
import sys
import yaml
sys.path.insert(0, {stages!r})
sys.argv = ["train_tokenizer.py", "--prepared", "prepared", "--out", "out", "--report", "out/tokenize.json"]
import common
import train_tokenizer as stage

real = stage.run_tokenize

def run_then_edit(*args, **kwargs):
    done = real(*args, **kwargs)
    params = yaml.safe_load(open("params.yaml"))
    params[{section!r}][{key!r}] = {value!r}
    with open("params.yaml", "w") as handle:
        yaml.safe_dump(params, handle)
    return done

stage.run_tokenize = run_then_edit
common.run(stage.main)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """dvc.yaml, params.yaml at the tiny tokenizer's size, prepared splits, and the last outputs."""
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["tokenize"].update(vocab_size=300, min_frequency=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    words = "the a film plot actor scene good bad dull bright story long short".split()
    texts = [" ".join(words[(i + j) % len(words)] for j in range(9)) for i in range(60)]
    for dataset in ("corpus", "sentiment"):
        (tmp_path / "prepared" / dataset).mkdir(parents=True)
        for split in ("train", "validation", "test"):
            frame = pd.DataFrame({"text": texts, "label": [i % 2 for i in range(len(texts))]})
            frame.to_parquet(tmp_path / "prepared" / dataset / f"{split}.parquet")
    (tmp_path / "out").mkdir()
    for name in ("tokenizer.json", "tokenize.json"):
        (tmp_path / "out" / name).write_text("the last run's\n")
    return tmp_path


def run_editing(root: Path, section: str, key: str, value) -> subprocess.CompletedProcess:
    script = SCRIPT.format(stages=str(REPO / "stages"), section=section, key=key, value=value)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "TINYTF_TRACKING": "0", "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def test_a_declared_key_edited_mid_run_fails_the_stage_and_swaps_nothing(workspace):
    result = run_editing(workspace, "tokenize", "min_frequency", 3)
    assert result.returncode == 2, result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("tinytf: error:")]
    assert error == [
        "tinytf: error: params.yaml changed while tokenize ran; run again (changed: tokenize.min_frequency)"
    ], result.stderr
    assert "Traceback" not in result.stderr
    for name in ("tokenizer.json", "tokenize.json"):
        assert (workspace / "out" / name).read_text() == "the last run's\n"
    assert not (workspace / "out" / "tokens").exists()
    assert not [p for p in workspace.iterdir() if p.name.endswith(".staging.tmp")]


def test_an_undeclared_key_edited_mid_run_changes_nothing(workspace):
    result = run_editing(workspace, "pretrain", "epochs", 7)
    assert result.returncode == 0, result.stderr
    assert (workspace / "out" / "tokenizer.json").read_text() != "the last run's\n"
    assert (workspace / "out" / "tokens" / "corpus" / "train.npy").is_file()
