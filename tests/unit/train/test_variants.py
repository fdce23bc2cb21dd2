import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.helpers.paths import REPO
from tinytf.analysis.power import detectable_difference, pooled_seed_std, seeds_needed, variants_verdicts
from tinytf.analysis.variants import cell_key, write_cell
from tinytf.errors import DataError
from tinytf.params.config import load_params
from tinytf.train.runtime import resolve_runtime
from tinytf.train.variants import cell_params


def test_a_cell_trains_at_the_studys_lr_and_budget_not_pretrainings():
    params = load_params(REPO / "params.yaml", overrides={"variants.lr": 0.0015, "pretrain.lr": 0.004})
    model, pretrain = cell_params(params.model, params.pretrain, params.variants, "learned", "shift")
    assert pretrain.lr == 0.0015
    assert (pretrain.epochs, pretrain.steps_per_epoch) == (1, params.variants.steps)
    assert pretrain.batch_size == params.variants.batch_size
    assert pretrain.compile == params.pretrain.compile == "auto"  # auto: the default's short cells run eager
    assert not resolve_runtime("cpu", "auto", pretrain.compile, params.variants.steps).compile
    assert pretrain.weight_decay == params.pretrain.weight_decay  # the rest of the recipe is pretraining's
    assert (model.pos_encoding, model.head_merge) == ("learned", "shift")


