"""`tinytf data add`: checks first, then copies, tracks and writes params.yaml (comments kept)."""

from __future__ import annotations

import shutil
import subprocess

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import GIT
from tinytf.cli.main import main


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository holding the project's params.yaml, as the working directory."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "params.yaml"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "params"], cwd=root, check=True)
    monkeypatch.chdir(root)
    return root


def reviews(path, rows: int):
    frame = pd.DataFrame(
        {"review": [f"film {i}" for i in range(rows)], "stars": ["pos", "neg"] * (rows // 2)}
    )
    frame.to_csv(path, index=False)
    return str(path)


def staged(root) -> list[str]:
    listed = subprocess.run(
        ["git", "diff", "--cached", "--name-only"], cwd=root, capture_output=True, text=True
    )
    return listed.stdout.split()


def test_add_copies_stages_and_sets_the_keys_keeping_comments(repo, tmp_path, capsys):
    before = (repo / "params.yaml").read_text(encoding="utf-8")
    args = [
        "data",
        "add",
        reviews(tmp_path / "r.csv", 40),
        "--text-column",
        "review",
        "--label-column",
        "stars",
    ]
    assert main(args) == 0
    after = (repo / "params.yaml").read_text(encoding="utf-8")
    sentiment = yaml.safe_load(after)["prepare"]["sentiment"]
    assert sentiment["files"] == {"train": "data/raw/r.csv", "validation": None, "test": None}
    assert (sentiment["source"], sentiment["text_column"], sentiment["label_column"]) == (
        "files",
        "review",
        "stars",
    )
    comments = [line.split("#", 1)[1] for line in before.splitlines() if "#" in line]
    assert all(comment in after for comment in comments)
    assert len(after.splitlines()) == len(before.splitlines())
    # only the lines of the keys it sets (source, files.train, text_column, label_column) change
    changed = [b for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(changed) == 4, changed
    assert (repo / "data/raw/r.csv").read_bytes() == (tmp_path / "r.csv").read_bytes()
    assert staged(repo) == ["data/raw/r.csv"] and "40 rows read" in capsys.readouterr().out
    # a test file next: train stays, and nothing is carved for test any more
    test_args = ["data", "add", reviews(tmp_path / "t.csv", 6), "--text-column", "review"]
    assert main([*test_args, "--label-column", "stars", "--split", "test"]) == 0
    files = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))["prepare"]["sentiment"][
        "files"
    ]
    assert files == {"train": "data/raw/r.csv", "validation": None, "test": "data/raw/t.csv"}


@pytest.mark.parametrize(
    "rows, columns, message",
    [
        (40, ["--text-column", "text", "--label-column", "stars"], "r.csv: column 'text' not found"),
        (
            4,
            ["--text-column", "review", "--label-column", "stars"],
            "r.csv: 4 rows; carving validation 0.1, test 0.1",
        ),
        (
            40,
            ["--text-column", "review", "--label-column", "review"],
            "text_column and label_column are both",
        ),
    ],
)
def test_a_refused_add_changes_nothing(repo, tmp_path, capsys, rows, columns, message):
    before = (repo / "params.yaml").read_text(encoding="utf-8")
    assert main(["data", "add", reviews(tmp_path / "r.csv", rows), *columns]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert (repo / "params.yaml").read_text(encoding="utf-8") == before
    assert not (repo / "data").exists() and staged(repo) == []


def test_print_set_leaves_params_alone_and_prints_a_line_dvc_takes(repo, tmp_path, capsys):
    before = (repo / "params.yaml").read_text(encoding="utf-8")
    args = [
        "data",
        "add",
        reviews(tmp_path / "r.csv", 40),
        "--text-column",
        "review",
        "--label-column",
        "stars",
    ]
    assert main([*args, "--print-set"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line == (
        "dvc exp run -S prepare.sentiment.source=files -S prepare.sentiment.files.train=data/raw/r.csv "
        "-S prepare.sentiment.text_column=review -S prepare.sentiment.label_column=stars"
    )
    assert (repo / "params.yaml").read_text(encoding="utf-8") == before and staged(repo) == ["data/raw/r.csv"]


def test_corpus_text_sets_the_corpus_keys_and_a_file_is_one_or_the_other(repo, tmp_path, capsys):
    text = tmp_path / "unsup.txt"
    text.write_text("".join(f"an unlabelled review, number {i}\n" for i in range(40)), encoding="utf-8")
    assert main(["data", "add", str(text), "--text-column", "text"]) == 2
    assert "give one of --label-column L (labelled data) and --corpus" in capsys.readouterr().err
    assert main(["data", "add", str(text), "--text-column", "text", "--corpus"]) == 0
    prepare = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))["prepare"]
    assert (
        prepare["corpus"]["source"] == "files" and prepare["corpus"]["files"]["train"] == "data/raw/unsup.txt"
    )
    assert (
        prepare["sentiment"]["source"] == "rt_critic_snippets" and prepare["sentiment"]["text_column"] is None
    )


def disk_full():
    import errno
    import os

    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_write_that_fails_midway_leaves_params_yaml_whole(repo, tmp_path, capsys, monkeypatch):
    """Issue 72: `open(params.yaml, "w")` then a full disk left it at 0 bytes. Now the new text goes
    to a temporary file first: a failure halfway through writing it leaves params.yaml byte for
    byte, no temporary file beside it, and one line saying what is left and what to run."""
    from tinytf.cli import files

    def half_then_full(path, data):
        def fill(handle):
            handle.write(data[: len(data) // 2])
            raise disk_full()

        files._replace(path, fill)

    monkeypatch.setattr(files, "write_bytes", half_then_full)
    before = (repo / "params.yaml").read_bytes()
    args = ["data", "add", reviews(tmp_path / "r.csv", 40), "--text-column", "review"]
    assert main([*args, "--label-column", "stars"]) == 2
    err = capsys.readouterr().err
    assert (repo / "params.yaml").read_bytes() == before
    assert [p.name for p in repo.iterdir() if p.name.endswith(".tmp")] == []
    assert err.strip().splitlines() == [
        "tinytf: error: params.yaml: not written (No space left on device; free disk space), so it is "
        "as it was; the data file is copied and staged (data/raw/r.csv): run this command again to set "
        "the keys"
    ]
    assert staged(repo) == ["data/raw/r.csv"]
    monkeypatch.undo()
    monkeypatch.chdir(repo)
    assert main([*args, "--label-column", "stars"]) == 0  # and running it again does finish the job
    assert "data/raw/r.csv" in (repo / "params.yaml").read_text(encoding="utf-8")


def test_a_copy_that_fails_before_it_is_on_disk_leaves_nothing(repo, tmp_path, capsys, monkeypatch):
    from tinytf.cli import files

    def full(fd):
        raise disk_full()

    monkeypatch.setattr(files.os, "fsync", full)
    before = (repo / "params.yaml").read_bytes()
    args = ["data", "add", reviews(tmp_path / "r.csv", 40), "--text-column", "review"]
    assert main([*args, "--label-column", "stars"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "tinytf: error: data/raw/r.csv: not written (No space left on device; free disk space); "
        "nothing was changed: run this again"
    ]
    assert (repo / "params.yaml").read_bytes() == before
    assert list((repo / "data/raw").iterdir()) == [] and staged(repo) == []


def test_files_keep_the_mode_and_write_through_a_symlink(tmp_path):
    from tinytf.cli import files

    real = tmp_path / "real.yaml"
    real.write_text("a: 1\n")
    real.chmod(0o640)
    link = tmp_path / "params.yaml"
    link.symlink_to(real)
    files.write_bytes(link, b"a: 2\n")
    assert link.is_symlink() and real.read_text() == "a: 2\n" and real.stat().st_mode & 0o777 == 0o640
