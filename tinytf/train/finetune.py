"""Fine-tuning (the core of stage `finetune`): the labelled-data curve and the pretraining-tokens curve.

The starts are fine-tuned on nested subsets of the train labels (`tinytf.data.subsets`); a seed fixes
the subset, the head's init and the batch order, so over seeds the comparison is paired. Recipes are
chosen on validation, never on test: each trained start's lr x dropout at each `search_labels` count
by successive halving over the first `search_seeds` seeds (tinytf.train.recipes), the same candidates
for every start; each count's recipe then runs every seed, and the pretrained start again from each
snapshot. The probe start (`tinytf.train.linear_probe`) chooses its C on validation in each run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from tinytf.data.predictions import prediction_rows
from tinytf.data.sentiment import SentimentData
from tinytf.data.subsets import check_counts, count_name
from tinytf.model.checkpoint import read_config
from tinytf.model.param_count import classifier_parameters
from tinytf.params.config import FinetuneParams, HFParams
from tinytf.train import protocol
from tinytf.train.finetune_trainer import RunOutcome, Trainer, finetune_runtime, subset
from tinytf.train.linear_probe import ProbeFit, fit_probe, layer_features
from tinytf.train.loop import Callback
from tinytf.train.progress import RunProgress
from tinytf.train.recipes import Body, RunSpec, body_of, chosen_recipe, halving_search, planned_runs
from tinytf.train.run_store import RunStore, store_key
from tinytf.train.runtime import Runtime
from tinytf.train.workers import Workers


@dataclass
class FinetuneResult:
    pretrain_seeds: list[int | None]  # the bodies the pretrained and probe starts fine-tuned
    runs: pd.DataFrame  # one row per run: snapshot, start, labels, seed, lr, best epoch, accuracies
    curves: pd.DataFrame  # per evaluated epoch of the all-label runs (the per-epoch plot)
    recipes: dict[str, dict[str, dict]]  # per searched count, per trained start: choice and candidates
    search_seeds: list[int]  # the seeds the recipes were chosen over (at each `search_labels` count)
    classes: list[str]
    runtime: Runtime  # what `auto` resolved to on this machine, for the outputs to record
    timings: pd.DataFrame  # wall seconds per run (a measurement: kept apart from the results)
    parameters: dict[str, int]  # parameters per start's classifier (what classifying uses: no LM head)
    workers: int  # processes the runs went to (tinytf.train.workers): a rerun elsewhere may differ
    predictions: pd.DataFrame  # every run's validation and test predictions (tinytf.analysis.items)


# called with a run's tags (start, labels, seed, snapshot, lr, dropout): the stage opens an MLflow child run
CallbacksFor = Callable[[dict], contextlib.AbstractContextManager[list[Callback]]]


def check_label_counts(params: FinetuneParams, data_dir: str | Path) -> None:
    """Refuse label counts the train split cannot give, from the file's row count alone."""
    train_file = SentimentData.folder(data_dir) / "train.parquet"
    if train_file.exists():  # a missing one is SentimentData.load's error, which says what to run first
        check_counts(params.label_counts, pq.read_metadata(train_file).num_rows, str(train_file))


def _train(trainer: Trainer, spec: RunSpec) -> RunOutcome:
    return trainer.train(spec)


