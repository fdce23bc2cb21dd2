"""Fine-tuning (the core of stage `finetune`): the labelled-data curve and the pretraining-tokens curve.

Three starts of the same classifier (pretrained, scratch, frozen linear probe) are fine-tuned on
nested subsets of the train labels (`tinytf.data.subsets`). A seed fixes the subset, the head
initialisation and the batch order, so for one seed the starts differ only in their body: the
comparison over seeds is paired. The recipe is chosen on validation, never on test:

1. each start's learning rate: one run per candidate and seed on the `lr_search_labels` subset
   (the first `lr_search_seeds` of the seeds the curve runs there), the best mean validation
   accuracy wins (an untuned scratch arm would flatter pretraining);
2. every run keeps its best validation epoch;
3. the same recipe then runs every (label count, seed), and the pretrained start again from each
   pretraining snapshot at `snapshot_labels` labels.

The frozen start is a linear probe (`tinytf.train.probe`): a logistic regression on the body's
features, computed once per start, with its C chosen on validation in each run; it has no lr.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.config import FinetuneParams, HFParams
from tinytf.data.batching import SentimentDataset
from tinytf.data.subsets import count_name, label_subset
from tinytf.model.checkpoint import read_config
from tinytf.train.classify import (
    SentimentData,
    build_classifier,
    build_hf_classifier,
    classifier_config,
    classifier_runtime,
    evaluate_test_split,
    train_classifier,
)
from tinytf.train.loop import Callback
from tinytf.train.probe import ProbeFit, fit_probe, layer_features
from tinytf.train.runtime import Runtime

MAX_EVALUATIONS = 6  # validation passes per run at most: see `schedule`


@dataclass
class FinetuneResult:
    runs: pd.DataFrame  # one row per run: start, arm, labels, seed, lr, best epoch, accuracies
    curves: pd.DataFrame  # per evaluated epoch of the all-label runs (the per-epoch plot)
    lrs: dict[str, float]  # the learning rate chosen on validation for each arm
    search_seeds: list[int]  # the seeds the lrs were chosen over (at `lr_search_labels` labels)
    classes: list[str]
    runtime: Runtime  # what `auto` resolved to on this machine, for the outputs to record
    timings: pd.DataFrame  # wall seconds per run (a measurement: kept apart from the results)
    parameters: dict[str, int]  # parameters per arm's classifier


CallbacksFor = Callable[[str, int], contextlib.AbstractContextManager[list[Callback]]]


def schedule(n_train: int, params: FinetuneParams) -> tuple[int, int]:
    """(data epochs, epochs per validation pass) for a train set of `n_train` texts: at least
    `epochs`, more for small subsets until `min_steps` optimizer steps, validated at most
    MAX_EVALUATIONS times (a pass over validation costs about as much as 10 training steps)."""
    steps_per_epoch = math.ceil(n_train / params.batch_size)
    epochs = max(params.epochs, math.ceil(params.min_steps / steps_per_epoch))
    every = math.ceil(epochs / MAX_EVALUATIONS)
    return math.ceil(epochs / every) * every, every


def subset(data: SentimentData, count: int, seed: int) -> tuple[SentimentData, np.ndarray]:
    """The data with train cut to the seed's `count` labels, and the train rows kept."""
    train = data.splits["train"]
    rows = label_subset(np.asarray(train.labels), count, seed)
    splits = dict(data.splits, train=SentimentDataset([train.input_ids[i] for i in rows],
                                                      [train.labels[i] for i in rows]))  # fmt: skip
    return SentimentData(splits, data.classes, data.cls_id), rows