def _cells(pos_gap: float, merge_gap: float, seeds: int = 6, noise: float = 4.0):
    """Cells of a 2 x 2 design: dev = 400 + gaps + a seed's noise (fixed draws, so no flakes)."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "pos_encoding": pos,
            "head_merge": merge,
            "seed": s,
            "dev": 400
            + pos_gap * (pos == "learned")
            + merge_gap * (merge == "reweight")
            + rng.normal(0, noise),
        }
        for pos in ("learned", "sinusoidal")
        for merge in ("concat", "reweight")
        for s in range(1, seeds + 1)
    ]
    return pd.DataFrame(rows)


def test_a_known_difference_is_found_and_a_null_one_is_not_detected():
    out = variants_verdicts(_cells(pos_gap=-20.0, merge_gap=0.0))
    pos, merge = out["verdicts"]["learned_vs_sinusoidal"], out["verdicts"]["reweight_vs_concat"]
    assert pos["difference"] == pytest.approx(-20.0, abs=3.0) and pos["p_value"] < 1e-6
    assert pos["ci95_bounds"][1] < 0  # the interval excludes no difference
    assert pos["sentence"].startswith("learned positions lower dev perplexity by ")
    assert f"p = {pos['p_value']:.3g}" in pos["sentence"]
    low, high = merge["ci95_bounds"]
    assert merge["p_value"] > 0.05 and low < 0 < high
    assert merge["sentence"].startswith("no difference detected between the reweight and concat merges")
    # the equivalence bound is the interval's farther end, not the within-cell spread
    assert merge["sentence"].endswith(f"the data exclude a difference larger than {max(-low, high):,.1f}")


def test_the_two_way_model_holds_the_other_factor_out_of_the_noise():
    import statsmodels.formula.api as smf

    cells = _cells(pos_gap=-20.0, merge_gap=30.0, seeds=3)
    out = variants_verdicts(cells)
    fit = smf.ols("dev ~ C(pos_encoding) + C(head_merge)", data=cells).fit()
    merge = out["verdicts"]["reweight_vs_concat"]
    assert merge["difference"] == pytest.approx(fit.params["C(head_merge)[T.reweight]"])
    assert merge["ci95_bounds"] == pytest.approx(list(fit.conf_int().loc["C(head_merge)[T.reweight]"]))
    assert out["residual_df"] == 12 - 3
    # pooling the merge's 30 points into the noise, a Welch test of positions sees a far wider interval
    from scipy import stats

    learned, sinusoidal = (cells.loc[cells.pos_encoding == p, "dev"] for p in ("learned", "sinusoidal"))
    welch = stats.ttest_ind(learned, sinusoidal, equal_var=False).confidence_interval()
    pos = out["verdicts"]["learned_vs_sinusoidal"]["ci95_bounds"]
    assert pos[1] - pos[0] < (welch.high - welch.low) / 2


def test_a_higher_perplexity_is_said_to_raise_it():
    out = variants_verdicts(_cells(pos_gap=0.0, merge_gap=25.0))
    assert out["verdicts"]["reweight_vs_concat"]["sentence"].startswith(
        "the reweight merge raises dev perplexity by"
    )


def test_the_power_statement_is_the_models_own_test():
    from scipy import stats

    cells = _cells(0.0, 0.0, seeds=3)
    out = variants_verdicts(cells)
    std, df = pooled_seed_std(cells)
    assert (out["pooled_seed_std"], out["pooled_df"], out["seeds_per_cell"]) == (std, df, 3) and df == 4 * 2
    # each main effect's standard error at 80 % power: 6 runs a side, residual std on 12 - 3 df
    se = out["residual_std"] * (2 / 6) ** 0.5
    expected = (stats.t.ppf(0.975, 9) + stats.t.ppf(0.8, 9)) * se
    assert out["detectable_difference"] == pytest.approx(expected)
    assert out["detectable_difference_pct"] == pytest.approx(
        100 * out["detectable_difference"] / out["mean_perplexity"]
    )
    assert out["detectable_difference_two_cells_pct"] > out["detectable_difference_pct"]
    for entry in out["verdicts"].values():
        assert {"difference", "ci95", "ci95_bounds", "p_value", "sentence", "n", "detectable"} <= set(entry)


def test_one_level_or_one_seed_gives_no_p_value_and_no_crash():
    one_seed = variants_verdicts(_cells(-20.0, 0.0, seeds=1))
    assert one_seed["pooled_seed_std"] is None and one_seed["detectable_difference_two_cells_pct"] is None
    assert one_seed["residual_df"] == 1  # 4 cells, 3 parameters: the interaction is the noise
    two_cells = _cells(-20.0, 0.0, seeds=1).query("head_merge == 'concat'")
    none = variants_verdicts(two_cells)["verdicts"]["learned_vs_sinusoidal"]
    assert none["p_value"] is None and none["sentence"].startswith("no test between")
    one_pos = _cells(0.0, 0.0)
    one_pos = one_pos[one_pos.pos_encoding == "learned"]
    assert list(variants_verdicts(one_pos)["verdicts"]) == ["reweight_vs_concat"]


def test_the_stage_writes_summary_json_with_the_keys_the_checks_read(tmp_path):
    cells = _cells(-20.0, 0.0, seeds=2)
    for row in cells.itertuples():
        write_cell(
            tmp_path / "cells" / f"{cell_key(row.pos_encoding, row.head_merge, row.seed)}.json",
            row.pos_encoding,
            row.head_merge,
            row.seed,
            {"train_perplexity": row.dev + 10, "validation_perplexity": row.dev},
        )
    sets = [
        "variants.pos_encodings=[learned,sinusoidal]",
        "variants.head_merges=[concat,reweight]",
        "variants.seeds=[1,2]",
    ]
    result = subprocess.run(
        [
            sys.executable,
            "stages/variants_table.py",
            "--cells",
            str(tmp_path / "cells"),
            "--reports",
            str(tmp_path / "reports"),
            *[arg for s in sets for arg in ("--set", s)],
        ],
        cwd=REPO,
        env=dict(os.environ, TINYTF_TRACKING="0"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "reports/summary.json").read_text())
    assert {"detectable_difference_pct", "verdicts", "steps", "seeds", "test"} <= set(summary)
    assert set(summary["verdicts"]) == {"learned_vs_sinusoidal", "reweight_vs_concat"}
    for entry in summary["verdicts"].values():
        assert {"difference", "ci95", "p_value"} <= set(entry)


def test_seeds_needed_is_the_fewest_that_reach_the_target():
    seeds, share = seeds_needed(0.0393, 0.05)
    assert share <= 0.05 < detectable_difference(0.0393, 2 * (seeds - 1), 4 * (seeds - 2))
    assert seeds_needed(0.01, 0.05)[0] == 2
    with pytest.raises(DataError, match="no design of up to 3 seeds"):
        seeds_needed(0.2, 0.05, max_seeds=3)
