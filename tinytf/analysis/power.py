"""What a seeded design can detect, and the variants study's verdicts from its cells.

The variants study compares main effects (learned vs sinusoidal positions, each head merge vs
concat), each pooled over the other factor and the seeds, by Welch's t-test on the cells' dev
perplexity: unpaired, like the power bound, so the stated detectable difference is the one the
test has (pairing by seed would leave one degree of freedom at two seeds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinytf.errors import DataError

ALPHA = 0.05
POWER = 0.8
# factor: (reference level, the level as a sentence's subject, the pair as its object)
FACTORS = {
    "pos_encoding": ("sinusoidal", "{} positions lower", "{} and {} positions"),
    "head_merge": ("concat", "the {} merge lowers", "the {} and {} merges"),
}
TEST = "two-sided Welch t-test over cells, pooled over the other factor and the seeds"


def detectable_difference(std: float, n_per_arm: int, pooled_df: int) -> float:
    """The smallest difference of two means of `n_per_arm` runs each that a two-sided t-test at
    α = 0.05 finds with 80 % power, given the seed-to-seed `std` (pooled over `pooled_df` degrees
    of freedom)."""
    from scipy import stats

    if pooled_df < 1 or not np.isfinite(std):
        raise DataError(f"a detectable difference needs a seed spread, got std {std} on {pooled_df} df")
    t = stats.t.ppf(1 - ALPHA / 2, pooled_df) + stats.t.ppf(POWER, pooled_df)
    return float(t * std * np.sqrt(2 / n_per_arm))


def pooled_seed_std(cells: pd.DataFrame, metric: str = "dev") -> tuple[float, int]:
    """The seed-to-seed std within a (pos, merge) cell, pooled over cells, and its df."""
    groups = cells.groupby(["pos_encoding", "head_merge"])[metric]
    df = int((groups.count() - 1).clip(lower=0).sum())
    if df < 1:
        return float("nan"), 0
    return float(np.sqrt((groups.var(ddof=1).fillna(0) * (groups.count() - 1)).sum() / df)), df


def welch(a: np.ndarray, b: np.ndarray) -> dict:
    """mean(a) − mean(b), its 95 % interval's half-width and p by Welch's t-test (scipy's)."""
    from scipy import stats

    diff = float(a.mean() - b.mean())
    if not a.var(ddof=1) + b.var(ddof=1) > 0:  # identical runs: no spread to test against
        return {"difference": diff, "ci95": 0.0, "p_value": None}
    test = stats.ttest_ind(a, b, equal_var=False)
    interval = test.confidence_interval(1 - ALPHA)
    return {
        "difference": diff,
        "ci95": float(interval.high - interval.low) / 2,
        "p_value": float(test.pvalue),
    }


def sentence(entry: dict, factor: str, detectable: float | None) -> str:
    """'learned positions lower dev perplexity by X ± Y, p = …' or 'no difference larger than Z'."""
    d, ci, p = entry["difference"], entry["ci95"] or 0.0, entry["p_value"]
    a, b = entry["level"], entry["reference"]
    _, subject, pair = FACTORS[factor]
    if p is not None and p < ALPHA:
        said = subject.format(a) if d < 0 else subject.format(a).replace("lower", "raise")
        return f"{said} dev perplexity by {abs(d):,.1f} ± {ci:,.1f} (95 % CI), p = {p:.3g}"
    bound = f"larger than {detectable:,.1f} " if detectable is not None else ""
    shown = f"p = {p:.3g}" if p is not None else "no spread"
    return (
        f"no difference {bound}detected between {pair.format(a, b)} "
        f"({a} − {b}: {d:+,.1f} ± {ci:,.1f}, {shown})"
    )


def comparisons(cells: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(factor, level, reference): every other level of a factor against its reference."""
    out = []
    for factor, (reference, *_) in FACTORS.items():
        levels = list(dict.fromkeys(cells[factor]))
        if reference in levels:
            out += [(factor, level, reference) for level in levels if level != reference]
    return out


def variants_verdicts(cells: pd.DataFrame, metric: str = "dev") -> dict:
    """The study's power and one verdict per main-effect comparison, from its cells."""
    std, df = pooled_seed_std(cells, metric)
    mean = float(cells[metric].mean())
    seeds = int(cells.groupby(["pos_encoding", "head_merge"])[metric].count().min())
    out = {
        "metric": f"{metric} perplexity",
        "test": TEST,
        "alpha": ALPHA,
        "power": POWER,
        "seeds_per_cell": seeds,
        "mean_perplexity": mean,
        "pooled_seed_std": std if df else None,
        "pooled_df": df,
        "verdicts": {},
    }
    # the main effect's arms hold seeds x (levels of the other factor) runs each
    arms = [len(cells) // cells[f].nunique() for f, _, _ in comparisons(cells)] or [seeds]
    detectable = detectable_difference(std, min(arms), df) if df >= 1 else None
    out["detectable_difference"] = detectable
    out["detectable_difference_pct"] = 100 * detectable / mean if detectable is not None else None
    out["detectable_difference_two_cells_pct"] = (
        100 * detectable_difference(std, seeds, df) / mean if df >= 1 else None
    )
    for factor, level, reference in comparisons(cells):
        a = cells.loc[cells[factor] == level, metric].to_numpy(float)
        b = cells.loc[cells[factor] == reference, metric].to_numpy(float)
        entry = (
            welch(a, b)
            if min(len(a), len(b)) > 1
            else {"difference": float(a.mean() - b.mean()), "ci95": None, "p_value": None}
        )
        mde = detectable_difference(std, min(len(a), len(b)), df) if df >= 1 else None
        entry.update(factor=factor, level=level, reference=reference, n=[len(a), len(b)], detectable=mde)
        entry["sentence"] = sentence(entry, factor, mde)
        out["verdicts"][f"{level}_vs_{reference}"] = entry
    return out


def seeds_needed(cv: float, target: float, max_seeds: int = 50) -> tuple[int, float]:
    """The fewest seeds per cell at which a 2 x 2 design's main effect is detectable at `target`
    (a share of the cells' mean), if the seed std stays `cv` of the mean, and that share."""
    for seeds in range(2, max_seeds + 1):
        share = detectable_difference(cv, 2 * seeds, 4 * (seeds - 1))
        if share <= target:
            return seeds, share
    raise DataError(f"no design of up to {max_seeds} seeds detects {target:.1%} at a seed std of {cv:.1%}")
