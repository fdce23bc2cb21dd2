"""Preparing data (the core of stage `prepare`): turn a named source into verified train/validation/test
parquet splits, written only when every check has passed, so bad input never leaves half-written outputs."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.data import sources
from tinytf.data.datacard import dataset_stats, render_data_card
from tinytf.data.in_domain import add_in_domain
from tinytf.data.labels import map_labels
from tinytf.data.readers import parse_label_lines, parse_text_lines, read_table
from tinytf.data.rows import RowLedger, TextKey, describe_rule, drop_empty_and_repeated, text_key
from tinytf.data.splits import SPLITS, stratified_group_split
from tinytf.errors import DataError
from tinytf.io import write_json, write_parquet, write_text
from tinytf.params.prepare import CorpusParams, FileSplits, PrepareParams, SentimentParams, encoding_of


@dataclass
class Dataset:
    """Splits of one dataset, plus what the data card should say about where they came from."""

    name: str
    source: str
    splits: dict[str, pd.DataFrame]
    classes: list[str] | None = None
    notes: dict = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    unlabelled: pd.Series | None = None  # in-domain text without labels (rt_critic_snippets' plot rows)


def load_corpus(params: CorpusParams, seed: int, key: TextKey | None = None) -> Dataset:
    if params.source == "ptb":
        texts = sources.extract_ptb()
        names = {"train": "train", "validation": "valid", "test": "test"}
        splits = {split: parse_text_lines(texts[names[split]]) for split in SPLITS}
        data = Dataset("corpus", "ptb", splits, files={s: f"ptb.{names[s]}" for s in SPLITS})
    elif params.source == "files":
        data = load_files("corpus", params.files, params, None, seed, key or text_key())
    else:  # unreachable after params validation; kept so a new source cannot slip through
        raise DataError(f"unknown corpus source '{params.source}'")
    return _finish(data, params.max_rows)


def load_sentiment(params: SentimentParams, seed: int, key: TextKey | None = None) -> Dataset:
    if params.source == "rt_critic_snippets":
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
        data = load_files("sentiment", params.files, params, params.label_column, seed, key or text_key())
    else:
        raise DataError(f"unknown sentiment source '{params.source}'")
    return _finish(data, params.max_rows)


def load_rotten_tomatoes(params: SentimentParams, seed: int) -> Dataset:
    frame = sources.open_bz2_csv(sources.read_rotten_tomatoes_csv())
    frame["row"] = frame.index + 2
    is_plot = (frame["category"] == "plot").to_numpy()
    plot = frame.loc[is_plot, ["text", "movie_name"]].dropna(subset=["text"])
    plot = plot.assign(text=plot["text"].astype(str).str.strip())  # a few synopses are empty
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
    # group: the movie, as test texts of one movie are not independent (tinytf.analysis.multiboot)
    frame = frame.assign(label=label, split=assignment).rename(columns={"movie_name": "group"})
    splits = {
        s: frame.loc[frame["split"] == s, ["text", "label", "row", "group"]].reset_index(drop=True)
        for s in SPLITS
    }
    # the LM reads only synopses of train movies: one of a validation or test movie would tell the
    # pretrained start about the texts it is scored on, which scratch never reads
    train_movies = set(splits["train"]["group"])
    of_train = plot["movie_name"].astype(str).isin(train_movies).to_numpy()
    notes = {
        "dropped_plot_rows": n_plot,
        "plot_rows_of_held_out_movies": int((~of_train).sum()),
        "dropped_duplicate_texts": n_dup,
        "grouped_by": "movie_name",
        "movies": {s: int(splits[s]["group"].nunique()) for s in SPLITS},
    }
    files = dict.fromkeys(SPLITS, sources.ROTTEN_TOMATOES.member)
    plot = plot.loc[of_train, "text"]
    return Dataset("sentiment", "rt_critic_snippets", splits, classes, notes, files, plot[plot != ""])


def load_files(name, files: FileSplits, params, label_column, seed: int, key: TextKey) -> Dataset:
    """Bring-your-own data; missing validation/test splits are carved out of train. Every row read is
    kept in a split or dropped for a counted reason: the ledger goes to the data card, checked to add up."""
    paths = {split: str(getattr(files, split)) for split in SPLITS if getattr(files, split)}
    if "train" not in paths:
        raise DataError(f"prepare.{name}.files.train: a train file is required for source 'files'")
    ledger, frames = RowLedger(), {}
    for split, path in paths.items():
        frame = read_table(path, params.text_column, label_column, encoding_of(params, path))
        ledger.read(path, len(frame))
        frames[split] = drop_empty_and_repeated(frame, path, ledger, key)
    held_out = set().union(*(set(frames[s]["key"]) for s in ("validation", "test") if s in frames))
    in_held_out = frames["train"]["key"].isin(held_out).to_numpy()
    ledger.drop(paths["train"], "text also in validation or test", in_held_out.sum())
    frames["train"] = frames["train"][~in_held_out].reset_index(drop=True)
    if label_column and not params.labels and paths["train"].lower().endswith(".txt"):
        _refuse_txt_label_guess(name, paths["train"], frames["train"])
    carved = [split for split in SPLITS if split not in frames]
    if carved:
        _carve(frames, carved, params, bool(label_column), seed)
    origin = {split: paths.get(split, paths["train"]) for split in SPLITS}
    for split in SPLITS:
        frame = frames[split].drop(columns="key")
        if params.max_rows and len(frame) > params.max_rows:
            ledger.drop(origin[split], "beyond max_rows", len(frame) - params.max_rows)
            frame = frame.head(params.max_rows)
        frames[split] = frame
        ledger.keep(origin[split], split, len(frame))
    described = {s: paths[s] if s in paths else f"{paths['train']} ({s} part)" for s in SPLITS}
    classes = None
    if label_column:
        frames, classes = map_labels(frames, described, list(params.labels), f"prepare.{name}")
    notes = {"rows": ledger.check()}
    if carved:
        notes["carved_from_train"] = carved
    return Dataset(name, "files", frames, classes, notes, described)


def _carve(frames: dict[str, pd.DataFrame], carved: list[str], params, labelled: bool, seed: int) -> None:
    train = frames["train"]
    labels = train["label"].to_numpy() if labelled else np.zeros(len(train))
    validation, test = (getattr(params.split, s) if s in carved else 0.0 for s in ("validation", "test"))
    assignment = stratified_group_split(labels, None, validation, test, seed)
    for split in ["train"] + carved:
        frames[split] = train[assignment == split].reset_index(drop=True)


def _refuse_txt_label_guess(name: str, path: str, train: pd.DataFrame) -> None:
    """A .txt line's first word is its label, so a line without one silently becomes a class of
    its own: with a .txt train file the classes must be listed."""
    counts = train["label"].value_counts()
    seen = ", ".join(f"{label!r} ({n} lines)" for label, n in counts.head(6).items())
    raise DataError(
        f"{path}: a .txt line's first word is its label, so the classes cannot be inferred safely "
        f"(a line missing its label would become a class). List them in prepare.{name}.labels, "
        f"e.g. labels: {sorted(counts.index[:2].tolist())}; first words found: {seen}"
        + (", ..." if len(counts) > 6 else "")
    )


def _finish(data: Dataset, max_rows: int) -> Dataset:
    for split in SPLITS:
        frame = data.splits[split]
        if max_rows:
            frame = frame.head(max_rows)
        if frame.empty:
            rows = data.notes.get("rows", {}).get(data.files.get(split, "").split(" (")[0])
            why = ""
            if rows:
                dropped = ", ".join(f"{n} {reason}" for reason, n in rows["dropped"].items() if n)
                why = f": {rows['read']} rows read" + (f", dropped: {dropped}" if dropped else "")
            raise DataError(
                f"{data.name} split '{split}' is empty (source {data.source}, {data.files.get(split, '')}){why}"
            )
        data.splits[split] = frame.reset_index(drop=True)
    return data


def run_prepare(
    params: PrepareParams,
    seed: int,
    out_dir: str | Path,
    report_dir: str | Path,
    key: TextKey | None = None,
    match_rule: str = "",
    before_swap: Callable[[], None] | None = None,
):
    """Load both datasets, then write parquet splits, label names, stats JSON and the data card. Texts
    are compared through `key`, the tokenizer's view of a text (`rows.text_key`), as `match_rule` says.
    `before_swap` runs once everything is written aside and may raise to put nothing in place."""
    if key is None:
        key, match_rule = text_key(), describe_rule("bpe", True)
    corpus, sentiment = load_corpus(params.corpus, seed, key), load_sentiment(params.sentiment, seed, key)
    add_in_domain(corpus, sentiment, params.corpus, sentiment.unlabelled, key, match_rule)
    if corpus.source == "ptb":
        # PTB perplexities in the literature are per word, counting one end-of-sentence per line;
        # only PTB's own validation and test are scored (train holds the in-domain text too)
        corpus.notes["words_with_eos"] = {
            split: int(corpus.splits[split]["text"].str.split().str.len().sum() + len(corpus.splits[split]))
            for split in ("validation", "test")
        }
    datasets = [corpus, sentiment]
    stats = {data.name: dataset_stats(data, key, match_rule) for data in datasets}
    out_dir, report_dir = Path(out_dir), Path(report_dir)
    staging = out_dir.parent / f".{out_dir.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    for data in datasets:
        columns = ["text", "label"] if data.classes else ["text"]
        for split, frame in data.splits.items():
            kept = columns + (["group"] if data.classes and "group" in frame else [])
            write_parquet(staging / data.name / f"{split}.parquet", frame[kept])
        if data.classes:
            write_json(staging / data.name / "labels.json", {"classes": data.classes})
    if before_swap is not None:
        try:
            before_swap()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    _replace_dir(staging, out_dir)
    write_json(report_dir / "data.json", stats)
    write_text(report_dir / "data.md", render_data_card(stats))
    return datasets, stats


def _replace_dir(new: Path, target: Path) -> None:
    """Put a fully written folder in place of `target`, so the splits of one run never mix with an
    older run's files. Here, not in tinytf/io.py: prepare is the one stage that writes a folder whole."""
    old = target.parent / f".{target.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    new.rename(target)
    shutil.rmtree(old, ignore_errors=True)
