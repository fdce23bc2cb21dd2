"""Classifier throughput: tinytf's fine-tuning step, as the `finetune` and `grid` stages run it,
against the seed lab's `nn.TransformerEncoder` classifier in eager fp32.

Both sides train the same classifier shape (params.yaml's `model:`, pooled head, dropout) on
the same batches of sentiment texts (length-grouped and padded as the stage pads them; real
texts when `data/tokens` exists, else random ids of the same lengths), AdamW and gradient
clipping. tinytf runs `tinytf.train.loop.train_step` with the runtime the stage resolves from
`finetune:`. Rounds alternate; figures are medians, the speedup a ratio of medians. The last
line is the headline: `speedup: <ratio>x ...`.

    python benchmarks/classifier_throughput.py [--steps 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import median, timed_rounds, vocabulary, warm_up

from tinytf.config import load_params
from tinytf.data.batching import SentimentDataset, sentiment_loader
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.train.classify import classifier_runtime, classifier_step_loss
from tinytf.train.loop import LoopConfig, build_optimizer, train_step
from tinytf.train.runtime import seed_everything


def dataset(
    vocab: int, path: Path = Path("data/tokens/sentiment/train.parquet")
) -> tuple[SentimentDataset, str]:
    if path.exists():
        return SentimentDataset.from_parquet(path), f"sentiment texts from {path}"
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 60, 10_000)
    ids = [rng.integers(5, vocab, n).tolist() for n in lengths]
    return SentimentDataset(ids, rng.integers(0, 2, 10_000).tolist()), "random ids (no data/tokens)"


class Batches:
    """The stage's training batches, cycled: length-grouped, shuffled, padded to the batch's longest."""

    def __init__(self, data: SentimentDataset, batch_size: int, max_length: int, device):
        loader = sentiment_loader(data, batch_size, max_length, shuffle=True, seed=1, group_by_length=True)
        self.batches = itertools.cycle(list(loader))
        self.device = device

    def next_batch(self):
        batch = next(self.batches)
        return {k: v.to(self.device) for k, v in batch.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per round and side")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    params = load_params(args.params)
    f, max_length = params.finetune, params.tokenize.max_length
    vocab = vocabulary(params)
    data, where = dataset(vocab)
    planned = -(-len(data) // f.batch_size) * f.epochs
    runtime = classifier_runtime(f, planned)
    print(f"texts: {where}; batch {f.batch_size}, max_length {max_length}; the stage plans {planned} steps")

    seed_everything(0)
    ours = TinyTransformer(model_config(params.model, vocab, "causal", 0, dropout=f.dropout)).to(
        runtime.device
    )
    cfg = LoopConfig(total_steps=planned, steps_per_epoch=planned, lr=f.lrs[0], weight_decay=f.weight_decay)
    optimizer = build_optimizer(ours, cfg)
    ours_source = Batches(data, f.batch_size, max_length, runtime.device)
    step_loss = classifier_step_loss(ours, runtime)

    def ours_loss(batch):
        return step_loss(batch["input_ids"], batch["attention_mask"], batch["labels"])[0]

    seed_everything(0)
    lab_params = dataclasses.replace(params.model, arch="torch_encoder")
    lab = TinyTransformer(model_config(lab_params, vocab, "causal", 0, dropout=f.dropout)).to(runtime.device)
    lab_optimizer = torch.optim.AdamW(lab.parameters(), lr=f.lrs[0], weight_decay=f.weight_decay)
    lab_source = Batches(data, f.batch_size, max_length, runtime.device)

    def lab_step():
        batch = lab_source.next_batch()
        logits = lab.forward_cls(batch["input_ids"], batch["attention_mask"])
        loss = F.cross_entropy(logits, batch["labels"])
        loss.backward()
        float(loss)
        torch.nn.utils.clip_grad_norm_(lab.parameters(), 1.0)
        lab_optimizer.step()
        lab_optimizer.zero_grad()

    ours.train()
    lab.train()
    steps = {
        "tinytf": lambda: train_step(ours, optimizer, ours_source, ours_loss, cfg, runtime),
        "lab": lab_step,
    }
    names = {
        "tinytf": f"tinytf ({runtime.describe()})",
        "lab": "seed lab (nn.TransformerEncoder, eager fp32)",
    }
    first = warm_up(steps, 10, runtime.device)  # ten batches: ten lengths, so recompiles show here
    rates = timed_rounds(steps, {"tinytf": 1, "lab": 1}, args.steps, args.rounds, runtime.device)
    for name, values in rates.items():
        print(f"{names[name]:58s} {median(values):7.1f} steps/s  {1000 / median(values):6.1f} ms/step  (rounds "
              + ", ".join(f"{v:.1f}" for v in values) + f"; first 10 steps {first[name]:.1f} s)")  # fmt: skip
    ratio = median(rates["tinytf"]) / median(rates["lab"])
    print(
        f"speedup: {ratio:.2f}x tinytf's classifier step over the seed lab's nn.TransformerEncoder (eager fp32), "
        f"{1000 / median(rates['tinytf']):.1f} vs {1000 / median(rates['lab']):.1f} ms a step on {runtime.device}"
    )


if __name__ == "__main__":
    sys.exit(main())
