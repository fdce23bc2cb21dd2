"""Sentiment classification on top of a start (tinytf.train.starts): train, predict, evaluate.
An epoch's train loss/accuracy are running averages over its batches (what the course reports plot)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from tinytf.data.batching import PAD_ID, SentimentDataset, sentiment_loader
from tinytf.data.sentiment import SentimentData
from tinytf.model.transformer import TinyTransformer, cls_loss
from tinytf.train import distributed
from tinytf.train.loop import Callback, LoopConfig, TrainingDiverged, run_loop
from tinytf.train.runtime import CLASSIFIER_COMPILE_MIN_STEPS as CLASSIFIER_MIN_STEPS
from tinytf.train.runtime import Runtime, maybe_compile, resolve_runtime


def classifier_runtime(params, planned_steps: int = 0) -> Runtime:
    """The `finetune:` section's device, precision and compile (the grid and evaluate use them too);
    `compile: auto` against the classifier's own thresholds (`CLASSIFIER_COMPILE_MIN_STEPS`)."""
    return resolve_runtime(
        params.device, params.precision, params.compile, planned_steps, CLASSIFIER_MIN_STEPS
    )


def planned_steps(data: SentimentData, batch_size: int, epochs: int) -> int:
    return math.ceil(len(data.splits["train"]) / batch_size) * epochs


def classifier_step_loss(model: TinyTransformer, runtime: Runtime):
    """(ids, mask, labels) -> (loss, logits); lengths differ between batches, so the compiled graph
    takes a symbolic length instead of being compiled again for each one."""

    def step_loss(ids: torch.Tensor, mask: torch.Tensor, y: torch.Tensor):
        logits = model.forward_cls(ids, mask)
        return cls_loss(logits, y), logits

    return maybe_compile(step_loss, runtime, dynamic=True)


class LoaderSource:
    """Epoch-wise batches from a shuffling DataLoader. The loader draws each epoch's order from its
    generator, so the position is (generator state at the epoch's start, batches consumed)."""

    def __init__(self, loader):
        self.loader = loader
        self.epoch_state = loader.generator.get_state()
        self.consumed = 0
        self.iterator = iter(loader)
        self.stats = {"loss_sum": 0.0, "correct": 0, "count": 0}

    def next_batch(self):
        try:
            batch = next(self.iterator)
        except StopIteration:
            self.epoch_state = self.loader.generator.get_state()
            self.iterator, self.consumed = iter(self.loader), 0
            self.stats = {"loss_sum": 0.0, "correct": 0, "count": 0}
            batch = next(self.iterator)
        self.consumed += 1
        return batch

    def take_epoch_stats(self) -> dict[str, float]:
        stats = distributed.sum_counts(self.stats)  # under torchrun each rank saw its slices
        count = max(stats["count"], 1)
        return {"train_loss": stats["loss_sum"] / count, "train_accuracy": stats["correct"] / count}

    def state(self) -> dict:
        stats = distributed.sum_counts(self.stats)
        return {"epoch_state": self.epoch_state, "consumed": self.consumed, "stats": dict(stats)}

    def load_state(self, state: dict) -> None:
        self.loader.generator.set_state(state["epoch_state"])
        self.epoch_state = state["epoch_state"]
        self.iterator = iter(self.loader)
        for _ in range(state["consumed"]):
            next(self.iterator)
        self.consumed = state["consumed"]
        # the saved sums are over all ranks: rank 0 carries them on, the others start at zero
        self.stats = dict(state["stats"]) if distributed.is_main() else {k: 0 for k in state["stats"]}


class Predictions(NamedTuple):
    """A pass over one split, in file order."""

    predictions: np.ndarray  # predicted class per text
    labels: np.ndarray
    loss: float  # mean cross-entropy
    probabilities: np.ndarray  # the probability the model gave its prediction

    @property
    def accuracy(self) -> float:
        return float((self.predictions == self.labels).mean())


