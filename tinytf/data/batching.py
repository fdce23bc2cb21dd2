"""Batches for training. Classification: `PadCollate` truncates the stored id lists to `max_length`
and right-pads to the longest in the batch (short batches stay short and fast), giving

    input_ids       LongTensor (B, L)  token ids, PAD (=0) after the text
    attention_mask  LongTensor (B, L)  1 for real tokens, 0 for padding
    labels          LongTensor (B,)    class ids

Language modelling: a block of `block_size + 1` consecutive ids of the memory-mapped corpus gives
inputs `x = ids[:-1]` and next-token targets `y = ids[1:]`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from tinytf.data.made import damaged, read_frame
from tinytf.errors import DataError

PAD_ID = 0


class SentimentDataset(Dataset):
    def __init__(self, input_ids: list[list[int]], labels: list[int]):
        if len(input_ids) != len(labels):
            raise ValueError(f"{len(input_ids)} texts but {len(labels)} labels")
        self.input_ids = input_ids
        self.labels = labels

    @classmethod
    def from_parquet(cls, path: str | Path) -> SentimentDataset:
        frame = read_frame(path, "tokenize")
        return cls([list(map(int, ids)) for ids in frame["input_ids"]], frame["label"].astype(int).tolist())

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[list[int], int]:
        return self.input_ids[index], self.labels[index]


class PadCollate:
    """Truncate, pad and mask a list of (ids, label) pairs (see the module docstring); `prefix_id`
    (e.g. [CLS]) goes before every text for first-token pooling and counts towards `max_length`.
    A class, not a closure, so DataLoader workers can pickle it."""

    def __init__(self, max_length: int, pad_id: int = PAD_ID, prefix_id: int | None = None):
        if max_length < 1 + (prefix_id is not None):
            raise ValueError(f"max_length must leave room for at least one token, got {max_length}")
        self.max_length = max_length
        self.pad_id = pad_id
        self.prefix_id = prefix_id

    def __call__(self, batch: list[tuple[list[int], int]]) -> dict[str, torch.Tensor]:
        prefix = [] if self.prefix_id is None else [self.prefix_id]
        room = self.max_length - len(prefix)
        # an empty text still gets one PAD position so the row is never zero-length
        seqs = [prefix + list(ids[:room]) for ids, _ in batch]
        lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
        width = max(1, int(lengths.max()))
        # filled in numpy, then shared with torch: the same tensors without three torch calls a row,
        # whose overhead outweighed the few ids each writes
        input_ids = np.full((len(seqs), width), self.pad_id, dtype=np.int64)
        for row, seq in enumerate(seqs):
            input_ids[row, : len(seq)] = seq
        attention_mask = (np.arange(width) < lengths[:, None]).astype(np.int64)
        return {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(attention_mask),
            "labels": torch.tensor([label for _, label in batch], dtype=torch.long),
        }


class LengthGroupedBatches(Sampler[list[int]]):
    """Batches of similar-length texts, so padding (wasted compute) stays small. Training: a random
    permutation is cut into pools of `pool` batches, each pool sorted by length and cut into batches,
    the batch order shuffled (HF Trainer's "group by length"). Evaluation: batches in length order."""

    def __init__(
        self, lengths: list[int], batch_size: int, shuffle: bool, generator: torch.Generator, pool: int = 50
    ):
        self.lengths = torch.tensor(lengths)
        self.batch_size, self.shuffle, self.generator, self.pool = batch_size, shuffle, generator, pool

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        n, size = len(self.lengths), self.batch_size
        if not self.shuffle:
            order = torch.argsort(self.lengths, stable=True)
            yield from (order[i : i + size].tolist() for i in range(0, n, size))
            return
        perm = torch.randperm(n, generator=self.generator)
        batches = []
        for start in range(0, n, size * self.pool):
            chunk = perm[start : start + size * self.pool]
            chunk = chunk[torch.argsort(self.lengths[chunk], descending=True, stable=True)]
            batches += [chunk[i : i + size].tolist() for i in range(0, len(chunk), size)]
        for index in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[index]


def sentiment_loader(
    dataset: SentimentDataset,
    batch_size: int,
    max_length: int,
    shuffle: bool,
    seed: int,
    prefix_id: int | None = None,
    group_by_length: bool = False,
    pad_id: int = PAD_ID,
) -> DataLoader:
    """Training loaders shuffle (a fresh order each epoch from a seeded generator); evaluation loaders
    keep file order, or length order. No workers: batches are tiny and a worker costs more than it saves."""
    generator = torch.Generator().manual_seed(seed)
    collate = PadCollate(max_length, pad_id=pad_id, prefix_id=prefix_id)
    batching = {"batch_size": batch_size, "shuffle": shuffle}
    if group_by_length:
        lengths = [min(len(ids), max_length) for ids in dataset.input_ids]
        batching = {"batch_sampler": LengthGroupedBatches(lengths, batch_size, shuffle, generator)}
    return DataLoader(dataset, collate_fn=collate, generator=generator, num_workers=0, **batching)


def load_tokens(path: str | Path) -> np.ndarray:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found; run `dvc repro tokenize`")
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError) as exc:  # truncated: shorter than its header says
        raise damaged(path, "tokenize", exc) from None


def random_blocks(
    tokens: np.ndarray, block_size: int, batch_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of blocks starting at random offsets: inputs and next-token targets (B, T)."""
    if len(tokens) <= block_size:
        raise DataError(f"token array of {len(tokens)} ids is too short for block_size {block_size}")
    starts = torch.randint(len(tokens) - block_size, (batch_size,), generator=generator).tolist()
    chunk = np.stack([np.asarray(tokens[s : s + block_size + 1], dtype=np.int64) for s in starts])
    chunk = torch.from_numpy(chunk)
    return chunk[:, :-1], chunk[:, 1:]


def strided_blocks(tokens: np.ndarray, block_size: int, batch_size: int):
    """Every token exactly once as a target, in order: for evaluation (perplexity)."""
    n_blocks = (len(tokens) - 1) // block_size
    if n_blocks == 0:
        raise DataError(f"token array of {len(tokens)} ids is too short for block_size {block_size}")
    usable = np.asarray(tokens[: n_blocks * block_size + 1], dtype=np.int64)
    x = torch.from_numpy(usable[:-1].reshape(n_blocks, block_size))
    y = torch.from_numpy(usable[1:].reshape(n_blocks, block_size))
    for start in range(0, n_blocks, batch_size):
        yield x[start : start + batch_size], y[start : start + batch_size]
