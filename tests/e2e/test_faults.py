"""Bad inputs and damaged files (issues 45 and 46): each is one line naming the file, key or
text and what to do, with exit status 2, through the real command line where a user meets it.
And files that only depend on their content: a retrained model is byte-identical."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.helpers.lm_fixtures import make_corpus_dir, make_sentiment_dir
from tests.helpers.model_fixtures import build
from tests.helpers.paths import REPO
from tinytf.io import sha256_file
from tinytf.model.checkpoint import save_model, save_training_state

# the tiny preset's model and a few pretraining steps: a stage run takes seconds
TINY = [
    "model.d_model=16",
    "model.n_layer=1",
    "model.n_head=2",
    "model.d_ff=32",
    "model.block_size=16",
    "pretrain.batch_size=4",
    "pretrain.epochs=1",
    "pretrain.steps_per_epoch=3",
    "pretrain.warmup_steps=1",
    "pretrain.eval_batches=1",
    "pretrain.log_every=1",
    "pretrain.checkpoint_every=2",
    "pretrain.precision=fp32",
    "pretrain.compile=false",
    "pretrain.device=cpu",
]


def one_line_exit_2(result: subprocess.CompletedProcess, *words: str) -> str:
    """The stderr of a refused command: exit status 2, one line, no traceback, every word in it."""
    err = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)
    return err


def workspace(root: Path, sentiment: bool = False) -> Path:
    """What the pretrain (or finetune) stage reads, laid out as in the repository: dvc.yaml and
    params.yaml at the root (a stage narrows params by dvc.yaml), the tokenizer, token ids (and a
    pretrained model) under data/."""
    (root / "data").mkdir(parents=True)  # and root with it
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / name, root / name)
    if sentiment:
        make_sentiment_dir(root / "data")
    else:
        make_corpus_dir(root / "data", lines=120)
    return root


def stage(root: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """`python stages/SCRIPT ARGS` run in `root`, as dvc repro runs it (tracking off). As root,
    without the capability that lets root ignore permission bits, so a chmod binds it too."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TINYTF_TRACKING": "0"}
    command = [sys.executable, str(REPO / "stages" / script), *args]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *command]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def pretrain_stage(root: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [
        "--seed",
        "1",
        "--data",
        "data",
        "--data-card",
        "reports/data.json",
        "--model",
        "data/models/pretrained/seed1.pt",
        "--snapshots",
        "data/models/snapshots/seed1",
        "--reports",
        "reports/pretrain",
        "--state",
        "data/checkpoints/pretrain.pt",
        *extra,
    ]
    return stage(root, "pretrain.py", *args, *[arg for item in TINY for arg in ("--set", item)])


# --------------------------------------------------------------------------- byte-stable files


def test_two_saves_of_the_same_state_give_the_same_bytes(tmp_path):
    model = build(seed=3)
    save_model(tmp_path / "a" / "pretrained.pt", model)
    save_model(tmp_path / "b" / "other-name.pt", build(seed=3))
    assert sha256_file(tmp_path / "a/pretrained.pt") == sha256_file(tmp_path / "b/other-name.pt")
    state = {"model": model.state_dict(), "step": 7, "rng": torch.get_rng_state(), "history": [{"loss": 1.0}]}
    save_training_state(tmp_path / "state.pt", state)
    save_training_state(tmp_path / "deeper" / "pretrain.pt", state)
    assert sha256_file(tmp_path / "state.pt") == sha256_file(tmp_path / "deeper/pretrain.pt")
    save_model(tmp_path / "c.pt", build(seed=4))  # and other weights do give other bytes
    assert sha256_file(tmp_path / "c.pt") != sha256_file(tmp_path / "a/pretrained.pt")


def test_the_pretrain_stage_run_twice_writes_a_byte_identical_model(tmp_path):
    digests = []
    for name in ("first", "second"):
        root = workspace(tmp_path / name)
        result = pretrain_stage(root)
        assert result.returncode == 0, result.stderr
        digests.append(hashlib.sha256((root / "data/models/pretrained/seed1.pt").read_bytes()).hexdigest())
    assert digests[0] == digests[1]


# --------------------------------------------------------------------------- damaged or missing files


def test_a_missing_token_file_names_it_and_the_stage_to_rerun(tmp_path):
    root = workspace(tmp_path)
    (root / "data/tokens/corpus/train.npy").unlink()
    one_line_exit_2(pretrain_stage(root), "data/tokens/corpus/train.npy", "dvc repro tokenize")


def test_an_unreadable_token_file_is_named(tmp_path):
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root ignores permission bits, and setpriv (which could drop that) is missing")
    root = workspace(tmp_path)
    (root / "data/tokens/corpus/train.npy").chmod(0o000)
    one_line_exit_2(
        pretrain_stage(root), "data/tokens/corpus/train.npy: permission denied", "make it readable"
    )


def test_a_damaged_training_state_says_it_may_be_deleted(tmp_path):
    root = workspace(tmp_path)
    state = root / "data/checkpoints/pretrain.pt"
    state.parent.mkdir(parents=True)
    state.write_bytes(os.urandom(4096))
    err = one_line_exit_2(pretrain_stage(root), "data/checkpoints/pretrain.pt", "damaged", "delete it")
    assert "pickled" not in err  # torch's own words: random bytes are not an attack
    state.write_bytes(state.read_bytes()[:0])
    one_line_exit_2(pretrain_stage(root), "damaged", "delete it")  # an empty (truncated) file
    state.unlink()
    assert pretrain_stage(root).returncode == 0
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])  # cut in half mid-write
    one_line_exit_2(pretrain_stage(root), "data/checkpoints/pretrain.pt", "damaged", "delete it")


