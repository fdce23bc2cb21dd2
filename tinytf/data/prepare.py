"""Preparing data (the core of stage `prepare`): turn a named source into verified train/validation/test parquet splits.

The corpus (for language modelling) gets one column `text`; the sentiment data gets
`text` and an integer `label`, with the class names saved beside it. Everything is
computed in memory first and written only when every check has passed, each file
atomically, so bad input never leaves half-written outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.config import CorpusParams, FileSplits, PrepareParams, SentimentParams
from tinytf.data import sources
from tinytf.data.datacard import dataset_stats, render_data_card
from tinytf.data.in_domain import add_in_domain
from tinytf.data.readers import map_labels, parse_label_lines, parse_text_lines, read_table
from tinytf.data.splits import SPLITS, stratified_group_split
from tinytf.errors import DataError
from tinytf.io import write_json, write_parquet, write_text


@dataclass
class Dataset:
    """Splits of one dataset, plus what the data card should say about where they came from."""

    name: str
    source: str
    splits: dict[str, pd.DataFrame]
    classes: list[str] | None = None
    notes: dict = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    unlabelled: pd.Series | None = None  # in-domain text without labels (rotten_tomatoes' plot rows)


# --------------------------------------------------------------------------- corpus


def load_corpus(params: CorpusParams, seed: int) -> Dataset:
    if params.source == "ptb":
        texts = sources.extract_ptb()
        names = {"train": "train", "validation": "valid", "test": "test"}
        splits = {split: parse_text_lines(texts[names[split]]) for split in SPLITS}
        data = Dataset("corpus", "ptb", splits, files={s: f"ptb.{names[s]}" for s in SPLITS})
    elif params.source == "files":
        data = load_files("corpus", params.files, params, label_column=None, seed=seed)
    else:  # unreachable after params validation; kept so a new source cannot slip through
        raise DataError(f"unknown corpus source '{params.source}'")
    return _finish(data, params.max_rows)


# --------------------------------------------------------------------------- sentiment


def load_sentiment(params: SentimentParams, seed: int) -> Dataset:
    if params.source == "rotten_tomatoes":
        data = load_rotten_tomatoes(params, seed)
    elif params.source == "sst2":
        splits, files = {}, {}
        for split, spec in sources.SST2.items():
            path = sources.fetch_url("sst2", spec)
            text = sources.verify(path, spec.sha256).read_text(encoding="utf-8")
            splits[split] = parse_label_lines(path, text)
            files[split] = str(path)
        splits, classes = map_labels(splits, files, ["0", "1"])
        data = Dataset("sentiment", "sst2", splits, ["negative", "positive"], files=files)
    elif params.source == "files":
        data = load_files("sentiment", params.files, params, params.label_column, seed)
    else:
        raise DataError(f"unknown sentiment source '{params.source}'")
    return _finish(data, params.max_rows)


def load_rotten_tomatoes(params: SentimentParams, seed: int) -> Dataset:
    frame = sources.open_bz2_csv(sources.read_rotten_tomatoes_csv())
    frame["row"] = frame.index + 2
    is_plot = (frame["category"] == "plot").to_numpy()
    plot = frame.loc[is_plot, "text"].dropna().astype(str).str.strip()  # a few synopses are empty
    n_plot = int(is_plot.sum())
    frame = frame[~is_plot]
    frame = frame.assign(text=frame["text"].astype(str).str.strip())
    n_dup = int(frame["text"].duplicated().sum())
    frame = frame.drop_duplicates("text", keep="first").reset_index(drop=True)
    assignment = stratified_group_split(
        frame["category"].to_numpy(),
        frame["movie_name"].astype(str).to_numpy(),
        params.split.validation,
        params.split.test,
        seed,
    )
    classes = ["rotten", "fresh"]
    label = frame["category"].map({name: i for i, name in enumerate(classes)}).astype("int64")
    frame = frame.assign(label=label, split=assignment)
    splits = {
        s: frame.loc[frame["split"] == s, ["text", "label", "row", "movie_name"]].reset_index(drop=True)
        for s in SPLITS
    }
    notes = {
        "dropped_plot_rows": n_plot,
        "dropped_duplicate_texts": n_dup,
        "grouped_by": "movie_name",
        "movies": {s: int(splits[s]["movie_name"].nunique()) for s in SPLITS},
    }
    for s in SPLITS:
        splits[s] = splits[s].drop(columns="movie_name")
    files = {s: ROTTEN_FILE for s in SPLITS}
    return Dataset("sentiment", "rotten_tomatoes", splits, classes, notes, files, plot[plot != ""])


ROTTEN_FILE = sources.ROTTEN_TOMATOES.member


# --------------------------------------------------------------------------- files


def load_files(name, files: FileSplits, params, label_column, seed: int) -> Dataset:
    """Bring-your-own data; missing validation/test splits are carved out of train."""
    paths = {split: getattr(files, split) for split in SPLITS}
    if not paths["train"]:
        raise DataError(f"prepare.{name}.files.train: a train file is required for source 'files'")
    frames = {
        split: read_table(path, params.text_column, label_column, params.encoding)
        for split, path in paths.items()
        if path
    }
    carved = [split for split in SPLITS if split not in frames]
    if carved:
        train = frames["train"]
        labels = train["label"].astype(str).to_numpy() if label_column else np.zeros(len(train))
        fractions = {
            "validation": params.split.validation if "validation" in carved else 0.0,
            "test": params.split.test if "test" in carved else 0.0,
        }
        assignment = stratified_group_split(labels, None, fractions["validation"], fractions["test"], seed)
        for split in SPLITS:
            if split == "train" or split in carved:
                frames[split] = train[assignment == split].reset_index(drop=True)
                paths[split] = f"{paths['train']} ({split} part)" if split in carved else paths[split]
    frames = {split: frames[split] for split in SPLITS}
    classes = None
    if label_column:
        frames, classes = map_labels(frames, paths, list(params.labels))
    notes = {"carved_from_train": carved} if carved else {}
    return Dataset(name, "files", frames, classes, notes, {k: str(v) for k, v in paths.items()})


# --------------------------------------------------------------------------- writing


def _finish(data: Dataset, max_rows: int) -> Dataset:
    for split in SPLITS:
        frame = data.splits[split]
        if max_rows:
            frame = frame.head(max_rows)
        if frame.empty:
            raise DataError(
                f"{data.name} split '{split}' is empty (source {data.source}, {data.files.get(split, '')})"
            )
        data.splits[split] = frame.reset_index(drop=True)
    return data


def run_prepare(params: PrepareParams, seed: int, out_dir: str | Path, report_dir: str | Path):
    """Load both datasets, then write parquet splits, label names, stats JSON and the data card."""
    corpus, sentiment = load_corpus(params.corpus, seed), load_sentiment(params.sentiment, seed)
    add_in_domain(corpus, sentiment, params.corpus, sentiment.unlabelled)
    if corpus.source == "ptb":
        # PTB perplexities in the literature are per word, counting one end-of-sentence per line;
        # only PTB's own validation and test are scored (train holds the in-domain text too)
        corpus.notes["words_with_eos"] = {
            split: int(corpus.splits[split]["text"].str.split().str.len().sum() + len(corpus.splits[split]))
            for split in ("validation", "test")
        }
    datasets = [corpus, sentiment]
    stats = {data.name: dataset_stats(data) for data in datasets}
    out_dir, report_dir = Path(out_dir), Path(report_dir)
    for data in datasets:
        columns = ["text", "label"] if data.classes else ["text"]
        for split, frame in data.splits.items():
            write_parquet(out_dir / data.name / f"{split}.parquet", frame[columns])
        if data.classes:
            write_json(out_dir / data.name / "labels.json", {"classes": data.classes})
    write_json(report_dir / "data.json", stats)
    write_text(report_dir / "data.md", render_data_card(stats))
    return datasets, stats
