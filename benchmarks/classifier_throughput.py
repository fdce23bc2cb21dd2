"""Classifier throughput: tinytf's fine-tuning step, as the `finetune` and `grid` stages run it,
against the course lab's `nn.TransformerEncoder` classifier in eager fp32.

Both sides train the same classifier shape (params.yaml's `model:`, pooled head, dropout) on
the same batches of sentiment texts (length-grouped and padded as the stage pads them; real
texts when `data/tokens` exists, else random ids of the same lengths), AdamW and gradient
clipping. tinytf runs `tinytf.train.step.train_step` with the runtime the stage resolves from
`finetune:`. Rounds alternate; figures are medians, the speedup a ratio of medians. The last
line is the headline: `speedup: <ratio>x ...`, the step as the `grid` stage runs it (one
process, every core).

The `finetune` stage runs its runs side by side instead (tinytf.train.workers: one worker per
core, one thread each). The line before the headline measures that layout in the same rounds:
that many processes stepping at once, one thread each, their steps/s added up, against the seed
lab's loop in one process. It is the stage's throughput, not a faster step, and is reported
apart from the step's speedup.

    python benchmarks/classifier_throughput.py [--steps 20] [--rounds 3]
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import queue
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import benchmark_parser, device_name, median, record, seconds, timed_rounds, vocabulary, warm_up

from tinytf.data.batching import SentimentDataset, sentiment_loader
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.train.classify import classifier_runtime, classifier_step_loss
from tinytf.train.loop import LoopConfig, build_optimizer
from tinytf.train.runtime import Runtime, seed_everything
from tinytf.train.step import train_step
from tinytf.train.workers import worker_count


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


def tinytf_step(params, vocab: int, data: SentimentDataset, runtime, planned: int):
    """tinytf's classifier step as the stages run it: `train_step` on the stage's batches."""
    f, max_length = params.finetune, params.tokenize.max_length
    seed_everything(0)
    model = TinyTransformer(model_config(params.model, vocab, "causal", 0, dropout=max(f.dropouts))).to(
        runtime.device
    )
    cfg = LoopConfig(total_steps=planned, steps_per_epoch=planned, lr=f.lrs[0], weight_decay=f.weight_decay)
    optimizer = build_optimizer(model, cfg)
    source = Batches(data, f.batch_size, max_length, runtime.device)
    step_loss = classifier_step_loss(model, runtime)

    def loss(batch):
        return step_loss(batch["input_ids"], batch["attention_mask"], batch["labels"])[0]

    model.train()
    return lambda: train_step(model, optimizer, source, loss, cfg, runtime)


def stage_inputs(params) -> tuple[int, SentimentDataset, str, int, Runtime]:
    """(vocabulary, train texts, where they came from, planned steps, runtime) as the stage has them."""
    vocab = vocabulary(params)
    data, where = dataset(vocab)
    planned = -(-len(data) // params.finetune.batch_size) * params.finetune.epochs
    return vocab, data, where, planned, classifier_runtime(params.finetune, planned)


def layout_worker(params_path: str, steps: int, barrier, rates) -> None:
    """One of the finetune stage's workers: one thread, the same step, timed once all are ready."""
    torch.set_num_threads(1)
    params = load_params(params_path)
    vocab, data, _, planned, runtime = stage_inputs(params)
    step = tinytf_step(params, vocab, data, runtime, planned)
    seconds(step, 10, runtime.device)
    barrier.wait(timeout=600)  # a worker that failed to start breaks the barrier for the others
    rates.put(steps / seconds(step, steps, runtime.device))


def layout_round(params_path: str, workers: int, steps: int) -> float:
    """Steps/s of `workers` processes stepping at once (started fresh each round, as a stage is)."""
    context = multiprocessing.get_context("spawn")
    barrier, rates = context.Barrier(workers), context.Queue()
    processes = [
        context.Process(target=layout_worker, args=(params_path, steps, barrier, rates), daemon=True)
        for _ in range(workers)
    ]
    for process in processes:
        process.start()
    total = 0.0
    for _ in processes:
        while True:
            try:
                total += rates.get(timeout=5)
                break
            except queue.Empty:
                failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if failed:
                    raise RuntimeError(
                        f"a layout worker exited with status {failed[0]} (its traceback is above)"
                    ) from None
    for process in processes:
        process.join()
    return total