def test_a_missing_sentiment_token_file_under_finetune(tmp_path):
    root = workspace(tmp_path, sentiment=True)
    (root / "data/tokens/sentiment/train.parquet").unlink()
    # the baselines' outputs it compares with are there: the missing token file is what it names
    (root / "reports/baselines").mkdir(parents=True)
    (root / "reports/baselines/summary.json").write_text('{"label_curve": {}}')
    pd.DataFrame({"start": ["tfidf_lr"]}).to_parquet(root / "reports/baselines/predictions.parquet")
    (root / "data/models/pretrained").mkdir()  # one body, where stage pretrain writes it
    shutil.copy(root / "data/models/pretrained.pt", root / "data/models/pretrained/seed1.pt")
    args = [
        "--set",
        "pretrain.seeds=[1]",
        "--data",
        "data",
        "--pretrained",
        "data/models/pretrained",
        "--snapshots",
        "data/models/snapshots",
        "--reports",
        "reports/finetune",
        "--baselines",
        "reports/baselines/summary.json",
        "--baseline-predictions",
        "reports/baselines/predictions.parquet",
        "--predictions",
        "data/predictions/finetune.parquet",
    ]
    one_line_exit_2(
        stage(root, "finetune.py", *args), "data/tokens/sentiment/train.parquet", "dvc repro tokenize"
    )
    (root / "reports/baselines/summary.json").unlink()  # and the baselines' summary it compares with
    one_line_exit_2(
        stage(root, "finetune.py", *args), "reports/baselines/summary.json: not found", "dvc repro baselines"
    )


def test_an_unwritable_output_folder_names_the_folder(tmp_path):
    root = workspace(tmp_path)
    reports = root / "reports"
    reports.mkdir()
    reports.chmod(0o555)
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("root ignores permission bits, and setpriv (which could drop that) is missing")
    try:
        result = stage(root, "probes.py", "--reports", "reports/probes")
        one_line_exit_2(result, f"{reports.name}: cannot write", "permission denied", "chmod u+w reports")
        reports.chmod(0o755)
        (reports / "probes").mkdir()
        (reports / "probes").chmod(0o555)  # the stage's own folder exists but is read-only
        one_line_exit_2(
            stage(root, "probes.py", "--reports", "reports/probes"), "reports/probes: cannot write"
        )
    finally:
        for folder in (reports, reports / "probes"):
            if folder.exists():
                folder.chmod(0o755)


# --------------------------------------------------------------------------- bad data


def test_prepare_refuses_sentiment_data_with_one_class(tmp_path):
    root = workspace(tmp_path)
    raw = root / "data/raw"
    raw.mkdir()
    (raw / "corpus.txt").write_text("\n".join(f"corpus line {i}" for i in range(50)) + "\n")
    (raw / "reviews.csv").write_text("review,label\n" + "".join(f"review {i},pos\n" for i in range(40)))
    sets = [
        "prepare.corpus.source=files",
        "prepare.corpus.files={train: data/raw/corpus.txt}",
        "prepare.sentiment.source=files",
        "prepare.sentiment.files={train: data/raw/reviews.csv}",
        "prepare.sentiment.text_column=review",
        "prepare.sentiment.label_column=label",
    ]
    args = ["--out", "data/prepared", "--reports", "reports", "--raw", "data/raw"]
    result = stage(root, "prepare.py", *args, *[arg for item in sets for arg in ("--set", item)])
    one_line_exit_2(result, "data/raw/reviews.csv: split 'train' holds only class 'pos'", "two classes")
    assert not (root / "data/prepared").exists() and not (root / "reports").exists()
