"""One fine-tuning run (`Trainer`, built once per worker process): its model, labelled subset,
schedule and the training events it records for the stage's MLflow run."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from tinytf.data.batching import SentimentDataset
from tinytf.data.predictions import prediction_rows
from tinytf.data.sentiment import SentimentData
from tinytf.data.subsets import count_name, label_subset
from tinytf.model.param_count import classifier_parameters
from tinytf.params.config import FinetuneParams, HFParams
from tinytf.train.classify import (
    ClassifierRecipe,
    classifier_runtime,
    evaluate_test_split,
    planned_steps,
    train_classifier,
)
from tinytf.train.loop import Callback
from tinytf.train.recipes import RunSpec
from tinytf.train.runtime import Runtime
from tinytf.train.starts import build_start


@dataclasses.dataclass(frozen=True)
class RunOutcome:
    """One fine-tuning run as a worker hands it back (a probe's too)."""

    row: dict  # runs.csv's columns this run fills: n_train, accuracies, epochs...
    history: list[dict]  # per evaluation, for a tracked run (the curve's seeds); else empty
    events: list  # (callback method, step, metrics): the MLflow callback calls, to replay
    predictions: list  # validation and test prediction frames (tinytf.data.predictions)
    seconds: float  # wall time of the run
    parameters: int | None = None  # the classifier's parameters (a probe's are counted where it runs)


MAX_EVALUATIONS = 6  # validation passes per run at most: see `schedule`


def schedule(n_train: int, params: FinetuneParams) -> tuple[int, int]:
    """(data epochs, epochs per validation pass) for `n_train` texts: at least `epochs`, more for
    small subsets until `min_steps` optimizer steps, validated at most MAX_EVALUATIONS times."""
    steps_per_epoch = math.ceil(n_train / params.batch_size)
    epochs = max(params.epochs, math.ceil(params.min_steps / steps_per_epoch))
    every = math.ceil(epochs / MAX_EVALUATIONS)
    return math.ceil(epochs / every) * every, every


def subset(data: SentimentData, count: int, seed: int) -> tuple[SentimentData, np.ndarray]:
    """The data with train cut to the seed's `count` labels, and the rows kept."""
    train = data.splits["train"]
    rows = label_subset(np.asarray(train.labels), count, seed)
    splits = dict(
        data.splits,
        train=SentimentDataset([train.input_ids[i] for i in rows], [train.labels[i] for i in rows]),
    )
    # replace, not a new SentimentData: the hf start's pad id travels with its splits
    return dataclasses.replace(data, splits=splits, encoded={}), rows


def finetune_runtime(params: FinetuneParams, data: SentimentData) -> Runtime:
    """On CUDA one process trains every run, so one compile serves them all: the all-labels run's
    planned steps decide `compile: auto`."""
    return classifier_runtime(params, planned_steps(data, params.batch_size, params.epochs))


class Trainer:
    def __init__(self, params: FinetuneParams, data_dir, max_length: int, hf: HFParams | None):
        self.params, self.data_dir, self.max_length, self.hf = params, data_dir, max_length, hf
        self.data = SentimentData.load(data_dir)  # the hf start's encoding is made once, kept in it
        self.runtime = finetune_runtime(params, self.data)

    def build(self, start: str, checkpoint: Path, seed: int, dropout: float):
        """(model, its data, its max_length): the hf start has its own tokenizer, hence its own ids."""
        p = self.params
        built = build_start(
            start, self.data, self.data_dir, checkpoint, self.max_length, seed, dropout, p.attention, self.hf
        )
        return built.model, built.data, built.max_length

    def cost(self, spec: RunSpec) -> int:
        """Optimizer steps the run takes: the workers start the longest runs first."""
        n = len(self.data.splits["train"]) if spec.count == 0 else spec.count
        return math.ceil(n / self.params.batch_size) * schedule(n, self.params)[0]

    def train(self, spec: RunSpec) -> RunOutcome:
        began = time.perf_counter()
        model, data, max_length = self.build(spec.start, spec.checkpoint, spec.seed, spec.dropout)
        p, (data, _) = self.params, subset(data, spec.count, spec.seed)
        epochs, every = schedule(len(data.splits["train"]), p)
        name = (
            f"{spec.start} {count_name(spec.count)} labels seed {spec.seed} lr {spec.lr:g} dropout {spec.dropout:g}"
            + ("" if spec.snapshot == "final" else f" from {spec.snapshot}")
        )
        recorder = Recorder()
        recipe = ClassifierRecipe(
            start=spec.start,
            optimizer=p.optimizer,
            lr=spec.lr,
            batch_size=p.batch_size,
            epochs=epochs,
            max_length=max_length,
            seed=spec.seed,
            weight_decay=p.weight_decay,
            warmup_ratio=p.warmup_ratio,
            eval_every=every,
            keep_best=True,
            patience=p.patience,
        )
        run = train_classifier(
            model, data, recipe, self.runtime, callbacks=[recorder], desc=name, progress=False
        )
        test = evaluate_test_split(run.model, data, max_length, self.runtime)
        best = next(h for h in run.history if h["data_epochs"] == run.best_epoch)
        val = run.validation
        predictions = [
            prediction_rows(spec.tags(), "validation", val.labels, val.predictions, val.probabilities),
            prediction_rows(spec.tags(), "test", test["labels"], test["predictions"], test["probabilities"]),
        ]
        row = {
            "n_train": len(data.splits["train"]),
            "epochs": run.history[-1]["data_epochs"],  # trained; fewer than planned after a stop
            "diverged_step": run.diverged_step,  # None, or where its loss went non-finite
            "best_epoch": run.best_epoch,
            "validation_accuracy": best["validation_accuracy"],
            "test_accuracy": test["test_accuracy"],
            "test_loss": test["test_loss"],
        }
        return RunOutcome(
            row=row,
            history=run.history if spec.tracked else [],
            events=recorder.events,
            predictions=predictions,
            seconds=time.perf_counter() - began,
            parameters=classifier_parameters(model),
        )


class Recorder(Callback):
    """A worker's training events, to be replayed into the stage's MLflow callbacks."""

    def __init__(self):
        self.events: list[tuple[str, int, dict]] = []

    def on_step(self, step: int, metrics: dict[str, float]) -> None:
        self.events.append(("on_step", step, dict(metrics)))

    def on_epoch(self, epoch: int, metrics: dict[str, float]) -> None:
        self.events.append(("on_epoch", epoch, dict(metrics)))
