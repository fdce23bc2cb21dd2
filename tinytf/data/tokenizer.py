"""The tokenizer (the core of stage `tokenize`): train one with HF `tokenizers` and encode the prepared
data: the corpus as one id array per split (LM batches are slices of a memory map), sentiment texts
untruncated (the collate function truncates, so one encoding serves every `max_length`)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from tinytf.data.made import read_frame
from tinytf.data.splits import SPLITS
from tinytf.errors import DataError
from tinytf.io import atomic_path, write_json, write_npy, write_parquet
from tinytf.params.config import TokenizeParams

# Fixed ids 0..4: the model and collate code rely on PAD being 0.
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[MASK]", "[EOS]"]
PAD, UNK, CLS, MASK, EOS = SPECIAL_TOKENS


def build_tokenizer(params: TokenizeParams) -> tuple[Tokenizer, trainers.Trainer]:
    options = {"vocab_size": params.vocab_size, "min_frequency": params.min_frequency, "show_progress": False}
    if params.kind == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
        steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if params.lowercase else [])
        tokenizer.normalizer = normalizers.Sequence(steps)
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tokenizer.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        trainer = trainers.BpeTrainer(special_tokens=SPECIAL_TOKENS, initial_alphabet=alphabet, **options)
    else:
        tokenizer = Tokenizer(models.WordPiece(unk_token=UNK))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=params.lowercase)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(special_tokens=SPECIAL_TOKENS, **options)
    return tokenizer, trainer


# BPE training on one huge "word" is super-linear (each merge rescans the whole word), so training
# sees longer runs of non-space characters cut into pieces of this size (encoding sees every text
# whole); no text of the default corpora, SST-2 or IMDB has a run of even 200
MAX_TRAINING_WORD = 1000
RUNS = re.compile(r"\S+|\s+")


def training_texts(texts: Iterable[str]) -> Iterator[str]:
    """`texts` as the trainer sees them: each unchanged unless it holds a run of non-space characters
    longer than MAX_TRAINING_WORD, which goes in pieces of that size, each a text of its own."""
    for text in texts:
        if all(len(word) <= MAX_TRAINING_WORD for word in text.split()):  # linear, unlike a regex
            yield text
            continue
        kept: list[str] = []
        for run in RUNS.findall(text):
            if len(run) <= MAX_TRAINING_WORD or run[0].isspace():
                kept.append(run)
                continue
            if kept:
                yield "".join(kept)
                kept = []
            yield from (run[i : i + MAX_TRAINING_WORD] for i in range(0, len(run), MAX_TRAINING_WORD))
        if kept:
            yield "".join(kept)


def train_tokenizer(texts: list[str], params: TokenizeParams) -> Tokenizer:
    tokenizer, trainer = build_tokenizer(params)
    texts = list(training_texts(texts))
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise RuntimeError(
                f"special token {token} got id {tokenizer.token_to_id(token)}, expected {token_id}"
            )
    return tokenizer


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: tokenizer not found; run `dvc repro tokenize`")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library raises a bare Exception for any bad file
        what = " ".join(str(exc).split())[:200]
        raise DataError(
            f"{path}: not a readable tokenizer file ({what}); `dvc repro tokenize` writes it"
        ) from None


def encode(tokenizer: Tokenizer, texts: list[str], add_special_tokens: bool = False) -> list[list[int]]:
    """Ids per text. Ours add no special tokens here (pooling adds [CLS] where it needs it); an
    external checkpoint's tokenizer adds its own ([CLS] ... [SEP]) with `add_special_tokens`."""
    # encode_batch_fast skips offset tracking, which we never use; older versions lack it
    batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [e.ids for e in batch(texts, add_special_tokens=add_special_tokens)]


def id_dtype(vocab_size: int) -> type:
    return np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.uint32