class Runner:
    """Runs specs, each once: the trained starts in `tinytf.train.workers`, the linear probe here,
    as its features are computed once per start."""

    def __init__(
        self,
        params,
        data_dir,
        max_length,
        callbacks_for,
        workers: Workers,
        hf: HFParams | None = None,
        store: RunStore | None = None,
    ):
        self.trainer = Trainer(params, data_dir, max_length, hf)
        self.store = store or RunStore(None, "")
        self.params, self.data, self.max_length = params, self.trainer.data, max_length
        self.runtime, self.callbacks_for, self.workers = self.trainer.runtime, callbacks_for, workers
        self.done: dict[RunSpec, dict] = {}
        self.curves: list[dict] = []
        self.features: dict[Path, dict] = {}  # the frozen body's features, per checkpoint
        self.probe_fits: dict[tuple, ProbeFit] = {}  # per start and train rows
        self.seconds: list[dict] = []
        self.parameters: dict[str, int] = {}
        self.predictions: list[pd.DataFrame] = []  # per run and split, one row per text
        self.progress: RunProgress | None = None  # the stage's runs done out of all, over every call

    def probe(self, spec: RunSpec) -> RunOutcome:
        began = time.perf_counter()
        # the probe reads the frozen body (eval mode: no dropout) and fits its own head
        model, _, _ = self.trainer.build("frozen", spec.checkpoint, spec.seed, 0.0)
        self.parameters[spec.start] = classifier_parameters(model)
        rows = subset(self.data, spec.count, spec.seed)[1]
        if spec.checkpoint not in self.features:
            self.features[spec.checkpoint] = layer_features(model, self.data, self.max_length, self.runtime)
        start_features = self.features[spec.checkpoint]
        key = (spec.checkpoint, rows.tobytes())  # every seed's "all labels" is the same rows: one fit
        if key not in self.probe_fits:
            features = dict(start_features, train=start_features["train"][rows])
            labels = {s: np.asarray(self.data.splits[s].labels) for s in ("validation", "test")}
            labels["train"] = np.asarray(self.data.splits["train"].labels)[rows]
            self.probe_fits[key] = fit_probe(features, labels, self.params.probe_cs)
        fit = self.probe_fits[key]
        predictions = [
            prediction_rows(spec.tags(), split, self.data.splits[split].labels, *fit.predictions[split])
            for split in ("validation", "test")
        ]
        row = {
            "n_train": len(rows),
            "probe_c": fit.c,
            "validation_accuracy": fit.validation_accuracy,
            "test_accuracy": fit.test_accuracy,
            "test_loss": fit.test_loss,
        }
        return RunOutcome(
            row=row, history=[], events=[], predictions=predictions, seconds=time.perf_counter() - began
        )

    def __call__(self, specs: list[RunSpec]) -> list[dict]:
        todo = [s for s in dict.fromkeys(specs) if s not in self.done]
        trained = [s for s in todo if s.start != "probe"]
        results = {s: kept for s in trained if (kept := self.store.load(s)) is not None}
        if results:
            print(
                f"finetune: {len(results)} of {len(trained)} runs kept from a stage that stopped",
                file=sys.stderr,
            )
        fresh = [s for s in trained if s not in results]
        if self.progress is not None:
            self.progress.skip(len(results))
        done = self.workers.map(_train, fresh, self.trainer.cost, self.store.save, self.progress)
        results |= dict(zip(fresh, done, strict=True))
        for spec in todo:
            out = results[spec] if spec.start != "probe" else self.probe(spec)
            self.record(spec, out)
        return [self.done[s] for s in specs]

    def record(self, spec: RunSpec, out: RunOutcome) -> None:
        row = {
            "snapshot": spec.snapshot,
            "tokens": None if spec.start == "hf" else read_config(spec.checkpoint).get("pretrain_tokens"),
            "start": spec.start,
            "labels": count_name(spec.count),
            "n_train": None,
            "seed": spec.seed,
            "body": spec.body,
            "lr": spec.lr,
            "dropout": spec.dropout,
            "epochs": None,
            "best_epoch": None,
            "probe_c": None,
            "diverged_step": None,
            **out.row,
        }
        if out.parameters is not None:
            self.parameters[spec.start] = out.parameters
        track = self.callbacks_for is not None
        with self.callbacks_for(spec.tags()) if track else contextlib.nullcontext([]) as callbacks:
            for callback in callbacks:
                callback.replay(out.events)
                callback.on_end({"test_accuracy": row["test_accuracy"], "test_loss": row["test_loss"]})
        self.curves += [{"start": spec.start, "seed": spec.seed, **h} for h in out.history]
        self.predictions += out.predictions
        self.done[spec] = row
        self.seconds.append(
            {k: row[k] for k in ("snapshot", "start", "labels", "seed", "lr", "dropout")}
            | {"seconds": round(out.seconds, 2)}
        )