@torch.no_grad()
def predict(
    model: TinyTransformer,
    dataset: SentimentDataset,
    batch_size: int,
    max_length: int,
    runtime: Runtime,
    prefix_id: int | None,
    pad_id: int = PAD_ID,
) -> Predictions:
    was_training = model.training
    model.eval()
    loader = sentiment_loader(
        dataset,
        batch_size,
        max_length,
        shuffle=False,
        seed=0,
        prefix_id=prefix_id,
        group_by_length=True,
        pad_id=pad_id,
    )
    order = [i for batch in loader.batch_sampler for i in batch]
    preds, labels, probs, loss_sum = [], [], [], 0.0
    # one autocast for the whole pass keeps each weight's bf16 copy, where one per batch casts anew
    with runtime.autocast():
        for batch in loader:
            ids, mask, y = (batch[k].to(runtime.device) for k in ("input_ids", "attention_mask", "labels"))
            logits = model.forward_cls(ids, mask)
            loss_sum += float(cls_loss(logits, y)) * len(y)  # cls_loss upcasts; autocast keeps it in fp32
            best = torch.softmax(logits.float(), dim=-1).max(dim=-1)
            preds.append(logits.argmax(-1).cpu())
            probs.append(best.values.cpu())
            labels.append(y.cpu())
    model.train(was_training)
    # batches came in length order; put predictions back in file order
    inverse = np.argsort(np.asarray(order))
    y_true, y_pred = torch.cat(labels).numpy()[inverse], torch.cat(preds).numpy()[inverse]
    return Predictions(y_pred, y_true, loss_sum / max(len(y_true), 1), torch.cat(probs).numpy()[inverse])


@dataclass
class ClassifierRun:
    model: TinyTransformer
    history: list[dict]
    test: dict = field(default_factory=dict)
    best_epoch: int = 0  # the evaluated epoch whose weights `model` holds (keep_best), else the last
    validation: Predictions | None = None  # the validation pass of that epoch
    diverged_step: int | None = None  # where the loss went non-finite, the best epoch before it kept


class BestEpoch:
    """A copy of the weights at the best validation accuracy (the first on a tie)."""

    def __init__(self, model: torch.nn.Module):
        self.model, self.accuracy, self.epoch, self.state = model, -1.0, 0, None
        self.validation: Predictions | None = None

    def update(self, epoch: int, validation: Predictions) -> None:
        if validation.accuracy > self.accuracy:
            self.accuracy, self.epoch, self.validation = validation.accuracy, epoch, validation
            self.state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def restore(self) -> int:
        if self.state is not None:
            self.model.load_state_dict(self.state)
        return self.epoch


@dataclass(frozen=True)
class ClassifierRecipe:
    """How one classifier trains, built by the stage that runs it (finetune, grid) from its params."""

    start: str  # pretrained, scratch, frozen or hf (tinytf.train.starts)
    optimizer: str  # a torch.optim class name
    lr: float
    batch_size: int
    epochs: int
    max_length: int
    seed: int
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    grad_clip: float = 1.0
    schedule: str = "cosine"
    eval_every: int = 1
    keep_best: bool = False
    patience: int = 0  # validation passes in a row without a better accuracy that end the run (0: none)


