"""Sentiment classification on top of the transformer: build, initialise, train, evaluate.

Three initialisations of the same classifier (course reports 000/002):
    pretrained  base weights from the pretrained LM, a new classification head, all trained
    scratch     the same architecture from a random init
    frozen      the pretrained base frozen (and in eval mode, so no dropout), only the head
                trained (the grid's `frozen` init; the finetune study's frozen start is the
                logistic-regression probe of `tinytf.train.linear_probe`)
Training reuses `tinytf.train.loop.run_loop`; the train loss/accuracy of an epoch are running
averages over its batches (what the course reports plot), validation is a separate pass.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch

from tinytf.data.batching import PAD_ID, SentimentDataset, sentiment_loader
from tinytf.data.splits import SPLITS
from tinytf.data.tokenizer import CLS, encode
from tinytf.errors import DataError
from tinytf.model import hf
from tinytf.model.checkpoint import load_weights, read_config
from tinytf.model.hf import HFClassifier
from tinytf.model.transformer import ModelConfig, TinyTransformer, cls_loss
from tinytf.train import distributed
from tinytf.train.loop import Callback, LoopConfig, run_loop
from tinytf.train.runtime import CLASSIFIER_COMPILE_MIN_STEPS as CLASSIFIER_MIN_STEPS
from tinytf.train.runtime import Runtime, maybe_compile, resolve_runtime, seed_everything

INITS = ("pretrained", "scratch", "frozen", "hf")


@dataclass
class SentimentData:
    splits: dict[str, SentimentDataset]
    classes: list[str]
    cls_id: int | None  # our tokenizer's [CLS] (first-token pooling prepends it); None for `hf`
    pad_id: int = PAD_ID

    @staticmethod
    def folder(data_dir: str | Path) -> Path:
        """Where `tokenize` wrote the splits' parquet files and labels.json under `data_dir`."""
        return Path(data_dir) / "tokens" / "sentiment"

    @classmethod
    def load(cls, data_dir: str | Path) -> SentimentData:
        root = cls.folder(data_dir)
        labels = root / "labels.json"
        if not labels.exists():
            raise DataError(f"{labels}: not found; run the prepare and tokenize stages first")
        classes = json.loads(labels.read_text())["classes"]
        splits = {s: SentimentDataset.from_parquet(root / f"{s}.parquet") for s in SPLITS}
        from tinytf.data.tokenizer import load_tokenizer

        cls_id = load_tokenizer(Path(data_dir) / "tokenizer.json").token_to_id(CLS)
        return cls(splits, classes, cls_id)

    def for_hf(self, data_dir: str | Path, model: HFClassifier) -> SentimentData:
        """These splits and labels (as `tokenize` numbered them, in file order), the texts encoded
        by the external checkpoint's own tokenizer (special tokens added, truncated to its
        max_length) from `prepare`'s sentiment files."""
        prepared = Path(data_dir) / "prepared" / "sentiment"
        tokenizer, splits = model.text_tokenizer(), {}
        for split in SPLITS:
            texts = pd.read_parquet(prepared / f"{split}.parquet", columns=["text"])["text"].tolist()
            labels = self.splits[split].labels
            if len(texts) != len(labels):
                raise DataError(
                    f"{prepared / split}.parquet: {len(texts)} texts but {len(labels)} tokenized labels"
                )
            splits[split] = SentimentDataset(encode(tokenizer, texts, add_special_tokens=True), list(labels))
        return SentimentData(splits, self.classes, None, model.pad_id)

    def loader_options(self, model) -> dict:
        """How batches of this data are made for `model`: its pad id; our [CLS] prefix where it pools the first token."""
        return {"prefix_id": self.cls_id if model.config.pooling == "first" else None, "pad_id": self.pad_id}


def classifier_config(
    pretrained_path: str | Path, n_classes: int, dropout: float | None = None, attention: str = "pretraining"
) -> ModelConfig:
    """The pretrained model's architecture with a head for `n_classes`; its attention is the
    body's own (`pretraining`: causal after a causal LM, bidirectional after a masked one) unless
    `attention` names one (finetune.attention)."""
    config = read_config(pretrained_path)["model"]
    config["n_classes"] = n_classes
    if dropout is not None:
        config["dropout"] = dropout
    if attention != "pretraining":
        config["causal"] = attention == "causal"
    return ModelConfig.from_dict(config)


def build_classifier(
    init: str, config: ModelConfig, pretrained_path: str | Path, seed: int
) -> TinyTransformer:
    if init not in INITS or init == "hf":
        raise DataError(
            f"unknown initialisation '{init}'; expected one of {INITS[:3]} (hf: build_hf_classifier)"
        )
    seed_everything(seed)  # the head (and for scratch the whole model) starts from this seed
    model = TinyTransformer(config)
    if init in ("pretrained", "frozen"):
        model.load_base_state_dict(load_weights(pretrained_path))
    if init == "frozen":
        for p in model.base.parameters():
            p.requires_grad_(False)
    return model


