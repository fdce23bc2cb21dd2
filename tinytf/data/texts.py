"""Texts from a user: the arguments and files of `tinytf score` / `tinytf predict`, and the rows
posted to the served champion, checked before any model runs, so a bad one is a sentence naming
it instead of a traceback or a silent answer."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from tinytf.errors import DataError

# the served model's limits per request (tinytf.tracking.champion_model): `mlflow models serve` (uvicorn)
# caps neither the body nor the rows, so one request could hold the worker for minutes
MAX_TEXTS = 1000
MAX_CHARS = 100_000  # far beyond a review; the model reads only its first max_length tokens
# and the request as a whole: the tokenizer holds about a hundred times a request's bytes while it
# encodes, so the total is bounded first by bytes, before any encoding, then by the tokens they gave
MAX_REQUEST_BYTES = 1_000_000  # UTF-8 bytes of all texts together
MAX_REQUEST_TOKENS = 250_000  # tokens of all texts together

UTF8_ARGUMENT = "pass UTF-8 text, or put it in a UTF-8 file and use --file PATH"


def from_command_line(texts: list[str], files: list[str]) -> tuple[list[str], list[str]]:
    """The texts of the TEXT arguments, then one per --file (`-` is stdin), each with the name a
    message gives it ("text 2", "reviews.txt"); every one checked to be UTF-8 and not blank."""
    named = [(f"text {i}", text) for i, text in enumerate(texts, 1)]
    named += [("stdin" if f == "-" else f, read_file(f)) for f in files]
    if not named:
        raise DataError("no text given: pass one or more TEXT arguments, or --file PATH (- reads stdin)")
    for name, text in named:
        refuse_undecodable(name, text)
        refuse_blank(name, text)
    return [name for name, _ in named], [text for _, text in named]


def read_file(path: str) -> str:
    """A whole file (or stdin for `-`) as one text, decoded as UTF-8 (a byte-order mark is skipped)."""
    name = "stdin" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: a folder; --file takes a text file") from None
    except PermissionError:
        raise DataError(f"{path}: permission denied; make it readable for this user") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{name}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not valid UTF-8; "
            f"save the text as UTF-8 (e.g. iconv -f cp1252 -t utf-8)"
        ) from None


def refuse_undecodable(name: str, text: str, fix: str = UTF8_ARGUMENT) -> None:
    """Bytes that are not UTF-8 reach Python's argv as lone surrogates (and JSON can spell them
    too); the tokenizer and the terminal would stop on them with a TypeError or UnicodeEncodeError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        what = (
            f"byte 0x{code - 0xDC00:02x} is not valid UTF-8"
            if 0xDC80 <= code <= 0xDCFF  # how Python decodes a byte it cannot read (surrogateescape)
            else f"an unpaired surrogate U+{code:04X} is not text"
        )
        raise DataError(f"{name}: {what} (at character {exc.start}); {fix}") from None


def refuse_blank(name: str, text: str) -> None:
    if not text.strip():
        what = "empty" if not text else "only whitespace"
        raise DataError(f"{name} is {what}: there is nothing to read; give a text with words in it")


def row_names(count: int, field: str = "text") -> list[str]:
    return [f"'{field}' of row {i}" for i in range(count)]


def check_rows(values: list, names: list[str]) -> None:
    """The rows of a request to the served model: strings, not blank, within the limits above."""
    if len(values) > MAX_TEXTS:
        raise DataError(f"{len(values)} rows in one request; at most {MAX_TEXTS}: send them in parts")
    for name, value in zip(names, values, strict=True):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            raise DataError(f"{name} is null; every row needs a text")
        if not isinstance(value, str):
            raise DataError(f"{name} is {type(value).__name__} {value!r}; expected a string")
        refuse_undecodable(name, value, "send UTF-8 text")
        refuse_blank(name, value)
        if len(value) > MAX_CHARS:
            raise DataError(f"{name} has {len(value):,} characters; at most {MAX_CHARS:,} per text")
    total = sum(len(value.encode("utf-8")) for value in values)
    if total > MAX_REQUEST_BYTES:
        raise DataError(
            f"the request's texts hold {total:,} bytes; at most {MAX_REQUEST_BYTES:,} a request: send them in parts"
        )


def check_request_tokens(ids: list[list[int]]) -> None:
    """The request's tokens together, once encoded (see MAX_REQUEST_TOKENS)."""
    total = sum(len(row) for row in ids)
    if total > MAX_REQUEST_TOKENS:
        raise DataError(
            f"the request's texts give {total:,} tokens; at most {MAX_REQUEST_TOKENS:,} a request: send them in parts"
        )


def refuse_tokenless(names: list[str], texts: list[str], ids: list[list[int]], tokenizer: str) -> None:
    """A text can be non-blank yet give no tokens (control characters a normalizer drops)."""
    for name, text, row in zip(names, texts, ids, strict=True):
        if not row:
            raise DataError(f"{name} ({text[:20]!r}) gives no tokens under {tokenizer}; nothing to read")


def shown(text: str, width: int = 60) -> str:
    """A text as one line of at most `width` characters, for a table beside its scores."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
