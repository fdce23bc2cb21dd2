import json

import pandas as pd
import pytest

from tinytf.data.readers import map_labels, read_table
from tinytf.errors import DataError

ROWS = [("a fine film", "pos"), ("dull and long", "neg"), ("so so", "mixed")]


def make(tmp_path, fmt: str) -> str:
    path = tmp_path / f"data.{fmt}"
    frame = pd.DataFrame(ROWS, columns=["review", "sentiment"])
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif fmt == "parquet":
        frame.to_parquet(path)
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps({"review": t, "sentiment": s}) for t, s in ROWS) + "\n")
    elif fmt == "txt":
        path.write_text("\n".join(f"{s} {t}" for t, s in ROWS) + "\n")
    return str(path)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "txt"])
def test_every_format_reads_text_label_and_row(tmp_path, fmt):
    frame = read_table(make(tmp_path, fmt), "review", "sentiment")
    assert frame["text"].tolist() == [t for t, _ in ROWS]
    assert frame["label"].tolist() == [s for _, s in ROWS]
    assert frame["row"].tolist() == ([2, 3, 4] if fmt in ("csv", "tsv") else [1, 2, 3])


def test_unlabelled_txt_is_one_text_per_line(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("first line\n\n  second line  \n")
    frame = read_table(path, "text")
    assert frame["text"].tolist() == ["first line", "second line"]
    assert frame["row"].tolist() == [1, 3]


def test_cp1252_file_names_line_and_byte(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_bytes("review,sentiment\nok,pos\ncaf\xe9 au lait,neg\n".encode("cp1252"))
    with pytest.raises(DataError, match=r"reviews.csv: line 3: byte 0xe9 .* not valid utf-8"):
        read_table(path, "review", "sentiment")
    # the same file reads fine once the encoding is declared
    frame = read_table(path, "review", "sentiment", encoding="cp1252")
    assert frame["text"].iloc[1] == "café au lait"


def test_missing_file_column_and_format(tmp_path):
    with pytest.raises(DataError, match="nope.csv: file not found"):
        read_table(tmp_path / "nope.csv", "text")
    with pytest.raises(DataError, match=r"column 'text' not found; columns are: review, sentiment"):
        read_table(make(tmp_path, "csv"), "text", "sentiment")
    with pytest.raises(DataError, match="unsupported format '.xlsx'"):
        read_table(tmp_path / "data.xlsx", "text")


def test_empty_text_value_names_the_row(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,label\nfine,1\n,0\n")
    with pytest.raises(DataError, match="data.csv: row 3: empty value in text column 'text'"):
        read_table(path, "text", "label")


def test_malformed_sst_line(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("1 good\n0\n")
    with pytest.raises(DataError, match="data.txt: line 2: expected 'LABEL text'"):
        read_table(path, "text", "label")


def splits_of(train, validation, test):
    def frame(labels):
        return pd.DataFrame(
            {"text": [f"t{i}" for i in range(len(labels))], "label": labels, "row": range(1, len(labels) + 1)}
        )

    return {"train": frame(train), "validation": frame(validation), "test": frame(test)}


def test_string_labels_map_to_sorted_ids_with_three_classes():
    mapped, classes = map_labels(splits_of(["pos", "neg", "mixed"], ["neg"], ["pos"]), {})
    assert classes == ["mixed", "neg", "pos"]
    assert mapped["train"]["label"].tolist() == [2, 1, 0]
    assert mapped["test"]["label"].dtype == "int64"


def test_integer_labels_keep_numeric_order():
    mapped, classes = map_labels(splits_of([10, 2, 2], [10], [2]), {})
    assert classes == ["2", "10"]
    assert mapped["train"]["label"].tolist() == [1, 0, 0]


def test_label_outside_classes_names_file_and_row():
    files = {"train": "train.csv", "validation": "dev.csv", "test": "test.csv"}
    with pytest.raises(DataError, match=r"test.csv: row 2: label 'meh' is not a known class"):
        map_labels(splits_of(["pos", "neg"], ["neg"], ["pos", "meh"]), files)
    with pytest.raises(
        DataError, match=r"train.csv: row 1: label 'good' is not a known class; classes are \['neg', 'pos'\]"
    ):
        map_labels(splits_of(["good"], ["neg"], ["pos"]), files, ["neg", "pos"])
