"""The frozen start's linear probe, trained on features computed once.

A frozen body in eval mode maps a text to the same pooled vector in every step of every run, so
the probe's features are computed once per start (a forward pass over train, validation and
test) and the head trains on them: the same head initialisation, batches (the length-grouped
order `sentiment_loader` draws for the seed), optimizer, schedule and loop as
`train_classifier` with `init="frozen"`, at a small fraction of the cost (the body's forward
was most of a frozen step). `tests/test_transfer.py` checks the two give the same head.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, Dataset

from tinytf.data.batching import LengthGroupedBatches, SentimentDataset, sentiment_loader
from tinytf.data.splits import SPLITS
from tinytf.model.transformer import TinyTransformer, cls_loss, pool
from tinytf.train.classify import BestEpoch, ClassifierRun, LoaderSource, SentimentData, classifier_loop
from tinytf.train.loop import run_loop
from tinytf.train.runtime import Runtime


class _Rows(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


def row_loader(dataset: SentimentDataset, batch_size: int, max_length: int, seed: int) -> DataLoader:
    """Row indices in the batches `sentiment_loader(shuffle=True, group_by_length=True)` draws for
    `seed`: the same sampler and the same draws from the same generator."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [min(len(ids), max_length) for ids in dataset.input_ids]
    batches = LengthGroupedBatches(lengths, batch_size, True, generator)
    return DataLoader(_Rows(len(dataset)), batch_sampler=batches, collate_fn=torch.tensor, generator=generator,
                      num_workers=0)  # fmt: skip


@torch.no_grad()
def pooled_features(
    model: TinyTransformer, data: SentimentData, max_length: int, runtime: Runtime
) -> dict[str, torch.Tensor]:
    """(texts, d_model) fp32 pooled features of every split, in file order, from the body in eval mode."""
    prefix = data.cls_id if model.config.pooling == "first" else None
    model.to(runtime.device).eval()
    features = {}
    for split in SPLITS:
        loader = sentiment_loader(data.splits[split], 256, max_length, shuffle=False, seed=0, prefix_id=prefix,
                                  group_by_length=True)  # fmt: skip
        order = torch.tensor([i for batch in loader.batch_sampler for i in batch], dtype=torch.long)
        parts = []
        for batch in loader:
            ids, mask = batch["input_ids"].to(runtime.device), batch["attention_mask"].to(runtime.device)
            with runtime.autocast():
                parts.append(pool(model.base(ids, mask), mask, model.config.pooling).float().cpu())
        stacked = torch.cat(parts)
        features[split] = torch.empty_like(stacked).index_copy_(0, order, stacked)
    return features


def train_probe(
    model: TinyTransformer,
    features: dict[str, torch.Tensor],
    data: SentimentData,
    *,
    optimizer: str,
    lr: float,
    batch_size: int,
    epochs: int,
    max_length: int,
    seed: int,
    runtime: Runtime,
    weight_decay: float = 0.0,
    warmup_ratio: float = 0.1,
    eval_every: int = 1,
    desc: str = "probe",
) -> ClassifierRun:
    """Train `model.cls_head` on `features` (rows aligned with `data`'s splits) and keep its best
    validation epoch; `run.test` holds the test accuracy and loss."""
    head, device = model.cls_head.to(runtime.device), runtime.device
    labels = {s: torch.tensor(data.splits[s].labels, dtype=torch.long) for s in SPLITS}
    source = LoaderSource(row_loader(data.splits["train"], batch_size, max_length, seed))
    best = BestEpoch(head)

    def loss_fn(rows: torch.Tensor) -> torch.Tensor:
        x, y = features["train"][rows].to(device), labels["train"][rows].to(device)
        logits = head(x)
        loss = cls_loss(logits, y)
        source.stats["loss_sum"] += float(loss.detach()) * len(y)
        source.stats["correct"] += int((logits.argmax(-1) == y).sum())
        source.stats["count"] += len(y)
        return loss

    @torch.no_grad()
    def score(split: str) -> tuple[float, float]:
        with runtime.autocast():
            logits = head(features[split].to(device))
        y = labels[split].to(device)
        return float((logits.argmax(-1) == y).float().mean()), float(cls_loss(logits, y))

    def on_epoch_end(epoch: int, step: int) -> dict[str, float]:
        metrics = source.take_epoch_stats()
        accuracy, loss = score("validation")
        metrics.update(validation_loss=loss, validation_accuracy=accuracy, data_epochs=epoch * eval_every)
        best.update(epoch * eval_every, accuracy)
        return metrics

    loop = classifier_loop(len(source.loader), epochs, eval_every, lr, weight_decay, warmup_ratio, 1.0, optimizer,
                           "cosine", desc)  # fmt: skip
    out = run_loop(head, source, loss_fn, loop, runtime, on_epoch_end)
    run = ClassifierRun(model, out["history"], best_epoch=best.restore())
    accuracy, loss = score("test")
    run.test = {"test_accuracy": accuracy, "test_loss": loss}
    return run
