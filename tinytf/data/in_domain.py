"""Review text added to the LM's train split (only: PTB perplexities stay comparable), since news
alone does not transfer to movie-review sentiment at this scale. Every LM text equal to a text the
classifier is scored on, as the tokenizer normalises them, is dropped and counted in the data card.
"""

from __future__ import annotations

import pandas as pd

from tinytf.data.readers import read_table
from tinytf.data.rows import TextKey, word_counts
from tinytf.data.splits import SPLITS
from tinytf.params.prepare import CorpusParams, encoding_of


def in_domain_parts(params: CorpusParams, sentiment, unlabelled: pd.Series | None) -> dict[str, pd.Series]:
    """The in-domain texts by origin, each capped at `max_rows` like the corpus splits."""
    wanted = params.in_domain
    parts: dict[str, pd.Series] = {}
    if wanted.sentiment_train:
        parts["sentiment train texts"] = sentiment.splits["train"]["text"]
    if wanted.plot_rows and unlabelled is not None:
        parts["plot rows"] = unlabelled
    if wanted.imdb_unlabelled:
        from tinytf.data.sources import imdb_unlabelled

        texts, _ = imdb_unlabelled()
        parts["IMDB unlabelled reviews"] = pd.Series(texts, dtype=object)
    for path in wanted.files:
        parts[str(path)] = read_table(path, params.text_column, None, encoding_of(params, path))["text"]
    if params.max_rows:
        parts = {name: texts.head(params.max_rows) for name, texts in parts.items()}
    return {name: texts.reset_index(drop=True) for name, texts in parts.items()}


def add_in_domain(
    corpus,
    sentiment,
    params: CorpusParams,
    unlabelled: pd.Series | None,
    key: TextKey,
    match_rule: str,
) -> None:
    """Drop LM texts that are sentiment validation/test texts, then append `repeat` copies of the
    in-domain texts to the corpus train split; what was done goes to `corpus.notes`."""
    held_out = set(key(pd.concat([sentiment.splits[s]["text"] for s in ("validation", "test")])))
    dropped: dict[str, int] = {}

    def kept(name: str, texts: pd.Series):
        overlap = key(texts).isin(held_out).to_numpy()
        dropped[name] = int(overlap.sum())
        return ~overlap

    for split in SPLITS:
        frame = corpus.splits[split]
        corpus.splits[split] = frame[kept(f"corpus {split}", frame["text"])].reset_index(drop=True)
    parts, empty = {}, {}
    for name, texts in in_domain_parts(params, sentiment, unlabelled).items():
        blank = texts.eq("").to_numpy()  # an empty text holds nothing to learn; counted, not kept
        if blank.any():
            empty[name] = int(blank.sum())
        texts = texts[~blank].reset_index(drop=True)
        parts[name] = texts[kept(name, texts)].reset_index(drop=True)
    repeat = params.in_domain.repeat
    added = [texts for texts in parts.values() if len(texts)] * repeat
    if added:
        extra = pd.DataFrame({"text": pd.concat(added, ignore_index=True)})
        corpus.splits["train"] = pd.concat([corpus.splits["train"][["text"]], extra], ignore_index=True)
    corpus.notes["in_domain"] = {
        "parts": {name: {"rows": len(t), "words": int(word_counts(t).sum())} for name, t in parts.items()},
        "repeat": repeat,
        "held_out_texts_checked": len(held_out),
        "match_rule": match_rule,
        "dropped_overlaps": dropped,
    }
    if empty:
        corpus.notes["in_domain"]["dropped_empty"] = empty