def encode_stream(tokenizer: Tokenizer, texts: list[str], chunk_lines: int = 256) -> np.ndarray:
    """All texts as one id array, each followed by [EOS]. Lines are joined into chunks with the literal
    "[EOS]" between them: special tokens are split out before normalisation, so the ids equal per-line
    encoding plus EOS, but a few hundred chunks cross the Python boundary, not one object per line."""
    chunks = [EOS.join(texts[i : i + chunk_lines]) + EOS for i in range(0, len(texts), chunk_lines)]
    dtype = id_dtype(tokenizer.get_vocab_size())
    parts = [np.asarray(ids, dtype=dtype) for ids in encode(tokenizer, chunks)]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


# one recipe: train, encode and count, then write only once everything is computed, so a failure
# leaves nothing half-written; split up, that order is harder to see
def run_tokenize(
    params: TokenizeParams, prepared: str | Path, out_dir: str | Path, report_path: str | Path
) -> tuple[dict, dict]:
    """Train, encode, write. Returns (metrics for reports/, timings for the terminal and MLflow)."""
    prepared, out_dir = Path(prepared), Path(out_dir)
    corpus = {s: _read_split(prepared / "corpus" / f"{s}.parquet") for s in SPLITS}
    sentiment = {s: _read_split(prepared / "sentiment" / f"{s}.parquet") for s in SPLITS}

    texts = corpus["train"]["text"].tolist()
    if params.include_sentiment:
        texts += sentiment["train"]["text"].tolist()
    started = time.perf_counter()
    tokenizer = train_tokenizer(texts, params)
    train_seconds = time.perf_counter() - started

    unk = tokenizer.token_to_id(UNK)
    metrics: dict = {
        "vocab_size": tokenizer.get_vocab_size(),
        "kind": params.kind,
        "corpus": {},
        "sentiment": {},
    }
    corpus_bytes, encode_seconds = 0, 0.0
    arrays = {}
    for split, frame in corpus.items():
        split_texts = frame["text"].tolist()
        started = time.perf_counter()
        arrays[split] = encode_stream(tokenizer, split_texts)
        encode_seconds += time.perf_counter() - started
        corpus_bytes += sum(len(t.encode("utf-8")) for t in split_texts)
        metrics["corpus"][split] = {
            "tokens": int(arrays[split].size),
            "unk_rate": float((arrays[split] == unk).mean()),
            "tokens_per_text": round(arrays[split].size / max(len(frame), 1), 3),
        }
    encoded = {}
    for split, frame in sentiment.items():
        ids = encode(tokenizer, frame["text"].tolist())
        lengths = np.array([len(x) for x in ids])
        total = max(int(lengths.sum()), 1)
        encoded[split] = pd.DataFrame({"input_ids": ids, "label": frame["label"].to_numpy()})
        metrics["sentiment"][split] = {
            "tokens": int(lengths.sum()),
            "unk_rate": float(sum(x.count(unk) for x in ids) / total),
            "length_p50": float(np.percentile(lengths, 50)),
            "length_p99": float(np.percentile(lengths, 99)),
            "length_max": int(lengths.max()),
            "truncated_at_max_length": int((lengths > params.max_length).sum()),
        }
    metrics["max_length"] = params.max_length

    # everything computed: now write, each file atomically
    with atomic_path(out_dir / "tokenizer.json") as tmp:
        tokenizer.save(str(tmp))
    for split, array in arrays.items():
        write_npy(out_dir / "tokens" / "corpus" / f"{split}.npy", array)
    for split, frame in encoded.items():
        write_parquet(out_dir / "tokens" / "sentiment" / f"{split}.parquet", frame)
    labels_file = prepared / "sentiment" / "labels.json"
    if labels_file.exists():
        write_json(out_dir / "tokens" / "sentiment" / "labels.json", json.loads(labels_file.read_text()))
    write_json(report_path, metrics)
    timings = {
        "train_seconds": train_seconds,
        "encode_seconds": encode_seconds,
        "corpus_megabytes": corpus_bytes / 1e6,
        "encode_mb_per_s": corpus_bytes / 1e6 / max(encode_seconds, 1e-9),
    }
    return metrics, timings


def _read_split(path: Path) -> pd.DataFrame:
    frame = read_frame(path, "prepare")
    if frame.empty:
        raise DataError(f"{path}: split is empty")
    return frame