class Runner:
    """One fine-tuning run per call, each cached by its key so the lr search's runs are reused."""

    def __init__(
        self, params, data, max_length, runtime, callbacks_for, data_dir=None, hf: HFParams | None = None
    ):
        self.params, self.data, self.max_length, self.runtime = params, data, max_length, runtime
        self.callbacks_for = callbacks_for
        self.data_dir, self.hf, self.hf_data = data_dir, hf, None  # the hf arm's texts, encoded once
        self.done: dict[tuple, dict] = {}
        self.curves: list[dict] = []
        self.features: dict[str, dict] = {}  # the frozen body's features, per start
        self.probe_fits: dict[tuple, ProbeFit] = {}  # per start and train rows
        self.seconds: list[dict] = []
        self.parameters: dict[str, int] = {}

    def build(self, arm: str, start: Path, seed: int):
        """(model, its data, its max_length): the hf arm has its own tokenizer, hence its own ids."""
        n_classes, p = len(self.data.classes), self.params
        if arm != "hf":
            model = build_classifier(arm, classifier_config(start, n_classes, p.dropout), start, seed)
            return model, self.data, self.max_length
        model = build_hf_classifier(self.hf.checkpoint, n_classes, self.hf.max_length, seed)
        if self.hf_data is None:
            self.hf_data = self.data.for_hf(self.data_dir, model)
        return model, self.hf_data, self.hf.max_length

    def probe(self, model, start_name: str, rows: np.ndarray) -> dict:
        """The frozen start's row fields: the probe fitted on the `rows` of train."""
        if start_name not in self.features:
            self.features[start_name] = layer_features(model, self.data, self.max_length, self.runtime)
        key = (start_name, rows.tobytes())  # every seed's "all labels" is the same rows: one fit
        if key not in self.probe_fits:
            features = dict(self.features[start_name], train=self.features[start_name]["train"][rows])
            labels = {s: np.asarray(self.data.splits[s].labels) for s in ("validation", "test")}
            labels["train"] = np.asarray(self.data.splits["train"].labels)[rows]
            self.probe_fits[key] = fit_probe(features, labels, self.params.probe_cs)
        fit = self.probe_fits[key]
        return {"probe_c": fit.c, "validation_accuracy": fit.validation_accuracy,
                "test_accuracy": fit.test_accuracy, "test_loss": fit.test_loss}  # fmt: skip

    def __call__(
        self, arm: str, count: int, seed: int, lr: float | None, start: Path, start_name: str
    ) -> dict:
        """One run's row; `lr` is None for the frozen probe (it chooses its C itself)."""
        key = (start_name, arm, count, seed, lr)
        if key in self.done:
            return self.done[key]
        began = time.perf_counter()
        model, data, max_length = self.build(arm, start, seed)
        self.parameters[arm] = sum(t.numel() for t in model.parameters())
        p, (data, rows) = self.params, subset(data, count, seed)
        row = {
            "start": start_name, "tokens": None if arm == "hf" else read_config(start).get("pretrain_tokens"),
            "arm": arm, "labels": count_name(count), "n_train": len(data.splits["train"]), "seed": seed,
            "lr": lr, "epochs": None, "best_epoch": None, "probe_c": None,
        }  # fmt: skip
        track = self.callbacks_for and count == 0 and start_name == "final"
        with self.callbacks_for(arm, seed) if track else contextlib.nullcontext([]) as callbacks:
            if arm == "frozen":
                row |= self.probe(model, start_name, rows)
            else:
                epochs, every = schedule(len(data.splits["train"]), p)
                name = f"{arm} {count_name(count)} labels seed {seed} lr {lr:g}" + (
                    "" if start_name == "final" else f" from {start_name}"
                )
                run = train_classifier(model, data, init=arm, callbacks=callbacks, keep_best=True,
                                       optimizer=p.optimizer, lr=lr, batch_size=p.batch_size, epochs=epochs,
                                       max_length=max_length, seed=seed, runtime=self.runtime,
                                       weight_decay=p.weight_decay, warmup_ratio=p.warmup_ratio,
                                       eval_every=every, desc=name)  # fmt: skip
                test = evaluate_test_split(run.model, data, max_length, self.runtime)
                best = next(h for h in run.history if h["data_epochs"] == run.best_epoch)
                row |= {"epochs": epochs, "best_epoch": run.best_epoch,
                        "validation_accuracy": best["validation_accuracy"],
                        "test_accuracy": test["test_accuracy"], "test_loss": test["test_loss"]}  # fmt: skip
                if count == 0 and start_name == "final":
                    self.curves += [{"arm": arm, "seed": seed, **h} for h in run.history]
            for callback in callbacks:
                callback.on_end({"test_accuracy": row["test_accuracy"], "test_loss": row["test_loss"]})
        self.done[key] = row
        self.seconds.append({k: row[k] for k in ("start", "arm", "labels", "seed", "lr")}
                            | {"seconds": round(time.perf_counter() - began, 2)})  # fmt: skip
        return row


def chosen_lr(rows: list[dict]) -> float:
    """The lr whose runs have the best mean validation accuracy; the first best on a tie."""
    by_lr: dict[float, list[float]] = {}
    for row in rows:
        by_lr.setdefault(row["lr"], []).append(row["validation_accuracy"])
    return max(by_lr, key=lambda lr: float(np.mean(by_lr[lr])))


def run_finetune(
    params: FinetuneParams,
    max_length: int,
    pretrained: str | Path,
    data_dir: str | Path,
    snapshots: list[Path] = (),
    callbacks_for: CallbacksFor | None = None,
    hf: HFParams | None = None,
) -> FinetuneResult:
    """The lr search, the labelled-data curve and the snapshot curve; `callbacks_for(arm, seed)`
    wraps each all-label run (the stage opens a nested MLflow run there)."""
    data = SentimentData.load(data_dir)
    runtime = classifier_runtime(params, 0)  # every run is short: `auto` never compiles here
    if "hf" in params.arms and hf is None:
        raise ValueError("finetune.arms has 'hf': pass the hf params")
    run = Runner(params, data, max_length, runtime, callbacks_for, data_dir, hf)
    pretrained = Path(pretrained)
    plan = params.curve_plan()
    lr_rows, lrs = [], {}
    # seeds the curve runs at this count: the chosen lr's search runs are curve runs
    search_seeds = dict(plan)[params.lr_search_labels][: params.lr_search_seeds]
    for arm in [a for a in params.arms if a != "frozen"]:  # the probe chooses its C in every run
        candidates = hf.lrs if arm == "hf" else params.lrs
        rows = [run(arm, params.lr_search_labels, seed, lr, pretrained, "final")
                for lr in candidates for seed in search_seeds]  # fmt: skip
        lrs[arm] = chosen_lr(rows)
        lr_rows += rows
    rows = []
    for count, seeds in plan:
        rows += [
            run(arm, count, seed, lrs.get(arm), pretrained, "final") for arm in params.arms for seed in seeds
        ]
    if "pretrained" in params.arms:
        # the first few seeds, as for large subsets: one run per snapshot and seed adds up
        seeds = dict(plan)[params.snapshot_labels][: params.many_label_seeds]
        for snapshot in snapshots:
            rows += [run("pretrained", params.snapshot_labels, s, lrs["pretrained"], snapshot, snapshot.stem)
                     for s in seeds]  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["chosen"] = True
    searched = pd.DataFrame(lr_rows).assign(chosen=False)
    searched = searched[~searched.set_index(["arm", "lr"]).index.isin(list(lrs.items()))]
    runs = pd.concat([frame, searched], ignore_index=True)
    timings = pd.DataFrame(run.seconds)
    return FinetuneResult(
        runs,
        pd.DataFrame(run.curves),
        lrs,
        list(search_seeds),
        data.classes,
        runtime,
        timings,
        run.parameters,
    )
