import json

import pandas as pd
import pytest

from tinytf.data.labels import map_labels
from tinytf.data.readers import read_table
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


def test_empty_and_whitespace_texts_are_read_as_empty_for_the_caller_to_count(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,label\nfine,1\n,0\n   ,1\n")
    frame = read_table(path, "text", "label")
    assert frame["text"].tolist() == ["fine", "", ""] and frame["row"].tolist() == [2, 3, 4]


def test_malformed_sst_line(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("1 good\n0\n")
    with pytest.raises(DataError, match="data.txt: line 2: expected 'LABEL text', found one word '0'"):
        read_table(path, "text", "label")


def splits_of(train, validation, test):
    def frame(labels):
        return pd.DataFrame(
            {"text": [f"t{i}" for i in range(len(labels))], "label": labels, "row": range(1, len(labels) + 1)}
        )

    return {"train": frame(train), "validation": frame(validation), "test": frame(test)}


def test_string_labels_map_to_sorted_ids_with_three_classes():
    mapped, classes = map_labels(splits_of(["pos", "neg", "mixed"], ["neg", "pos"], ["pos", "mixed"]), {})
    assert classes == ["mixed", "neg", "pos"]
    assert mapped["train"]["label"].tolist() == [2, 1, 0]
    assert mapped["test"]["label"].dtype == "int64"


def test_integer_labels_keep_numeric_order():
    mapped, classes = map_labels(splits_of([10, 2, 2], [10, 2], [2, 10]), {})
    assert classes == ["2", "10"]
    assert mapped["train"]["label"].tolist() == [1, 0, 0]


def test_label_outside_classes_names_file_and_row():
    files = {"train": "train.csv", "validation": "dev.csv", "test": "test.csv"}
    with pytest.raises(DataError, match=r"test.csv: line 2: label 'meh' is not a known class"):
        map_labels(splits_of(["pos", "neg"], ["neg"], ["pos", "meh"]), files)
    with pytest.raises(
        DataError, match=r"train.csv: line 1: label 'good' is not a known class; classes are \['neg', 'pos'\]"
    ):
        map_labels(splits_of(["good"], ["neg"], ["pos"]), files, ["neg", "pos"])


def test_a_split_with_one_class_is_refused_naming_the_file_and_the_class():
    files = {"train": "train.csv", "validation": "train.csv (validation part)", "test": "test.csv"}
    with pytest.raises(DataError, match=r"train.csv: split 'train' holds only class 'pos' \(3 rows\)"):
        map_labels(splits_of(["pos", "pos", "pos"], ["pos", "neg"], ["neg", "pos"]), files)
    with pytest.raises(
        DataError, match=r"train.csv \(validation part\): split 'validation' holds only class 'neg'"
    ):
        map_labels(splits_of(["pos", "neg"], ["neg", "neg"], ["neg", "pos"]), files, ["neg", "pos"])
    with pytest.raises(
        DataError, match=r"test.csv: split 'test' holds only class '1'.*two classes in every split"
    ):
        map_labels(splits_of([0, 1], [1, 0], [1.0]), files)
    mapped, _ = map_labels(splits_of(["pos", "neg"], ["neg", "pos"], []), files)  # empty: the caller says so
    assert mapped["test"].empty


def test_tsv_quotes_are_data_and_no_row_is_merged(tmp_path):
    # the bug report: one tsv text starting with a quote swallowed the next 30 rows, labels included
    lines = ["text\tlabel"] + [f"review {i}\t{i % 2}" for i in range(400)]
    lines[11] = '"wow\t1'
    lines[51] = '"wow"\t0'
    path = tmp_path / "train.tsv"
    path.write_text("\n".join(lines) + "\n")
    frame = read_table(path, "text", "label")
    assert len(frame) == 400
    assert frame.loc[frame["row"] == 12, "text"].item() == '"wow'
    assert frame.loc[frame["row"] == 52, "text"].item() == '"wow"'


def test_csv_quoted_fields_hold_commas_newlines_and_quotes_and_rows_are_start_lines(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('text,label\n"a, b",1\n"two\nlines",0\n"say ""hi""",1\nplain,0\n')
    frame = read_table(path, "text", "label")
    assert frame["text"].tolist() == ["a, b", "two\nlines", 'say "hi"', "plain"]
    assert frame["row"].tolist() == [2, 3, 5, 6]


def test_csv_stray_quote_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('text,label\nfine,1\n"wow" she said,1\n')
    with pytest.raises(DataError, match=r"train.csv: line 3: .*must end with one"):
        read_table(path, "text", "label")


def test_csv_unclosed_quote_names_the_line_it_opens_on(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('text,label\nfine,1\n"never closed,1\nmore,0\n')
    with pytest.raises(
        DataError, match=r"train.csv: line 3: a quoted field opened on this line is never closed"
    ):
        read_table(path, "text", "label")


@pytest.mark.parametrize("fmt,line", [("csv", "a,b,1"), ("tsv", "a\tb\t1")])
def test_wrong_field_count_names_the_line(tmp_path, fmt, line):
    sep = "," if fmt == "csv" else "\t"
    path = tmp_path / f"train.{fmt}"
    path.write_text(f"text{sep}label\nfine{sep}1\n{line}\n")
    with pytest.raises(DataError, match=rf"train.{fmt}: line 3: expected 2 fields \(text, label\), found 3"):
        read_table(path, "text", "label")


def test_csv_with_byte_order_mark_finds_its_first_column(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbftext,label\nfine,1\n")
    assert read_table(path, "text", "label")["text"].tolist() == ["fine"]


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"text": "a", "label": 1}\n{"text": "b", "label": 1\n', r"line 2: not valid JSON"),
        ('{"text": "a", "label": 1}\n["b", 1]\n', r"line 2: expected a JSON object, found list"),
        (
            '{"text": "a", "label": 1}\n{"body": "b", "label": 1}\n',
            r"line 2: key 'text' not found; keys are: body",
        ),
        ('{"text": 5, "label": 1}\n', r"line 1: text \('text'\) is a int, expected a string"),
        ('{"text": "a", "label": null}\n', r"line 1: the label \('label'\) is missing"),
        ('{"text": "a", "label": NaN}\n', r"line 1: the label \('label'\) is missing"),
        ('{"text": "a", "label": 0.5}\n', r"line 1: label 0.5 is a fraction"),
        ('{"text": "a", "label": [1]}\n', r"line 1: label \[1\] is a list"),
    ],
)
def test_bad_jsonl_lines_name_the_line(tmp_path, content, message):
    path = tmp_path / "train.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=rf"train.jsonl: {message}"):
        read_table(path, "text", "label")


def test_missing_labels_are_errors_in_every_format(tmp_path):
    csv_path = tmp_path / "train.csv"
    csv_path.write_text("text,label\nfine,1\nno label here,\n")
    with pytest.raises(DataError, match=r"train.csv: line 3: the label \('label'\) is empty"):
        read_table(csv_path, "text", "label")
    parquet_path = tmp_path / "train.parquet"
    pd.DataFrame({"text": ["a", "b", "c"], "label": [1.0, None, 0.0]}).to_parquet(parquet_path)
    with pytest.raises(DataError, match=r"train.parquet: row 2: the label \('label'\) is missing"):
        read_table(parquet_path, "text", "label")


def test_whole_number_labels_are_one_class_however_written(tmp_path):
    path = tmp_path / "train.parquet"
    pd.DataFrame({"text": ["a", "b"], "label": [1.0, 0.0]}).to_parquet(path)
    assert read_table(path, "text", "label")["label"].tolist() == ["1", "0"]
    csv_path = tmp_path / "train.csv"
    csv_path.write_text("text,label\na,1.0\nb, 0\n")
    assert read_table(csv_path, "text", "label")["label"].tolist() == ["1", "0"]


def test_parquet_text_column_must_hold_strings(tmp_path):
    path = tmp_path / "train.parquet"
    pd.DataFrame({"text": [1, 2], "label": [1, 0]}).to_parquet(path)
    with pytest.raises(DataError, match=r"train.parquet: text column 'text' holds int64, expected strings"):
        read_table(path, "text", "label")


def test_an_id_column_chosen_as_label_is_refused():
    train = pd.DataFrame(
        {"text": [f"t{i}" for i in range(200)], "label": [str(i) for i in range(200)], "row": 1}
    )
    frames = {"train": train, "validation": train.head(1), "test": train.head(1)}
    with pytest.raises(DataError, match=r"200 distinct values in 200 rows: an id or a text column"):
        map_labels(frames, {"train": "train.csv"})


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "txt"])
def test_the_readme_example_of_each_format_reads_the_same_reviews(fmt):
    from tests.helpers.paths import REPO

    frame = read_table(REPO / f"data/raw/examples/reviews.{fmt}", "review", "label")
    texts = [" ".join(t.split()) for t in frame["text"]]
    assert texts == [
        'Gripping, if long: "the best" of the year',
        "A dull film that never ends",
        '"Wow" is all I can say',
        "It's fine.",
    ]
    assert frame["label"].tolist() == ["pos", "neg", "pos", "neg"]
