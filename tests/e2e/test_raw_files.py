"""Bring-your-own files that must not be read wrongly (issue 57): a symlink in data/raw/ leading
out of it is refused by name (its target neither named nor read), an `encoding` may be given per
file, and a file read under the wrong encoding, or holding U+FFFD, is refused with its line:
a mixed-encoding source is read correctly or refused, never garbled."""

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
from tinytf.data.readers import read_table
from tinytf.errors import DataError, ParamsError
from tinytf.params.config import load_params
from tinytf.params.prepare import encoding_of

ROWS = "text,label\n{}\n"
UTF8 = ["Un film très réussi,pos", "Ennuyeux à mourir,neg"]
CP1252 = ["Crème brûlée for the soul,pos", "A dull “thriller”,neg"]


def write(path: Path, lines: list[str], encoding: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ROWS.format("\n".join(lines)).encode(encoding))
    return path


def params_with(tmp_path: Path, sentiment: dict) -> Path:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["prepare"]["sentiment"].update({"source": "files", **sentiment})
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def test_a_mixed_encoding_source_is_read_correctly_with_per_file_encodings(tmp_path):
    a = write(tmp_path / "data/raw/a.csv", UTF8, "utf-8")
    b = write(tmp_path / "data/raw/b.csv", CP1252, "cp1252")
    files = {"train": str(a), "test": str(b)}
    params = load_params(params_with(tmp_path, {"files": files, "encoding": {str(b): "cp1252"}}))
    section = params.prepare.sentiment
    assert encoding_of(section, str(a)) == "utf-8" and encoding_of(section, str(b)) == "cp1252"
    assert read_table(a, "text", "label", encoding_of(section, str(a)))["text"][0] == "Un film très réussi"
    texts = read_table(b, "text", "label", encoding_of(section, str(b)))["text"].tolist()
    assert texts == ["Crème brûlée for the soul", "A dull “thriller”"]


def test_one_encoding_for_a_mixed_source_is_refused_never_garbled(tmp_path):
    a = write(tmp_path / "a.csv", UTF8, "utf-8")
    b = write(tmp_path / "b.csv", CP1252, "cp1252")
    with pytest.raises(DataError, match=rf"{b}: line 2: byte 0xe8 at offset \d+ is not valid utf-8"):
        read_table(b, "text", "label", "utf-8")
    # cp1252 decodes any byte: the UTF-8 file would come out as "trÃ¨s", so it is refused
    with pytest.raises(DataError, match=rf"{a}: line 2: the file is valid UTF-8 .* declared cp1252"):
        read_table(a, "text", "label", "cp1252")


@pytest.mark.parametrize("suffix", [".csv", ".txt", ".parquet"])
def test_a_text_with_replacement_characters_is_refused_with_its_line(tmp_path, suffix):
    path = tmp_path / f"x{suffix}"
    texts = ["fine text", "lost \ufffd bytes"]
    if suffix == ".parquet":
        pd.DataFrame({"text": texts, "label": ["pos", "neg"]}).to_parquet(path)
    elif suffix == ".csv":
        write(path, [f"{t},pos" for t in texts], "utf-8")
    else:
        path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    where = "row 2" if suffix == ".parquet" else ("line 3" if suffix == ".csv" else "line 2")
    with pytest.raises(DataError, match=rf"{path}: {where}: a text holds U\+FFFD"):
        read_table(path, "text", "label" if suffix != ".txt" else None)


@pytest.mark.parametrize(
    ("encoding", "message"),
    [
        (
            {"data/raw/other.csv": "cp1252"},
            r"encoding\[data/raw/other.csv\]: data/raw/other.csv is not one of",
        ),
        ({"data/raw/a.csv": "klingon"}, r"encoding\[data/raw/a.csv\]: unknown encoding 'klingon'"),
        ("klingon", r"prepare.sentiment.encoding: unknown encoding 'klingon'"),
    ],
)
def test_a_bad_per_file_encoding_names_its_key(tmp_path, encoding, message):
    params = params_with(tmp_path, {"files": {"train": "data/raw/a.csv"}, "encoding": encoding})
    with pytest.raises(ParamsError, match=message):
        load_params(params)


def test_a_symlink_out_of_data_raw_is_refused_by_name_without_its_content(tmp_path):
    secret = tmp_path / "outside" / "secret.csv"
    write(secret, ["SECRET-FIRST-LINE,pos"], "utf-8")
    root = tmp_path / "repo"
    (root / "data/raw").mkdir(parents=True)
    os.symlink(secret, root / "data/raw/train.csv")
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    params = params_with(root, {"files": {"train": "data/raw/train.csv"}})
    result = subprocess.run(
        [sys.executable, str(REPO / "stages/prepare.py"), "--params", str(params), "--out", "o"]
        + ["--reports", "r", "--raw", "data/raw"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "TINYTF_TRACKING": "0"},
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert "prepare.sentiment.files.train: data/raw/train.csv is a symlink" in result.stderr
    assert "SECRET" not in result.stderr and "outside/secret" not in result.stderr
    assert not (root / "o").exists()
