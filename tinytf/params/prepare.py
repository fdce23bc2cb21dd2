"""The `prepare` section of params.yaml: where the data comes from. A key only `source: files` reads,
set beside another source, is an error rather than silently ignored; so are two splits read from
one file, or split fractions when no split is carved. Each message names the key that settles it."""

from __future__ import annotations

import codecs
from dataclasses import asdict, dataclass, field
from typing import Literal

from tinytf.errors import ParamsError
from tinytf.params.schema import bounded


@dataclass
class SplitFractions:
    validation: float = bounded(0.1, gt=0, lt=1)
    test: float = bounded(0.1, gt=0, lt=1)

    def validate(self, key: str, file: str) -> None:
        if self.validation + self.test >= 1:
            raise ParamsError(
                f"{file}: {key}: validation + test must be below 1, got {self.validation} + {self.test}"
            )


@dataclass
class FileSplits:
    """Paths of a bring-your-own dataset; a missing validation/test split is carved from train."""

    train: str | None = None
    validation: str | None = None
    test: str | None = None


CorpusSourceName = Literal["ptb", "files"]
SentimentSourceName = Literal["rt_critic_snippets", "sst2", "files"]
# one encoding for every file of a source, or one per file ({data/raw/a.csv: cp1252}; others UTF-8)
Encoding = str | dict[str, str]


@dataclass
class InDomainParams:
    """Unlabelled review text added to the language model's train split (never its validation or
    test, so PTB perplexities stay comparable). Labels are never read; a text equal to a
    sentiment validation or test text is dropped, and the data card reports the check."""

    sentiment_train: bool = True  # the sentiment train split's texts
    plot_rows: bool = True  # rt_critic_snippets only: the movie synopses the classifier never sees
    # IMDB's 50k unlabelled reviews (about 15M tokens): the Stanford archive, or TINYTF_MIRROR/imdb/
    imdb_unlabelled: bool = False
    files: list[str] = bounded([])  # more unlabelled text (any reader format), corpus.text_column
    # copies of the in-domain text in the train split: the share of review text the LM sees
    repeat: int = bounded(8, ge=1, le=100)


def _null_is_default(section, names: tuple[str, ...]) -> None:
    """params.yaml lists the keys `source: files` reads with `null` beside a built-in source, so
    that `dvc exp run -S` can set them (DVC adds no key a file lacks without Hydra's `+`); null
    means the field's default, so the file reads as if the key were left out."""
    fresh = type(section)()
    for name in names:
        if getattr(section, name) is None:
            setattr(section, name, getattr(fresh, name))


@dataclass
class CorpusParams:
    source: CorpusSourceName = "ptb"
    in_domain: InDomainParams = field(default_factory=InDomainParams)
    files: FileSplits = field(default_factory=FileSplits)
    text_column: str | None = "text"  # null: the default
    encoding: Encoding | None = "utf-8"
    split: SplitFractions = field(default_factory=lambda: SplitFractions(0.05, 0.05))
    # 0 keeps everything; a positive number keeps the first N rows of each split (tiny presets)
    max_rows: int = bounded(0, ge=0)

    def validate(self, key: str, file: str) -> None:
        _null_is_default(self, ("text_column", "encoding"))
        # text_column and encoding also read in_domain.files, so they may be set beside ptb then
        keys = ("text_column", "encoding") if not self.in_domain.files else ()
        check_source(self, key, file, official_splits=self.source == "ptb", file_keys=keys)
        check_encodings(self, [*self.in_domain.files], key, file)


@dataclass
class SentimentParams:
    # rt_critic_snippets, not Hugging Face's `rotten_tomatoes` (Pang & Lee's 10,662 sentences)
    source: SentimentSourceName = "rt_critic_snippets"
    files: FileSplits = field(default_factory=FileSplits)
    text_column: str | None = "text"  # null: the default
    label_column: str | None = "label"
    # class names in id order; empty (or null) means "infer": integers are kept, strings are sorted
    labels: list[str] | None = bounded([])
    encoding: Encoding | None = "utf-8"
    split: SplitFractions = field(default_factory=SplitFractions)
    max_rows: int = bounded(0, ge=0)

    def validate(self, key: str, file: str) -> None:
        keys = ("text_column", "label_column", "labels", "encoding")
        _null_is_default(self, keys)
        check_source(self, key, file, official_splits=self.source == "sst2", file_keys=keys)
        if self.source != "files":
            return
        check_encodings(self, [], key, file)
        if self.text_column == self.label_column:
            raise ParamsError(
                f"{file}: {key}: text_column and label_column are both '{self.text_column}'; "
                f"a text cannot be its own label"
            )
        repeated = sorted({name for name in self.labels if self.labels.count(name) > 1})
        if repeated:
            raise ParamsError(f"{file}: {key}.labels: {repeated} listed twice; each class once, in id order")


@dataclass
class PrepareParams:
    corpus: CorpusParams = field(default_factory=CorpusParams)
    sentiment: SentimentParams = field(default_factory=SentimentParams)


def encoding_of(section, path: str) -> str:
    """The encoding `path` is read with: the section's one, or its entry in a per-file mapping
    (files not listed there are UTF-8)."""
    if isinstance(section.encoding, dict):
        return section.encoding.get(str(path), "utf-8")
    return section.encoding


def check_encodings(section, extra_files: list[str], key: str, file: str) -> None:
    """A per-file `encoding` names only files of the section, and codecs Python knows."""
    wanted = section.encoding if isinstance(section.encoding, dict) else {"": section.encoding}
    paths = {str(path) for path in asdict(section.files).values() if path}
    for path, codec in wanted.items():
        where = f"{key}.encoding" + (f"[{path}]" if path else "")
        if path and path not in paths | {str(p) for p in extra_files}:
            raise ParamsError(
                f"{file}: {where}: {path} is not one of the section's files ({', '.join(sorted(paths))})"
            )
        try:
            codecs.lookup(codec)
        except LookupError:
            raise ParamsError(
                f"{file}: {where}: unknown encoding '{codec}' (e.g. utf-8, cp1252, latin-1)"
            ) from None


def _changed(section, names: tuple[str, ...]) -> list[str]:
    """The keys among `names` whose value differs from the dataclass default."""
    fresh = type(section)()
    return [name for name in names if getattr(section, name) != getattr(fresh, name)]


def check_source(section, key: str, file: str, official_splits: bool, file_keys: tuple[str, ...]) -> None:
    """Keys that contradict the chosen source; shared by the corpus and the sentiment sections."""
    paths = {split: path for split, path in asdict(section.files).items() if path}
    if section.source != "files":
        for name in (["files"] if paths else []) + _changed(section, file_keys):
            raise ParamsError(
                f"{file}: {key}.{name} is only read with source: files, but {key}.source is "
                f"'{section.source}'; set {key}.source: files to use your data, or set {key}.{name} back to null"
            )
        if official_splits and _changed(section, ("split",)):
            raise ParamsError(
                f"{file}: {key}.split: source '{section.source}' has its own validation and test splits, "
                f"so nothing is carved; remove {key}.split"
            )
        return
    by_path: dict[str, str] = {}
    for split, path in paths.items():
        if path in by_path:
            raise ParamsError(
                f"{file}: {key}.files: {by_path[path]} and {split} are the same file ({path}); a split "
                f"read twice scores the model on its own training data. Leave {split} out to carve it"
            )
        by_path[path] = split
    if len(paths) == 3 and _changed(section, ("split",)):
        raise ParamsError(
            f"{file}: {key}.split: all three files are given, so no split is carved; remove {key}.split"
        )