def build_hf_classifier(
    checkpoint: str, n_classes: int, max_length: int, seed: int, dropout: float | None = None
) -> HFClassifier:
    """The external encoder with a new head drawn from `seed` (tinytf.model.hf)."""
    seed_everything(seed)
    return hf.build(checkpoint, n_classes, max_length, dropout)


def classifier_runtime(params, planned_steps: int = 0) -> Runtime:
    """Where classifiers train and predict: the `finetune:` section's device, precision and
    compile (the grid and evaluate use them too); `planned_steps` decides `compile: auto` against
    the classifier's own thresholds (`CLASSIFIER_COMPILE_MIN_STEPS`): never on a CPU, from a
    hundred steps on CUDA."""
    return resolve_runtime(
        params.device, params.precision, params.compile, planned_steps, CLASSIFIER_MIN_STEPS
    )


def planned_steps(data: SentimentData, batch_size: int, epochs: int) -> int:
    return math.ceil(len(data.splits["train"]) / batch_size) * epochs


def classifier_step_loss(model: TinyTransformer, runtime: Runtime):
    """(ids, mask, labels) -> (loss, logits) of one batch: compiled, the graph holds the forward,
    the loss and their backward. Lengths differ from batch to batch, so the graph takes a
    symbolic length instead of being compiled again for each one."""

    def step_loss(ids: torch.Tensor, mask: torch.Tensor, y: torch.Tensor):
        logits = model.forward_cls(ids, mask)
        return cls_loss(logits, y), logits

    return maybe_compile(step_loss, runtime, dynamic=True)


class LoaderSource:
    """Epoch-wise batches from a shuffling DataLoader, with a resumable position.

    The loader draws each epoch's order from its generator when iterated, so the position is
    (generator state at the start of the epoch, batches consumed); the running train
    statistics of the epoch travel with it.
    """

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
    """Predicted labels, true labels, mean loss and the predictions' probabilities over a split."""
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
    # one autocast for the whole pass: it keeps each weight's bf16 copy until it exits, where one
    # per batch cast every weight anew; the values are the same
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


class BestEpoch:
    """Keeps a copy of the weights at the best validation accuracy (the first on a tie): the
    fine-tuning recipe takes the best validation epoch, never a test figure."""

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
    """How one classifier trains, built once by the stage that runs it (finetune, grid) from its
    params, as PretrainParams is pretraining's recipe."""

    init: str  # the start: pretrained, scratch, frozen or hf
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
    options = data.loader_options(model)
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
    if r.init == "frozen":
        model.base.eval()  # a probe reads fixed features: no dropout in the frozen body

    step = classifier_step_loss(model, runtime)

    def loss_fn(batch):
        if r.init == "frozen" and model.base.training:
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

    loop = classifier_loop(
        len(loader),
        r.epochs,
        r.eval_every,
        r.lr,
        r.weight_decay,
        r.warmup_ratio,
        r.grad_clip,
        r.optimizer,
        r.schedule,
        desc,
    )
    loop.progress = progress
    epochs = loop.total_steps // loop.steps_per_epoch
    out = run_loop(
        model, source, loss_fn, loop, runtime, on_epoch_end, list(callbacks), state_path, params_hash
    )
    best_epoch = best.restore() if r.keep_best else epochs * r.eval_every
    if r.init == "frozen":
        model.base.eval()
    validation = best.validation if r.keep_best else (last[0] if last else None)
    return ClassifierRun(model, out["history"], best_epoch=best_epoch, validation=validation)


def classifier_loop(
    batches_per_epoch: int,
    epochs: int,
    eval_every: int,
    lr: float,
    weight_decay: float,
    warmup_ratio: float,
    grad_clip: float,
    optimizer: str,
    schedule: str,
    desc: str,
) -> LoopConfig:
    """The fine-tuning schedule: `eval_every` data epochs make one loop epoch (one validation pass)."""
    steps_per_epoch = batches_per_epoch * eval_every
    total = steps_per_epoch * math.ceil(epochs / eval_every)
    return LoopConfig(
        total_steps=total,
        steps_per_epoch=steps_per_epoch,
        lr=lr,
        weight_decay=weight_decay,
        warmup_steps=int(warmup_ratio * total),
        grad_clip=grad_clip,
        log_every=max(steps_per_epoch // 10, 1),
        checkpoint_every=steps_per_epoch,
        optimizer=optimizer,
        schedule=schedule,
        desc=desc,
    )


def evaluate_test_split(model, data: SentimentData, max_length: int, runtime: Runtime) -> dict:
    options = data.loader_options(model)
    test = predict(model, data.splits["test"], runtime.inference_batch, max_length, runtime, **options)
    return {
        "test_accuracy": test.accuracy,
        "test_loss": test.loss,
        "predictions": test.predictions.tolist(),
        "labels": test.labels.tolist(),
        "probabilities": test.probabilities.tolist(),
    }