def train_classifier(
    model: TinyTransformer,
    data: SentimentData,
    recipe: ClassifierRecipe,
    runtime: Runtime,
    *,
    callbacks: list[Callback] = (),
    state_path: str | Path | None = None,
    params_hash: str = "",
    desc: str = "finetune",
    progress: bool = True,
) -> ClassifierRun:
    """`eval_every` data epochs make one loop epoch (one validation pass): small subsets run many
    short epochs, and a validation pass each would cost as much as the training."""
    r = recipe
    options = data.loader_options(model.config.pooling)
    loader = sentiment_loader(
        data.splits["train"],
        r.batch_size,
        r.max_length,
        shuffle=True,
        seed=r.seed,
        group_by_length=True,
        **options,
    )
    source = LoaderSource(loader)
    model.to(runtime.device)
    if r.start == "frozen":
        model.base.eval()  # a probe reads fixed features: no dropout in the frozen body

    step = classifier_step_loss(model, runtime)

    def loss_fn(batch):
        if r.start == "frozen" and model.base.training:
            model.base.eval()  # run_loop and predict() put the whole model back in train mode
        ids, mask, y = (batch[k].to(runtime.device) for k in ("input_ids", "attention_mask", "labels"))
        loss, logits = step(ids, mask, y)
        if not len(y):  # a rank's empty slice of a batch smaller than the number of ranks
            return loss
        source.stats["loss_sum"] += float(loss.detach()) * len(y)
        source.stats["correct"] += int((logits.argmax(-1) == y).sum())
        source.stats["count"] += len(y)
        return loss

    best = BestEpoch(model)
    last: list[Predictions] = []

    def on_epoch_end(epoch: int, step: int) -> dict[str, float]:
        metrics = source.take_epoch_stats()
        validation = predict(
            model, data.splits["validation"], runtime.inference_batch, r.max_length, runtime, **options
        )
        last[:] = [validation]
        metrics.update(validation_loss=validation.loss, validation_accuracy=validation.accuracy)
        metrics["data_epochs"] = epoch * r.eval_every
        if r.keep_best:
            best.update(epoch * r.eval_every, validation)
        return metrics

    loop = classifier_loop(r, len(loader), desc)
    loop.progress = progress

    def stop_early(history: list[dict]) -> bool:
        if not r.patience:
            return False
        scores = [h["validation_accuracy"] for h in history]
        return len(scores) - 1 - scores.index(max(scores)) >= r.patience  # the first best counts

    diverged = None
    try:
        out = run_loop(
            model,
            source,
            loss_fn,
            loop,
            runtime,
            on_epoch_end,
            list(callbacks),
            state_path,
            params_hash,
            stop_early=stop_early,
        )
    except TrainingDiverged as exc:
        # a run that keeps its best epoch ends at a non-finite loss as at patience's stop
        if not r.keep_best or best.state is None:
            raise
        print(f"{exc.args[0].split(';')[0]}: keeping its best epoch, {best.epoch}", file=sys.stderr)
        out, diverged = {"history": exc.history}, exc.step
    ran = out["history"][-1]["data_epochs"] if out["history"] else 0  # fewer than planned after a stop
    best_epoch = best.restore() if r.keep_best else ran
    if r.start == "frozen":
        model.base.eval()
    validation = best.validation if r.keep_best else (last[0] if last else None)
    return ClassifierRun(
        model, out["history"], best_epoch=best_epoch, validation=validation, diverged_step=diverged
    )


def classifier_loop(recipe: ClassifierRecipe, batches_per_epoch: int, desc: str) -> LoopConfig:
    r = recipe
    steps_per_epoch = batches_per_epoch * r.eval_every
    total = steps_per_epoch * math.ceil(r.epochs / r.eval_every)
    return LoopConfig(
        total_steps=total,
        steps_per_epoch=steps_per_epoch,
        lr=r.lr,
        weight_decay=r.weight_decay,
        warmup_steps=int(r.warmup_ratio * total),
        grad_clip=r.grad_clip,
        log_every=max(steps_per_epoch // 10, 1),
        checkpoint_every=steps_per_epoch,
        optimizer=r.optimizer,
        schedule=r.schedule,
        desc=desc,
    )


def evaluate_test_split(model, data: SentimentData, max_length: int, runtime: Runtime) -> dict:
    options = data.loader_options(model.config.pooling)
    test = predict(model, data.splits["test"], runtime.inference_batch, max_length, runtime, **options)
    return {
        "test_accuracy": test.accuracy,
        "test_loss": test.loss,
        "predictions": test.predictions.tolist(),
        "labels": test.labels.tolist(),
        "probabilities": test.probabilities.tolist(),
    }
