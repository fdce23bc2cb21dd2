"""One fine-tuning run's spec, and the recipe search (protocol v3): successive halving of the lr x
dropout candidates over the search seeds, and the choice among the last round's, on validation only."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinytf.data.subsets import count_name
from tinytf.errors import DataError
from tinytf.train import protocol


@dataclass(frozen=True)
class RunSpec:
    """One fine-tuning run; `count` 0 is all labels, `snapshot` "final" or a snapshot's name, and lr
    and dropout None for the linear probe."""

    start: str
    count: int
    seed: int
    lr: float | None
    dropout: float | None
    checkpoint: Path
    snapshot: str
    body: int | None = None  # the pretraining seed of the body it fine-tunes (None: scratch, hf)

    @property
    def tracked(self) -> bool:
        """The all-label runs from the final model: their epochs make the per-epoch plot."""
        return self.count == 0 and self.snapshot == "final"

    def tags(self) -> dict:
        """What the MLflow UI filters the study's runs by."""
        return {
            "start": self.start,
            "labels": count_name(self.count),
            "seed": self.seed,
            "snapshot": self.snapshot,
            "lr": self.lr,
            "dropout": self.dropout,
            "body": self.body,
        }


@dataclass(frozen=True)
class Body:
    """One pretraining run's model and its snapshots; `seed` is its pretraining seed."""

    seed: int | None
    model: Path
    snapshots: tuple[Path, ...] = ()


def find_bodies(models: str | Path, snapshots: str | Path, seeds: list[int]) -> list[Body]:
    """The bodies of pretrain.seeds, in order: `models`/seed<N>.pt, `snapshots`/seed<N>/epoch<K>.pt."""
    bodies = []
    for seed in seeds:
        model = Path(models) / f"seed{seed}.pt"
        if not model.exists():
            raise DataError(f"{model}: not found; stage 'pretrain' writes it: run `dvc repro pretrain`")
        taken = sorted((Path(snapshots) / f"seed{seed}").glob("epoch*.pt"), key=lambda p: int(p.stem[5:]))
        bodies.append(Body(seed, model, tuple(taken)))
    return bodies


def body_of(seed: int, seeds: list[int], bodies: list[Body]) -> Body:
    """The i-th seed of finetune.seeds takes body i mod B: the search's first seeds spread over them."""
    return bodies[list(seeds).index(seed) % len(bodies)]


def scores(rows: list[dict]) -> dict[tuple, list[float]]:
    """{(lr, dropout): [validation accuracy of each of its runs]}, in the rows' order."""
    by_recipe: dict[tuple, list[float]] = {}
    for row in rows:
        by_recipe.setdefault((row["lr"], row["dropout"]), []).append(row["validation_accuracy"])
    return by_recipe


def chosen_recipe(rows: list[dict], among: list[tuple] | None = None) -> dict:
    """{"lr", "dropout", "candidates": [{"lr", "dropout", "validation_accuracy", "seeds"}]}: of the
    recipes `among` (default: all), the best mean validation accuracy; the first best on a tie."""
    by_recipe = scores(rows)
    lr, dropout = ranked(by_recipe, among)[0]
    candidates = [
        {"lr": r[0], "dropout": r[1], "validation_accuracy": float(np.mean(scores)), "seeds": len(scores)}
        for r, scores in by_recipe.items()
    ]
    return {"lr": lr, "dropout": dropout, "candidates": candidates}


def ranked(by_recipe: dict[tuple, list[float]], among: list[tuple] | None = None) -> list[tuple]:
    """The recipes `among` by mean validation accuracy, best first; a tie keeps their order."""
    among = list(by_recipe) if among is None else among
    return sorted(among, key=lambda recipe: -float(np.mean(by_recipe[recipe])))


def halving_search(
    run: Callable[[list[RunSpec]], list[dict]],
    candidates: dict[tuple, list[tuple]],
    seeds: list[int],
    spec: Callable[..., RunSpec],
) -> tuple[list[dict], dict[tuple, list[tuple]]]:
    """Successive halving over seeds: every candidate of each (start, label count) on the first seed,
    the better half (rounded up) on the next, and so on; returns every run's row and, per (start,
    count), the candidates of the last round."""
    alive, rows = dict(candidates), []
    for i, seed in enumerate(seeds):
        specs = [
            spec(start, count, seed, lr, dropout)
            for (start, count), recipes in alive.items()
            for lr, dropout in recipes
        ]
        rows += run(specs)
        if i == len(seeds) - 1:
            break
        for (start, count), recipes in alive.items():
            mine = [r for r in rows if (r["start"], r["labels"]) == (start, count_name(count))]
            kept = ranked(scores(mine), recipes)[: math.ceil(len(recipes) / 2)]
            alive[start, count] = [r for r in recipes if r in kept]  # candidate order: a tie, the earlier
    return rows, alive


def halving_runs(candidates: int, seeds: int) -> int:
    """The runs `halving_search` makes for one (start, count)."""
    total = 0
    for _ in range(seeds):
        total, candidates = total + candidates, math.ceil(candidates / 2)
    return total


def planned_runs(params, candidates: dict[tuple, list[tuple]], snapshots: int) -> int:
    """The trained runs (all but the probe's) the fine-tuning stage makes: the search's, then the
    curve's and the snapshot curve's, less the curve runs the search already made."""
    search_seeds = list(params.seeds[: params.search_seeds])
    search = sum(halving_runs(len(recipes), len(search_seeds)) for recipes in candidates.values())
    trained = len([start for start in params.starts if start != "probe"])
    searched = protocol.search_counts(params)
    curve = sum(
        trained * sum(1 for seed in seeds if count not in searched or seed not in search_seeds)
        for count, seeds in protocol.curve_plan(params)
    )
    return search + curve + (snapshots * len(params.seeds) if "pretrained" in params.starts else 0)
