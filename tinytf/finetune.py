"""Stage `finetune`: pretrained vs scratch vs frozen, each over several seeds.

The same seed gives every arm the same head initialisation and the same batch order, so the
arms differ only in their starting body: a paired comparison over seeds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.classify import (
    SentimentData,
    build_classifier,
    classifier_config,
    evaluate_test_split,
    train_classifier,
)
from tinytf.config import FinetuneParams
from tinytf.evaluation import paired_comparison
from tinytf.runtime import resolve_runtime
from tinytf.tracking import TrackerCallback


def run_finetune(
    params: FinetuneParams,
    max_length: int,
    pretrained: str | Path = "data/models/pretrained.pt",
    data_dir: str | Path = "data",
    track: Callable[[str, int], contextlib.AbstractContextManager] | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Returns (per-epoch curves of every arm and seed, summary with test accuracy per arm).

    `track(arm, seed)` is a context manager yielding a `Tracker` for that run (a nested MLflow
    run in the stage); without it nothing is logged.
    """
    data = SentimentData.load(data_dir)
    config = classifier_config(pretrained, len(data.classes), params.dropout)
    runtime = resolve_runtime(params.device, params.precision, False, 0)
    rows, tests = [], {arm: {} for arm in params.arms}
    for arm in params.arms:
        for seed in params.seeds:
            with track(arm, seed) if track else contextlib.nullcontext() as tracker:
                history, test = _one_run(params, arm, seed, config, pretrained, data, max_length, runtime,
                                         [TrackerCallback(tracker)] if tracker else [])  # fmt: skip
                if tracker:
                    tracker.log_metrics(
                        {"test_accuracy": test["test_accuracy"], "test_loss": test["test_loss"]}
                    )
            tests[arm][seed] = test["test_accuracy"]
            rows += [{"arm": arm, "seed": seed, **h} for h in history]
    curves = pd.DataFrame(rows)

    summary = {
        "arms": {
            arm: {
                "test_accuracy_mean": float(np.mean(list(acc.values()))),
                "test_accuracy_std": float(np.std(list(acc.values()), ddof=1)) if len(acc) > 1 else 0.0,
                "test_accuracy_by_seed": {str(s): a for s, a in acc.items()},
            }
            for arm, acc in tests.items()
        },  # fmt: skip
        "seeds": list(params.seeds),
        "epochs": params.epochs,
        "classes": data.classes,
    }
    for arm in ("pretrained", "frozen"):
        if arm in tests and "scratch" in tests:
            seeds = params.seeds
            summary[f"{arm}_vs_scratch"] = paired_comparison(
                [tests[arm][s] for s in seeds], [tests["scratch"][s] for s in seeds]
            )
    return curves, summary


def _one_run(params, arm, seed, config, pretrained, data, max_length, runtime, callbacks):
    model = build_classifier(arm, config, pretrained, seed)
    run = train_classifier(
        model, data, init=arm, optimizer=params.optimizer,
        lr=params.frozen_lr if arm == "frozen" else params.lr, batch_size=params.batch_size,
        epochs=params.epochs, max_length=max_length, seed=seed, runtime=runtime,
        weight_decay=params.weight_decay, warmup_ratio=params.warmup_ratio, callbacks=callbacks,
        desc=f"{arm} seed {seed}",
    )  # fmt: skip
    return run.history, evaluate_test_split(run.model, data, max_length, runtime)
