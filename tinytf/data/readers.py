"""Readers of bring-your-own files (the formats' table is in docs/data.md) and of the built-in
sources' line formats. `csv` and `json`, not pandas' readers: they stream and tell the line a record
starts on (a quoted field may span lines), which an error must name. Every reader returns `text`,
`row` (the line, or the 1-based parquet row) and `label` when asked for (the class name as a
string); an empty text is kept so the caller can count what it drops.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from tinytf.errors import DataError

FORMATS = (".csv", ".tsv", ".parquet", ".jsonl", ".txt")
# a quoted field longer than this is almost surely a quote left open many lines above
FIELD_LIMIT = 1 << 24
PARQUET_BATCH_ROWS = 65_536


def position(path) -> str:
    """What a row number counts in this file: lines of a text format, rows of a parquet file."""
    return "row" if ".parquet" in str(path).lower() else "line"


def _check_file(path: Path) -> None:
    if not path.exists():
        raise DataError(f"{path}: file not found")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")


def _open_text(path: Path, encoding: str):
    _check_file(path)
    try:
        # utf-8-sig drops the byte-order mark spreadsheet programs put before the header
        codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
        return open(path, encoding=codec, newline="")
    except LookupError:
        raise DataError(f"{path}: unknown encoding '{encoding}'") from None


def _decode_error(path: Path, encoding: str) -> DataError:
    """The streaming decoder fails a chunk ahead of the parser: the bytes decoded again name the
    line and byte, so the user can find it."""
    raw = path.read_bytes()
    try:
        raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return DataError(
            f"{path}: line {line}: byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid "
            f"{encoding}; re-save the file as UTF-8 or set the source's `encoding` param (e.g. cp1252)"
        )
    except LookupError:
        return DataError(f"{path}: unknown encoding '{encoding}'")
    return DataError(f"{path}: not valid {encoding}")


def _frame(texts: list[str], rows, labels: list[str] | None) -> pd.DataFrame:
    frame = pd.DataFrame({"text": texts, "row": rows})
    if labels is not None:
        frame["label"] = labels
    return frame


def label_name(value, path, row: int, column: str) -> str:
    """The class name of one raw label: 1, 1.0 and "1" are one class (pandas and JSON write whole
    numbers either way); a missing value, a fraction or a nested value is an error naming where."""
    where = f"{path}: {position(path)} {row}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise DataError(f"{where}: the label ('{column}') is missing; every row needs one")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        raise DataError(f"{where}: label {value!r} is a fraction; a label is a class name or a whole number")
    if isinstance(value, str):
        name = value.strip()
        if not name:
            raise DataError(f"{where}: the label ('{column}') is empty; every row needs one")
        try:
            number = float(name)
        except ValueError:
            return name
        if math.isfinite(number) and number.is_integer():
            return str(int(number))
        raise DataError(f"{where}: label {name!r} is not a whole number or a class name")
    raise DataError(f"{where}: label {value!r} is a {type(value).__name__}, not a class name or a number")


def _text_value(value, path, row: int, column: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""  # an empty text: dropped and counted by the caller
    if not isinstance(value, str):
        raise DataError(
            f"{path}: line {row}: text ('{column}') is a {type(value).__name__}, expected a string"
        )
    return value.strip()


def _split_label_line(path, number: int, line: str) -> tuple[str, str]:
    label, sep, sentence = line.strip().partition(" ")
    if "\t" in label:  # LABEL<tab>text is the same layout
        label, _, rest = label.partition("\t")
        sentence = f"{rest} {sentence}".strip()
        sep = " "
    if not sep or not sentence.strip():
        raise DataError(
            f"{path}: line {number}: expected 'LABEL text', found one word {line.strip()[:60]!r}: "
            f"is its label or its text missing?"
        )
    return label_name(label, path, number, "first word"), sentence.strip()


def parse_label_lines(path: str | Path, text: str) -> pd.DataFrame:
    """`LABEL<space>sentence` per line (SST-2's stsa.binary.* layout); blank lines are skipped."""
    return _line_frame(path, enumerate(text.splitlines(), start=1), labelled=True)


def parse_text_lines(text: str) -> pd.DataFrame:
    """One document per non-blank line; surrounding whitespace dropped."""
    return _line_frame(None, enumerate(text.splitlines(), start=1), labelled=False)


def _line_frame(path, lines: Iterator[tuple[int, str]], labelled: bool) -> pd.DataFrame:
    rows, labels, texts = [], [], []
    for number, line in lines:
        if line.strip():
            label, text = _split_label_line(path, number, line) if labelled else (None, line.strip())
            rows.append(number)
            labels.append(label)
            texts.append(text)
    return pd.DataFrame(
        {"text": texts, "label": labels, "row": rows} if labelled else {"text": texts, "row": rows}
    )


def _read_txt(path: Path, labelled: bool, encoding: str) -> pd.DataFrame:
    with _open_text(path, encoding) as handle:
        try:
            # newline="" keeps "\r\n"; strip() removes it like any trailing whitespace
            lines = enumerate(handle, start=1)
            return _line_frame(path, lines, labelled)
        except UnicodeDecodeError:
            raise _decode_error(path, encoding) from None


def _columns_of(path, header: list[str], text_column: str, label_column: str | None) -> list[int]:
    if len(set(header)) != len(header):
        repeated = sorted({c for c in header if header.count(c) > 1})
        raise DataError(f"{path}: line 1: the header repeats column(s) {repeated}")
    wanted = [text_column] + ([label_column] if label_column else [])
    for column in wanted:
        if column not in header:
            raise DataError(f"{path}: column '{column}' not found; columns are: {', '.join(header)}")
    return [header.index(c) for c in wanted]


def _read_delimited(path: Path, text_column: str, label_column: str | None, encoding: str) -> pd.DataFrame:
    tsv = path.suffix.lower() == ".tsv"
    dialect = (
        {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
        if tsv
        else {"delimiter": ",", "quotechar": '"', "doublequote": True, "strict": True}
    )
    csv.field_size_limit(FIELD_LIMIT)
    texts, labels, rows = [], [], []
    names: dict[str, str] = {}  # raw label -> class name: a file has few distinct labels
    with _open_text(path, encoding) as handle:
        reader = csv.reader(handle, **dialect)
        start = 1
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{path}: the file is empty; expected a header line naming the columns")
            header = [name.strip() for name in header]
            index = _columns_of(path, header, text_column, label_column)
            start = reader.line_num + 1
            for record in reader:
                if not record or (len(record) == 1 and not record[0].strip()):
                    start = reader.line_num + 1
                    continue  # a blank line is not a row
                if len(record) != len(header):
                    raise DataError(_field_count_message(path, start, header, record, tsv))
                texts.append(record[index[0]].strip())
                if label_column:
                    raw = record[index[1]]
                    if (name := names.get(raw)) is None:
                        name = names[raw] = label_name(raw, path, start, label_column)
                    labels.append(name)
                rows.append(start)
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(_quote_message(path, start, reader.line_num, exc)) from None
        except UnicodeDecodeError:
            raise _decode_error(path, encoding) from None
    return _frame(texts, rows, labels if label_column else None)


def _field_count_message(path, line: int, header: list[str], record: list[str], tsv: bool) -> str:
    hint = (
        "a .tsv field cannot hold a tab"
        if tsv
        else 'a field holding a comma, a quote or a newline must be in double quotes, inner quotes doubled ("")'
    )
    return (
        f"{path}: line {line}: expected {len(header)} fields ({', '.join(header)}), found {len(record)}; "
        f"{hint}"
    )


def _quote_message(path, start: int, line: int, exc: csv.Error) -> str:
    reason = str(exc)
    if "unexpected end of data" in reason or "field larger than field limit" in reason:
        return (
            f"{path}: line {start}: a quoted field opened on this line is never closed "
            f"(the file ends, or {FIELD_LIMIT:,} characters pass, before its closing quote)"
        )
    return (
        f"{path}: line {line}: {reason}; in a .csv a field that starts with a double quote must end "
        f'with one, and a quote inside it is written twice (""). A file without quoting can be '
        f"saved as .tsv, where quotes are plain characters"
    )


def _read_jsonl(path: Path, text_column: str, label_column: str | None, encoding: str) -> pd.DataFrame:
    texts, labels, rows = [], [], []
    with _open_text(path, encoding) as handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(
                        f"{path}: line {number}: not valid JSON ({exc.msg}, column {exc.colno})"
                    ) from None
                if not isinstance(record, dict):
                    raise DataError(
                        f"{path}: line {number}: expected a JSON object, found {type(record).__name__}"
                    )
                for column in [text_column] + ([label_column] if label_column else []):
                    if column not in record:
                        keys = ", ".join(record) or "none"
                        raise DataError(f"{path}: line {number}: key '{column}' not found; keys are: {keys}")
                texts.append(_text_value(record[text_column], path, number, text_column))
                if label_column:
                    labels.append(label_name(record[label_column], path, number, label_column))
                rows.append(number)
        except UnicodeDecodeError:
            raise _decode_error(path, encoding) from None
    return _frame(texts, rows, labels if label_column else None)


def _read_parquet(path: Path, text_column: str, label_column: str | None) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_file(path)
    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{path}: not a readable parquet file: {exc}") from None
    names = handle.schema_arrow.names
    wanted = [text_column] + ([label_column] if label_column else [])
    for column in wanted:
        if column not in names:
            raise DataError(f"{path}: column '{column}' not found; columns are: {', '.join(names)}")
    text_type = handle.schema_arrow.field(text_column).type
    if not (
        pa.types.is_string(text_type) or pa.types.is_large_string(text_type) or pa.types.is_null(text_type)
    ):
        raise DataError(f"{path}: text column '{text_column}' holds {text_type}, expected strings")
    texts, labels = [], []
    for batch in handle.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=wanted):
        first = len(texts) + 1
        texts.extend("" if t is None else t.strip() for t in batch.column(0).to_pylist())
        if label_column:
            values = batch.column(1).to_pylist()
            labels.extend(label_name(v, path, first + i, label_column) for i, v in enumerate(values))
    return _frame(texts, range(1, len(texts) + 1), labels if label_column else None)


def read_table(
    path: str | Path,
    text_column: str,
    label_column: str | None = None,
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read any supported file into columns text, row[, label]; see the module docstring."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataError(f"{path}: unsupported format '{suffix}'; use one of {', '.join(FORMATS)}")
    if suffix == ".parquet":
        frame = _read_parquet(path, text_column, label_column)
    else:
        _refuse_utf8_read_as_other(path, encoding)
        if suffix == ".txt":
            frame = _read_txt(path, bool(label_column), encoding)
        elif suffix == ".jsonl":
            frame = _read_jsonl(path, text_column, label_column, encoding)
        else:
            frame = _read_delimited(path, text_column, label_column, encoding)
    _refuse_replacement_characters(path, frame)
    return frame


def _refuse_utf8_read_as_other(path: Path, encoding: str) -> None:
    """A UTF-8 file declared as a single-byte codec (cp1252, latin-1) decodes without an error but
    garbled ("Ã©" for "é"): non-ASCII bytes that are valid UTF-8 are almost never meant as cp1252,
    so such a file is refused, naming a line, instead of being read wrongly and silently."""
    _check_file(path)
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig", "ascii"):
        return
    raw = path.read_bytes()
    if raw.isascii():
        return
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return  # not UTF-8: the declared codec is plausible
    start = next(i for i, byte in enumerate(raw) if byte >= 0x80)
    line = raw[:start].count(b"\n") + 1
    raise DataError(
        f"{path}: line {line}: the file is valid UTF-8 with non-ASCII text, but is declared {encoding}, "
        f"which would read it garbled; set its encoding to utf-8 (per file: encoding: {{{path}: utf-8}})"
    )


def _refuse_replacement_characters(path: Path, frame: pd.DataFrame) -> None:
    """U+FFFD in a text means bytes were already lost: decoded under a wrong codec with
    errors="replace" before the file was saved. Kept, the texts would train as noise."""
    if frame.empty:  # an empty split has no text column dtype to search; prepare names it
        return
    bad = frame["text"].astype(str).str.contains("\ufffd", regex=False).to_numpy()
    if bad.any():
        row = frame["row"].to_numpy()[bad.argmax()]
        raise DataError(
            f"{path}: {position(path)} {row}: a text holds U+FFFD (the replacement character): its bytes "
            f"were lost when it was decoded under a wrong encoding; fix the text at its source"
        )
