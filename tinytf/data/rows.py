"""What happens to every row of a bring-your-own file: kept in a split, or dropped for a reason the
data card counts. Texts are compared as the tokenizer normalises them: two texts the model reads as
the same tokens are one, so a test review is never also a train review."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

DROP_REASONS = ("empty text", "repeated text", "text also in validation or test", "beyond max_rows")
TextKey = Callable[[pd.Series], pd.Series]
# control characters (not tab, newline, carriage return): the BERT normalizer deletes them
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_key(kind: str = "bpe", lowercase: bool = True) -> TextKey:
    """The texts as the normalizer of `tokenize.kind`/`lowercase` sees them. HF's `normalize_str` is
    slow (it tracks offsets), so each distinct text is normalised once, and an ASCII text without
    control characters, which either normalizer can only lowercase, takes Python's `lower()`; a
    test checks both paths agree."""
    from tinytf.data.tokenizer import build_tokenizer
    from tinytf.params.config import TokenizeParams

    normalizer = build_tokenizer(TokenizeParams(kind=kind, lowercase=lowercase))[0].normalizer

    memo: dict[str, str] = {}  # a text recurs across splits, in-domain copies and the card

    def one(text: str) -> str:
        if (known := memo.get(text)) is not None:
            return known
        if text.isascii() and not CONTROL.search(text):
            normal = " ".join((text.lower() if lowercase else text).split())
        else:
            normal = " ".join(normalizer.normalize_str(text).split())
        memo[text] = normal
        return normal

    def key(texts: pd.Series) -> pd.Series:
        codes, distinct = pd.factorize(texts)
        # tolist(): iterating pandas 3's arrow-backed strings one by one is much slower
        keys = np.array([one(text) for text in distinct.tolist()], dtype=object)
        return pd.Series(keys[codes], index=texts.index, dtype=object)

    return key


def describe_rule(kind: str, lowercase: bool) -> str:
    steps = "NFKC" if kind == "bpe" else "BERT's clean-up, accent stripping"
    return f"as the {kind} tokenizer reads them: {steps}{', lowercasing' if lowercase else ''}, whitespace collapsed"


@dataclass
class RowLedger:
    """Rows read from each file, and where each went; `check()` proves none went missing."""

    files: dict[str, dict] = field(default_factory=dict)

    def read(self, path: str, rows: int) -> None:
        self.files[path] = {"read": rows, "dropped": dict.fromkeys(DROP_REASONS, 0), "kept": {}}

    def drop(self, path: str, reason: str, rows: int) -> None:
        self.files[path]["dropped"][reason] += int(rows)

    def keep(self, path: str, split: str, rows: int) -> None:
        self.files[path]["kept"][split] = int(rows)

    def note(self, path: str, name: str, value: int) -> None:
        self.files[path][name] = int(value)

    def check(self) -> dict:
        for path, entry in self.files.items():
            accounted = sum(entry["dropped"].values()) + sum(entry["kept"].values())
            if accounted != entry["read"]:  # a bug in prepare, never the user's data
                raise RuntimeError(f"{path}: {entry['read']} rows read but {accounted} accounted for")
        return self.files


def drop_empty_and_repeated(frame: pd.DataFrame, path: str, ledger: RowLedger, key: TextKey) -> pd.DataFrame:
    """Drop empty texts and later copies of a text (keeping the first); count both, and the copies
    whose label differs from the kept one's."""
    empty = frame["text"].eq("").to_numpy()
    ledger.drop(path, "empty text", empty.sum())
    frame = frame[~empty].reset_index(drop=True)
    frame = frame.assign(key=key(frame["text"]))
    repeated = frame["key"].duplicated().to_numpy()
    ledger.drop(path, "repeated text", repeated.sum())
    if "label" in frame:
        first_label = frame.groupby("key", sort=False)["label"].transform("first")
        ledger.note(path, "repeats with another label", (repeated & (frame["label"] != first_label)).sum())
    return frame[~repeated].reset_index(drop=True)


def word_counts(texts: pd.Series) -> pd.Series:
    """Whitespace-separated words per text, counted once per distinct text: the LM's train split
    holds `repeat` copies of the in-domain texts, and `.str.split()` would build every word list."""
    codes, distinct = pd.factorize(texts)
    counts = np.fromiter(
        (len(text.split()) for text in distinct.tolist()), dtype=np.int64, count=len(distinct)
    )
    return pd.Series(counts[codes], index=texts.index)