def main() -> None:
    parser = benchmark_parser(__doc__, 30, "timed steps per round and side")
    args = parser.parse_args()

    params = load_params(args.params)
    f, max_length = params.finetune, params.tokenize.max_length
    vocab, data, where, planned, runtime = stage_inputs(params)
    print(f"texts: {where}; batch {f.batch_size}, max_length {max_length}; the stage plans {planned} steps")
    print(f"measured on {runtime.device} ({device_name(runtime.device)})")

    ours_step = tinytf_step(params, vocab, data, runtime, planned)
    seed_everything(0)
    lab_params = dataclasses.replace(params.model, arch="torch_encoder")
    lab = TinyTransformer(model_config(lab_params, vocab, "causal", 0, dropout=max(f.dropouts))).to(
        runtime.device
    )
    lab_optimizer = torch.optim.AdamW(lab.parameters(), lr=f.lrs[0], weight_decay=f.weight_decay)
    lab_source = Batches(data, f.batch_size, max_length, runtime.device)

    def lab_step():
        batch = lab_source.next_batch()
        logits = lab.forward_cls(batch["input_ids"], batch["attention_mask"])
        loss = F.cross_entropy(logits, batch["labels"])
        loss.backward()
        float(loss.detach())  # the host sync our step has too; detach: a scalar of a grad tensor warns
        torch.nn.utils.clip_grad_norm_(lab.parameters(), 1.0)
        lab_optimizer.step()
        lab_optimizer.zero_grad()

    lab.train()
    steps = {"tinytf": ours_step, "lab": lab_step}
    first = warm_up(steps, 10, runtime.device)  # ten batches: ten lengths, so recompiles show here
    names = {  # after the warm-up: a compile that failed there turned `compile` off, and the line says so
        "tinytf": f"tinytf ({runtime.describe()})",
        "lab": "seed lab (nn.TransformerEncoder, eager fp32)",
    }
    workers = worker_count(runtime.device)
    rates, layout = {"tinytf": [], "lab": []}, []
    for _ in range(args.rounds):
        for name, values in timed_rounds(
            steps, {"tinytf": 1, "lab": 1}, args.steps, 1, runtime.device
        ).items():
            rates[name] += values
        if workers > 1:
            layout.append(layout_round(args.params, workers, args.steps))
    headline = report(rates, layout, first, names, workers, runtime.device)
    figures = {
        "ratio": median(rates["tinytf"]) / median(rates["lab"]),
        **{f"{name}_steps_per_s": median(values) for name, values in rates.items()},
        "layout_workers": workers,
        "layout_steps_per_s": median(layout) if layout else None,
    }
    record("classifier_throughput", headline, figures, args, runtime.device)


def report(rates: dict, layout: list, first: dict, names: dict, workers: int, device) -> str:
    """Each side's median steps/s, the layout line, and the headline last; returns the headline."""
    for name, values in rates.items():
        print(
            f"{names[name]:58s} {median(values):7.1f} steps/s  {1000 / median(values):6.1f} ms/step  (rounds "
            + ", ".join(f"{v:.1f}" for v in values)
            + f"; first 10 steps {first[name]:.1f} s)"
        )
    if layout:
        print(
            f"the finetune stage's layout: {workers} processes, one thread each, {median(layout):.1f} steps/s "
            f"together = {median(layout) / median(rates['lab']):.2f}x the seed lab's loop (rounds "
            + ", ".join(f"{v:.1f}" for v in layout)
            + "; the stage's throughput, not a faster step)"
        )
    ratio = median(rates["tinytf"]) / median(rates["lab"])
    headline = (
        f"speedup: {ratio:.2f}x tinytf's classifier step over the seed lab's nn.TransformerEncoder (eager fp32), "
        f"{1000 / median(rates['tinytf']):.1f} vs {1000 / median(rates['lab']):.1f} ms a step on {device}"
    )
    print(headline)
    return headline


if __name__ == "__main__":
    sys.exit(main())
