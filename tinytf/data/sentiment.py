"""The sentiment splits as `tokenize` wrote them (token ids, labels, class names), and the same
splits encoded by another tokenizer (an external encoder's own) from `prepare`'s texts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tinytf.data.batching import PAD_ID, SentimentDataset
from tinytf.data.made import read_frame
from tinytf.data.splits import SPLITS
from tinytf.data.tokenizer import CLS, encode, load_tokenizer
from tinytf.errors import DataError


@dataclass
class SentimentData:
    splits: dict[str, SentimentDataset]
    classes: list[str]
    cls_id: int | None  # our tokenizer's [CLS] (first-token pooling prepends it); None for another's
    pad_id: int = PAD_ID
    # the splits encoded by other tokenizers, by name: a study's runs share one encoding
    encoded: dict[str, SentimentData] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def folder(data_dir: str | Path) -> Path:
        """Where `tokenize` wrote the splits' parquet files and labels.json under `data_dir`."""
        return Path(data_dir) / "tokens" / "sentiment"

    @classmethod
    def load(cls, data_dir: str | Path) -> SentimentData:
        root = cls.folder(data_dir)
        labels = root / "labels.json"
        if not labels.exists():
            raise DataError(f"{labels}: not found; run the prepare and tokenize stages first")
        classes = json.loads(labels.read_text())["classes"]
        splits = {s: SentimentDataset.from_parquet(root / f"{s}.parquet") for s in SPLITS}
        cls_id = load_tokenizer(Path(data_dir) / "tokenizer.json").token_to_id(CLS)
        return cls(splits, classes, cls_id)

    def encoded_with(self, data_dir: str | Path, tokenizer, pad_id: int, name: str) -> SentimentData:
        """These splits and labels (as `tokenize` numbered them, in file order), the texts encoded
        by `tokenizer` (special tokens added, truncated as it is set to) from `prepare`'s sentiment
        files; `name` keys the encoding, made once per tokenizer."""
        if name in self.encoded:
            return self.encoded[name]
        prepared = Path(data_dir) / "prepared" / "sentiment"
        splits = {}
        for split in SPLITS:
            texts = read_frame(prepared / f"{split}.parquet", "prepare", columns=["text"])["text"].tolist()
            labels = self.splits[split].labels
            if len(texts) != len(labels):
                raise DataError(
                    f"{prepared / split}.parquet: {len(texts)} texts but {len(labels)} tokenized labels"
                )
            splits[split] = SentimentDataset(encode(tokenizer, texts, add_special_tokens=True), list(labels))
        self.encoded[name] = SentimentData(splits, self.classes, None, pad_id)
        return self.encoded[name]

    def loader_options(self, pooling: str) -> dict:
        """How batches of this data are made for a model that pools by `pooling`: its pad id; our
        [CLS] prefix where it pools the first token."""
        return {"prefix_id": self.cls_id if pooling == "first" else None, "pad_id": self.pad_id}


def test_groups(data_dir: str | Path):
    """Each test text's movie (prepare's `group` column), where the data has one: the multi-bootstrap
    draws movies, not texts. None without one (each text is then its own cluster)."""
    test = Path(data_dir) / "prepared" / "sentiment" / "test.parquet"
    if not test.exists():
        return None
    frame = read_frame(test, "prepare")
    return frame["group"].to_numpy() if "group" in frame else None
