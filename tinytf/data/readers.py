"""Parsers for bring-your-own data and for the line formats of the built-in sources.

Formats by extension: .csv, .tsv, .parquet, .jsonl (one JSON object a line) and .txt
(one text a line; for labelled data `LABEL<space>text`, the SST-2 layout). Every reader
returns a DataFrame with a `text` column, a `label` column when asked for, and a `row`
column with the 1-based line or row in the source file, so that later checks can say
exactly where a bad value is.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tinytf.errors import DataError

FORMATS = (".csv", ".tsv", ".parquet", ".jsonl", ".txt")


def decode(path: Path, raw: bytes, encoding: str) -> str:
    """Decode strictly; on failure name the file, line and byte so the user can find it."""
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(
            f"{path}: line {line}: byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid "
            f"{encoding}; re-save the file as UTF-8 or set the source's `encoding` param "
            f"(e.g. cp1252)"
        ) from None
    except LookupError:
        raise DataError(f"{path}: unknown encoding '{encoding}'") from None


def read_text_file(path: str | Path, encoding: str = "utf-8") -> str:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")
    return decode(path, path.read_bytes(), encoding)


def parse_label_lines(path: str | Path, text: str) -> pd.DataFrame:
    """`LABEL<space>sentence` per line (SST-2's stsa.binary.* layout)."""
    rows, labels, texts = [], [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label, sep, sentence = line.strip().partition(" ")
        if not sep or not sentence.strip():
            raise DataError(f"{path}: line {number}: expected 'LABEL text', got {line[:60]!r}")
        rows.append(number)
        labels.append(label)
        texts.append(sentence.strip())
    return pd.DataFrame({"text": texts, "label": labels, "row": rows})


def parse_text_lines(text: str) -> pd.DataFrame:
    """One document per non-empty line; surrounding whitespace dropped."""
    rows, texts = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped:
            rows.append(number)
            texts.append(stripped)
    return pd.DataFrame({"text": texts, "row": rows})


def read_table(
    path: str | Path,
    text_column: str,
    label_column: str | None = None,
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read any supported file into columns text[, label], row."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataError(f"{path}: unsupported format '{suffix}'; use one of {', '.join(FORMATS)}")
    if suffix == ".txt":
        text = read_text_file(path, encoding)
        return parse_label_lines(path, text) if label_column else parse_text_lines(text)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise DataError(f"{path}: not a readable parquet file: {exc}") from None
        frame = frame.reset_index(drop=True)
        frame["row"] = frame.index + 1
    else:
        import io

        text = read_text_file(path, encoding)
        try:
            if suffix == ".jsonl":
                frame = pd.read_json(io.StringIO(text), lines=True)
            else:
                frame = pd.read_csv(io.StringIO(text), sep="\t" if suffix == ".tsv" else ",")
        except ValueError as exc:
            raise DataError(f"{path}: could not parse as {suffix[1:]}: {exc}") from None
        # rows are 1-based data lines; csv/tsv have a header line before them
        frame["row"] = frame.index + (2 if suffix in (".csv", ".tsv") else 1)
    wanted = [text_column] + ([label_column] if label_column else [])
    for column in wanted:
        if column not in frame.columns:
            found = ", ".join(str(c) for c in frame.columns if c != "row")
            raise DataError(f"{path}: column '{column}' not found; columns are: {found}")
    out = pd.DataFrame({"text": frame[text_column], "row": frame["row"]})
    if label_column:
        out["label"] = frame[label_column]
    missing = out["text"].isna()
    if missing.any():
        row = int(out.loc[missing, "row"].iloc[0])
        raise DataError(f"{path}: row {row}: empty value in text column '{text_column}'")
    out["text"] = out["text"].astype(str).str.strip()
    return out


def map_labels(
    splits: dict[str, pd.DataFrame],
    files: dict[str, str],
    classes: list[str] | None = None,
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Turn raw labels into ids 0..K-1 and return the class names in id order.

    With `classes` given, every label must be one of them. Otherwise the classes are
    the sorted distinct labels of the train split (numbers sort numerically), and a label
    in validation or test that train never shows is an error: the model could not
    predict it and its metrics would silently lie.
    """
    if not classes:
        train = splits["train"]["label"]
        if train.isna().any():
            row = int(splits["train"].loc[train.isna(), "row"].iloc[0])
            raise DataError(f"{files['train']}: row {row}: empty label")
        distinct = pd.unique(train)
        numeric = pd.api.types.is_numeric_dtype(train) and not pd.api.types.is_bool_dtype(train)
        distinct = sorted(distinct) if numeric else sorted(str(v) for v in distinct)
        classes = [_label_name(v) for v in distinct]
    index = {name: i for i, name in enumerate(classes)}
    mapped = {}
    for split, frame in splits.items():
        names = frame["label"].map(_label_name)
        unknown = ~names.isin(index)
        if unknown.any():
            first = frame.loc[unknown].iloc[0]
            raise DataError(
                f"{files.get(split, split)}: row {int(first['row'])}: label {first['label']!r} "
                f"is not a known class; classes are {classes}"
            )
        out = frame.copy()
        out["label"] = names.map(index).astype("int64")
        mapped[split] = out
    return mapped, classes


def _label_name(value) -> str:
    # 1 and 1.0 and "1" are one class: pandas reads an int column with gaps as floats
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
