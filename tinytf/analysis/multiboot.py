"""One interval over every source of noise: the Multi-Bootstrap of MultiBERTs (Sellam et al.,
2022, §3), for two sides' accuracy on the same test texts.

A side is a 0/1 array (runs..., texts): which texts each run got right, its leading axes the
crossed run-to-run sources (one fit of TF-IDF is one run). Each resample draws every leading
axis's indices with replacement, independently, and the texts by cluster (every text of a drawn
movie), the same draws for both sides where they share a source, as a seed pairs two starts.
Runs nested in pretraining runs (`nest`) draw the bodies, then each drawn body's seeds, so the
interval counts the bodies' spread as well as the seeds'. Each resample is a weighted mean.

Why written here: scipy's `bootstrap` resamples independent observations along one axis, no
maintained package resamples a crossed design with clustered items, and the MultiBERTs code is
research code, not a library."""

from __future__ import annotations

import numpy as np

RESAMPLES = 2000


def _side(correct: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(runs..., clusters) sums of right answers, and texts per cluster."""
    _, cluster = np.unique(groups, return_inverse=True)
    sums = np.zeros((*correct.shape[:-1], cluster.max() + 1))
    np.add.at(sums, (..., cluster), correct)
    return sums, np.bincount(cluster).astype(float)


def _draws(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """(resamples, n) counts of each index in a draw of n with replacement."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)


def _nested_draws(rng: np.random.Generator, nest: np.ndarray, resamples: int) -> np.ndarray:
    """(resamples, runs) weights: bodies drawn with replacement, then each drawn copy's runs with
    replacement (c copies of a body with m runs: c·m draws of its runs, each weighing 1/m)."""
    bodies, body = np.unique(nest, return_inverse=True)
    copies = _draws(rng, bodies.size, resamples)  # (resamples, bodies)
    weights = np.zeros((resamples, nest.size))
    for j in range(bodies.size):
        runs = np.flatnonzero(body == j)
        drawn = rng.multinomial(copies[:, j].astype(int), np.full(runs.size, 1.0 / runs.size))
        weights[:, runs] = drawn / runs.size
    return weights


def _accuracy(sums: np.ndarray, sizes: np.ndarray, axes: list[np.ndarray], items: np.ndarray) -> np.ndarray:
    """Per resample: the weighted mean accuracy, runs weighted by their axes' draw counts."""
    weighted = np.tensordot(items, sums, axes=([1], [sums.ndim - 1]))  # (resamples, runs...)
    weighted = np.moveaxis(weighted, 0, -1)  # (runs..., resamples)
    runs = np.ones(weighted.shape[-1])
    for axis in axes:  # the leading axis each time: draw counts (resamples, n) as (n, resamples)
        weighted = np.einsum("n...r,nr->...r", weighted, axis.T)
        runs = runs * axis.sum(axis=1)
    return weighted / (runs * (items @ sizes))


def multi_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    groups: np.ndarray | None = None,
    sources: tuple[str, ...] = ("seed",),
    resamples: int = RESAMPLES,
    seed: int = 0,
    nest: np.ndarray | None = None,
) -> dict:
    """a − b in accuracy with its 95 % percentile interval and two-sided p over `resamples`
    draws of every source. `a`, `b`: (runs..., texts) 0/1 arrays, their leading axes named by
    `sources` (in order); a side with one run on an axis (TF-IDF's one fit) is not drawn there.
    Sides with the same size on an axis share its draws (paired). `groups`: each text's cluster.
    `nest`: the pretraining run (body) of each run on the first axis; drawn hierarchically, and
    named "pretraining run" in the sources where it has more than one."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"both sides need the same texts: {a.shape[-1]} vs {b.shape[-1]}")
    if a.ndim != len(sources) + 1 or b.ndim != a.ndim:
        raise ValueError(f"sides {a.shape} and {b.shape}: expected one leading axis per source {sources}")
    groups = np.arange(a.shape[-1]) if groups is None else np.asarray(groups)
    rng = np.random.default_rng(seed)
    (sums_a, sizes), (sums_b, _) = _side(a, groups), _side(b, groups)
    items = _draws(rng, sizes.size, resamples)
    axes_a, axes_b = [], []
    for i, (n_a, n_b) in enumerate(zip(a.shape[:-1], b.shape[:-1], strict=True)):
        if i == 0 and nest is not None and len(nest) == max(n_a, n_b):
            shared = _nested_draws(rng, np.asarray(nest), resamples)
        else:
            shared = _draws(rng, max(n_a, n_b), resamples)
        axes_a.append(shared if n_a == shared.shape[1] else np.ones((resamples, 1)))
        axes_b.append(shared if n_b == shared.shape[1] else np.ones((resamples, 1)))
        if 1 < min(n_a, n_b) and n_a != n_b:
            raise ValueError(f"sides with {n_a} and {n_b} runs on one source cannot be paired")
    d = _accuracy(sums_a, sizes, axes_a, items) - _accuracy(sums_b, sizes, axes_b, items)
    estimate = float(a.mean() - b.mean())
    low, high = np.percentile(d, [2.5, 97.5])
    # two-sided: twice the smaller tail at 0, each tail counting the observed draw (+1)
    tail = min((d <= 0).sum(), (d >= 0).sum())
    p = min(1.0, 2 * (tail + 1) / (resamples + 1))
    drawn = [s for s, n_a, n_b in zip(sources, a.shape, b.shape, strict=False) if max(n_a, n_b) > 1]
    if nest is not None and len(np.unique(nest)) > 1 and len(nest) == max(a.shape[0], b.shape[0]):
        drawn.insert(0, "pretraining run")
    return {
        "estimate": estimate,
        "ci95": [float(low), float(high)],
        "p_value": float(p),
        "resamples": resamples,
        "sources": [*drawn, "movie" if len(np.unique(groups)) < groups.size else "text"],
        "method": "multi-bootstrap (Sellam et al. 2022): runs and test texts drawn together",
    }
