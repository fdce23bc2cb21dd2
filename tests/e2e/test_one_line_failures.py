"""One line, fast, for every failure (issue 57): the command line and the stages end a bad
argument, a bad tokenizer file, an alias bomb, a full disk, a file-size limit and a tracking
server that does not answer in one line with exit status 2; a closed pipe ends quietly."""

from __future__ import annotations

import errno
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.model_fixtures import build
from tests.helpers.paths import REPO
from tinytf.data.tokenizer import train_tokenizer
from tinytf.errors import OutputError
from tinytf.io import write_bytes
from tinytf.model.checkpoint import save_model
from tinytf.params.config import TokenizeParams

ENV = {**os.environ, "TINYTF_TRACKING": "0", "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}


def tinytf(*args: str, cwd: Path = REPO, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tinytf.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env or ENV,
        timeout=300,
        **kw,
    )


def one_line(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("tinytf: error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.mark.parametrize("size", ["0", "-3", "99999999999"])
def test_count_params_refuses_a_vocabulary_size_out_of_range(size):
    one_line(tinytf("count-params", "--vocab-size", size), f"--vocab-size {size}")


@pytest.mark.parametrize("name", ["../params", "presets/tiny.yaml", "/etc/passwd", "tiny.yaml"])
def test_preset_takes_only_names_of_presets(name):
    one_line(tinytf("preset", name, "--print"), "a preset is a name of presets/", "--presets-dir")


@pytest.mark.parametrize(
    "item, said",
    [
        ("tokenize.vocab_size:4000", "expected KEY=VALUE"),
        ("tokenize.vocab_size=[1,", "not a value DVC reads"),
    ],
)
def test_exp_refuses_a_malformed_set_before_dvc(tmp_path, item, said):
    # a folder that is no DVC repository: were the item to reach dvc, it would fail otherwise
    (tmp_path / "params.yaml").write_bytes((REPO / "params.yaml").read_bytes())
    one_line(tinytf("exp", "-S", item, cwd=tmp_path), f"-S {item!r}: {said}", "params.yaml is as it was")
    assert (tmp_path / "params.yaml").read_bytes() == (REPO / "params.yaml").read_bytes()


def test_an_alias_bomb_in_params_is_refused_at_once(tmp_path):
    # a "billion laughs": 9 levels of 9 aliases each, 9**9 strings once built, in under 1 KB
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    (tmp_path / "params.yaml").write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    result = tinytf("check", "--params", str(tmp_path / "params.yaml"))
    assert time.monotonic() - start < 15
    one_line(result, "YAML aliases", "at most 20")
    assert tinytf("check").returncode == 0  # the committed params.yaml passes


@pytest.fixture
def scored(tmp_path) -> Path:
    model = tmp_path / "model.pt"
    save_model(model, build(), stage="pretrain")  # vocabulary 37
    return model


def test_a_damaged_tokenizer_file_is_one_line(scored, tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"version": "1.0", "model": {"type": "nope"}}')
    one_line(
        tinytf("score", "a text", "--model", str(scored), "--tokenizer", str(bad)),
        f"{bad}: not a readable tokenizer",
    )


def test_a_tokenizer_of_another_model_is_one_line(scored, tmp_path):
    other = tmp_path / "other.json"
    texts = ["the market fell sharply today"] * 20
    train_tokenizer(texts, TokenizeParams(kind="bpe", vocab_size=300, min_frequency=1)).save(str(other))
    one_line(
        tinytf("score", "the market", "--model", str(scored), "--tokenizer", str(other)), "trained on 37"
    )


def test_a_closed_pipe_ends_quietly():
    reader = subprocess.Popen(
        [sys.executable, "-m", "tinytf.cli", "count-params", "--course-lab"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        cwd=REPO,
    )
    reader.stdout.readline()
    reader.stdout.close()  # `| head -1`
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=120) == 141 and err == "", err


def test_a_file_size_limit_is_one_line_and_keeps_the_output(tmp_path):
    out = tmp_path / "out.bin"
    out.write_bytes(b"previous")
    code = f"from tinytf.io import write_bytes; write_bytes({str(out)!r}, bytes(100_000))"
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))  # noqa: E731
    runner = f"import sys; sys.path.insert(0, 'stages'); import common; common.run(lambda: exec({code!r}))"
    result = subprocess.run(
        [sys.executable, "-c", runner], cwd=REPO, capture_output=True, text=True, env=ENV, preexec_fn=limit
    )
    one_line(result, str(out), "File too large", "ulimit -f", "the previous outputs are kept")
    assert out.read_bytes() == b"previous"


@pytest.mark.parametrize("where", ["tinytf.io", "outside"])
def test_a_full_disk_under_dvc_names_dvc_checkout_not_kept_outputs(tmp_path, where):
    """Issue 72: DVC removes a stage's outputs before it runs, so "the previous outputs are kept"
    was untrue under `dvc repro`; the line names the command that brings them back."""
    out = tmp_path / "out.bin"
    if where == "tinytf.io":
        code = f"from tinytf.io import write_bytes; write_bytes({str(out)!r}, bytes(100_000))"
    else:
        code = f"import errno; raise OSError(errno.EFBIG, 'File too large', {str(out)!r})"
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))  # noqa: E731
    runner = f"import sys; sys.path.insert(0, 'stages'); import common; common.run(lambda: exec({code!r}))"
    env = {**ENV, "DVC_STAGE": "grid@AdamW-0.001-32-2"}
    result = subprocess.run(
        [sys.executable, "-c", runner], cwd=REPO, capture_output=True, text=True, env=env, preexec_fn=limit
    )
    one_line(result, str(out), "File too large", "ulimit -f", "`dvc checkout grid@AdamW-0.001-32-2` restores")
    assert "previous outputs are kept" not in result.stderr


def test_a_full_disk_is_one_line_naming_the_output(tmp_path, monkeypatch):
    out = tmp_path / "out.bin"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)  # what write_bytes writes with
    with pytest.raises(OutputError) as err:
        write_bytes(out, b"x")
    assert str(err.value).startswith(f"{out}: cannot write it (No space left on device); free disk space")
    assert not list(tmp_path.iterdir())  # no temporary left behind


def test_a_full_disk_outside_tinytf_io_is_one_line_in_a_stage():
    runner = (
        "import errno, sys; sys.path.insert(0, 'stages'); import common\n"
        "def main():\n    raise OSError(errno.ENOSPC, 'No space left on device', 'reports/x.png')\n"
        "common.run(main)"
    )
    result = subprocess.run([sys.executable, "-c", runner], cwd=REPO, capture_output=True, text=True, env=ENV)
    one_line(result, "reports/x.png: cannot write it (No space left on device)")


@pytest.mark.parametrize("answers", [False, True], ids=["refused", "silent"])
def test_predict_against_a_server_that_does_not_answer_fails_fast(answers, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # accepts connections (the kernel's backlog) and never answers: a hung server
    port = server.getsockname()[1] if answers else 1
    try:
        start = time.monotonic()
        result = tinytf(
            "predict", "a film", cwd=tmp_path, env={**ENV, "MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"}
        )
        took = time.monotonic() - start
    finally:
        server.close()
    one_line(result, f"http://127.0.0.1:{port}: the tracking server does not answer")
    assert took < 15, took