def run_finetune(
    params: FinetuneParams,
    max_length: int,
    pretrained: str | Path | list[Body],
    data_dir: str | Path,
    snapshots: list[Path] = (),
    callbacks_for: CallbacksFor | None = None,
    hf: HFParams | None = None,
    state: str | Path | None = None,
) -> FinetuneResult:
    """`pretrained`: the bodies (tinytf.train.recipes.find_bodies), or one model with its `snapshots`.
    `callbacks_for(tags)` wraps every run; `state`: a folder that keeps each finished run until the
    stage ends (tinytf.train.run_store), so a stopped stage started again trains only the rest."""
    if "hf" in params.starts and hf is None:
        raise ValueError("finetune.starts has 'hf': pass the hf params")
    check_label_counts(params, data_dir)
    runtime = finetune_runtime(params, SentimentData.load(data_dir))
    bodies = pretrained if isinstance(pretrained, list) else [_one_body(Path(pretrained), snapshots)]
    plan = protocol.curve_plan(params)
    search_seeds = list(params.seeds[: params.search_seeds])  # its runs are curve runs too
    trained_starts = [a for a in params.starts if a != "probe"]  # the probe chooses its C in every run
    data_files = sorted(SentimentData.folder(data_dir).glob("*"))
    checkpoints = [p for b in bodies for p in (b.model, *b.snapshots) if p.exists()]
    settings = {"params": dataclasses.asdict(params), "hf": hf and dataclasses.asdict(hf)}
    settings |= {"max_length": max_length, "runtime": runtime.describe()}
    store = RunStore(state, store_key(settings, data_files + checkpoints) if state else "")
    with Workers(runtime.device, Trainer, (params, data_dir, max_length, hf), "finetune runs") as workers:
        run = Runner(params, data_dir, max_length, callbacks_for, workers, hf, store)
        candidates = {
            (start, count): protocol.recipes(params, hf.lrs if start == "hf" else None)
            for count in protocol.search_counts(params)
            for start in trained_starts
        }
        total = planned_runs(params, candidates, len(bodies[0].snapshots))
        run.progress = RunProgress(total, "finetune runs")

        def run_spec(start, count, seed, lr, dropout, snapshot="final"):
            body = body_of(seed, params.seeds, bodies)  # scratch and hf read its config alone
            checkpoint = (
                body.model if snapshot == "final" else next(p for p in body.snapshots if p.stem == snapshot)
            )
            pretrained_body = body.seed if start in ("pretrained", "probe") else None
            return RunSpec(start, count, seed, lr, dropout, checkpoint, snapshot, pretrained_body)

        search_rows, finalists = halving_search(run, candidates, search_seeds, run_spec)
        recipes = {
            count_name(count): {
                start: chosen_recipe(
                    [r for r in search_rows if (r["start"], r["labels"]) == (start, count_name(count))],
                    finalists[start, count],
                )
                for start in trained_starts
            }
            for count in protocol.search_counts(params)
        }

        def spec(start, count, seed, snapshot="final"):
            recipe = recipes[count_name(protocol.recipe_count(params, count))].get(start, {})
            return run_spec(start, count, seed, recipe.get("lr"), recipe.get("dropout"), snapshot)

        specs = [
            spec(start, count, seed) for count, seeds in plan for start in params.starts for seed in seeds
        ]
        if "pretrained" in params.starts:  # every body has the same snapshots (the same epochs)
            specs += [
                spec("pretrained", params.snapshot_labels, seed, snapshot.stem)
                for snapshot in bodies[0].snapshots
                for seed in params.seeds
            ]
        rows = run(specs)
        run.progress.close()
    frame = pd.DataFrame(rows)
    frame["chosen"] = True
    chosen = {
        (labels, start, r["lr"], r["dropout"])
        for labels, by_start in recipes.items()
        for start, r in by_start.items()
    }
    searched = pd.DataFrame(search_rows).assign(chosen=False)
    keys = list(zip(searched["labels"], searched["start"], searched["lr"], searched["dropout"], strict=True))
    searched = searched[[key not in chosen for key in keys]]
    runs = pd.concat([frame, searched], ignore_index=True)
    return FinetuneResult(
        [b.seed for b in bodies],
        runs,
        pd.DataFrame(run.curves),
        recipes,
        search_seeds,
        run.data.classes,
        runtime,
        pd.DataFrame(run.seconds),
        run.parameters,
        workers.count,
        pd.concat(run.predictions, ignore_index=True),
    )


def _one_body(model: Path, snapshots) -> Body:
    seed = read_config(model).get("pretrain_seed") if model.exists() else None
    return Body(seed, model, tuple(snapshots))
