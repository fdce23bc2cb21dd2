"""What a seeded design can detect, and the variants study's verdicts from its cells.

The variants study is a two-way design (positional encoding x head merge, seeds as replicates):
one OLS model gives each main effect its t-test and 95 % interval, the other factor held in the
model rather than pooled into the noise. An equivalence sentence comes only from that interval
(the data exclude a difference beyond its farther bound)."""

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
TEST = (
    "two-way linear model over cells (dev perplexity ~ positional encoding + head merge, seeds as replicates)"
)


def detectable_difference(std: float, n_per_group: int, pooled_df: int) -> float:
    """The smallest difference of two means of `n_per_group` runs each that a two-sided t-test at
    α = 0.05 finds with 80 % power, given the seed-to-seed `std` pooled over `pooled_df` df."""
    if pooled_df < 1 or not np.isfinite(std):
        raise DataError(f"a detectable difference needs a seed spread, got std {std} on {pooled_df} df")
    return float(_t_power(pooled_df) * std * np.sqrt(2 / n_per_group))


def _t_power(df: float) -> float:
    """A difference of this many standard errors is detected at ALPHA with POWER (two-sided t)."""
    from scipy import stats

    return stats.t.ppf(1 - ALPHA / 2, df) + stats.t.ppf(POWER, df)


def pooled_seed_std(
    cells: pd.DataFrame, metric: str = "dev", by: tuple[str, ...] = ("pos_encoding", "head_merge")
) -> tuple[float, int]:
    """The seed-to-seed std of `metric` within a cell (the rows sharing `by`: a variant, a grid
    finalist), pooled over cells, and its df."""
    groups = cells.groupby(list(by))[metric]
    df = int((groups.count() - 1).clip(lower=0).sum())
    if df < 1:
        return float("nan"), 0
    return float(np.sqrt((groups.var(ddof=1).fillna(0) * (groups.count() - 1)).sum() / df)), df


def sentence(entry: dict, factor: str) -> str:
    """'learned positions lower dev perplexity by X (95 % CI …), p = …', or, where no difference is
    detected, the bound its interval excludes."""
    d, p, interval = entry["difference"], entry["p_value"], entry.get("ci95_bounds")
    a, b = entry["level"], entry["reference"]
    _, subject, pair = FACTORS[factor]
    if interval is None:
        return f"no test between {pair.format(a, b)} ({a} − {b}: {d:+,.1f}, no spread)"
    low, high = interval
    if p < ALPHA:
        said = subject.format(a) if d < 0 else subject.format(a).replace("lower", "raise")
        return f"{said} dev perplexity by {abs(d):,.1f} (95 % CI [{low:+,.1f}, {high:+,.1f}]), p = {p:.3g}"
    return (
        f"no difference detected between {pair.format(a, b)} ({a} − {b}: {d:+,.1f}, 95 % CI "
        f"[{low:+,.1f}, {high:+,.1f}], p = {p:.3g}): the data exclude a difference larger than "
        f"{max(abs(low), abs(high)):,.1f}"
    )


def comparisons(cells: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(factor, level, reference): every other level of a factor against its reference."""
    out = []
    for factor, (reference, *_) in FACTORS.items():
        levels = list(dict.fromkeys(cells[factor]))
        if reference in levels:
            out += [(factor, level, reference) for level in levels if level != reference]
    return out


def two_way_fit(cells: pd.DataFrame, metric: str):
    """The additive model over the factors with more than one level (statsmodels OLS), or None
    where no degree of freedom is left for the noise."""
    import statsmodels.formula.api as smf

    terms = [
        f"C({factor}, Treatment(reference='{reference}'))"
        for factor, (reference, *_) in FACTORS.items()
        if cells[factor].nunique() > 1 and reference in set(cells[factor])
    ]
    levels = sum(cells[factor].nunique() - 1 for factor in FACTORS if cells[factor].nunique() > 1)
    if len(cells) - 1 - levels < 1:
        return None
    return smf.ols(f"{metric} ~ " + (" + ".join(terms) or "1"), data=cells.reset_index(drop=True)).fit()


def variants_verdicts(cells: pd.DataFrame, metric: str = "dev") -> dict:
    """The study's power and one verdict per main-effect comparison, from one linear model."""
    std, df = pooled_seed_std(cells, metric)
    mean = float(cells[metric].mean())
    seeds = int(cells.groupby(["pos_encoding", "head_merge"])[metric].count().min())
    fit = two_way_fit(cells, metric)
    out = {
        "metric": f"{metric} perplexity",
        "test": TEST,
        "alpha": ALPHA,
        "power": POWER,
        "seeds_per_cell": seeds,
        "mean_perplexity": mean,
        "pooled_seed_std": std if df else None,
        "pooled_df": df,
        "residual_std": float(np.sqrt(fit.scale)) if fit is not None else None,
        "residual_df": int(fit.df_resid) if fit is not None else None,
        "verdicts": {},
    }
    # two single cells of `seeds` runs: what the table's neighbouring cells can tell apart
    out["detectable_difference_two_cells_pct"] = (
        100 * detectable_difference(std, seeds, df) / mean if df >= 1 else None
    )
    detectables = []
    for factor, level, reference in comparisons(cells):
        n = [int((cells[factor] == level).sum()), int((cells[factor] == reference).sum())]
        entry = {"factor": factor, "level": level, "reference": reference, "n": n}
        term = f"C({factor}, Treatment(reference='{reference}'))[T.{level}]"
        if fit is None or not fit.bse[term] > 0:
            a = cells.loc[cells[factor] == level, metric].mean()
            entry.update(difference=float(a - cells.loc[cells[factor] == reference, metric].mean()))
            entry.update(ci95=None, ci95_bounds=None, p_value=None, detectable=None)
        else:
            low, high = (float(v) for v in fit.conf_int(ALPHA).loc[term])
            entry.update(
                difference=float(fit.params[term]),
                ci95=(high - low) / 2,
                ci95_bounds=[low, high],
                p_value=float(fit.pvalues[term]),
                detectable=float(_t_power(fit.df_resid) * fit.bse[term]),
            )
            detectables.append(entry["detectable"])
        entry["sentence"] = sentence(entry, factor)
        out["verdicts"][f"{level}_vs_{reference}"] = entry
    detectable = max(detectables) if detectables else None
    out["detectable_difference"] = detectable
    out["detectable_difference_pct"] = 100 * detectable / mean if detectable is not None else None
    return out


def seeds_needed(cv: float, target: float, max_seeds: int = 50) -> tuple[int, float]:
    """The fewest seeds per cell at which a 2 x 2 design's main effect is detectable at `target`
    (a share of the cells' mean), if the seed std stays `cv` of the mean, and that share."""
    for seeds in range(2, max_seeds + 1):
        share = detectable_difference(cv, 2 * seeds, 4 * (seeds - 1))
        if share <= target:
            return seeds, share
    raise DataError(f"no design of up to {max_seeds} seeds detects {target:.1%} at a seed std of {cv:.1%}")
