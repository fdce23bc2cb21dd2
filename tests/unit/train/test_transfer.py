"""The transfer study's pieces: label subsets, the fine-tuning recipe, the baselines, the curves."""

import contextlib
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.paths import REPO
from tinytf.analysis.baselines import baseline_curve, fit_baselines, majority_accuracy
from tinytf.analysis.evaluation import (
    curve_summary,
    gap_trend,
    holm,
    paired_comparison,
    snapshot_curve,
    verdict,
)
from tinytf.analysis.power import detectable_difference
from tinytf.data.sentiment import SentimentData
from tinytf.data.subsets import ALL, check_counts, label_order, label_subset
from tinytf.errors import ParamsError
from tinytf.params.config import FinetuneParams, load_params
from tinytf.report.phrases import paired_text
from tinytf.train.finetune import run_finetune
from tinytf.train.finetune_trainer import schedule
from tinytf.train.loop import Callback
from tinytf.train.protocol import curve_plan, recipe_count, recipes, search_counts
from tinytf.train.recipes import chosen_recipe

from .test_classify import CPU

LABELS = np.array([0] * 700 + [1] * 300)


def test_label_subsets_are_nested_class_balanced_and_seeded():
    small, large = label_subset(LABELS, 100, seed=1), label_subset(LABELS, 400, seed=1)
    assert set(small) < set(large) and len(small) == 100 and len(large) == 400
    assert LABELS[small].mean() == pytest.approx(0.3, abs=0.02)
    assert np.array_equal(label_subset(LABELS, 100, seed=1), small)
    assert not np.array_equal(label_subset(LABELS, 100, seed=2), small)
    assert np.array_equal(label_subset(LABELS, ALL, seed=5), np.arange(1000))
    assert sorted(label_order(LABELS, 3)) == list(range(1000))


def test_every_label_count_runs_every_seed_in_increasing_order():
    plan = curve_plan(FinetuneParams(label_counts=[0, 3000, 250, 1000], seeds=[1, 2, 3, 4, 5]))
    assert plan == [(count, [1, 2, 3, 4, 5]) for count in (250, 1000, 3000, 0)]


def test_every_trained_start_chooses_from_the_same_lr_x_dropout_candidates():
    params = FinetuneParams(lrs=[1e-3, 3e-3], dropouts=[0.0, 0.1])
    assert recipes(params) == [(1e-3, 0.0), (1e-3, 0.1), (3e-3, 0.0), (3e-3, 0.1)]
    assert recipes(params, [2e-5]) == [(2e-5, 0.0), (2e-5, 0.1)]  # hf: its own lr scale, the same dropouts
    with pytest.raises(ParamsError, match=r"finetune.dropouts"):
        load_params(REPO / "params.yaml", {"finetune.dropouts": [0.1, 0.1]})
    for gone in ("many_label_seeds", "lr_search_labels", "dropout"):  # the old, asymmetric protocol
        with pytest.raises(ParamsError, match=rf"finetune.{gone}"):
            load_params(REPO / "params.yaml", {f"finetune.{gone}": 1})


def test_small_subsets_train_more_epochs_and_validate_at_most_six_times():
    params = FinetuneParams(epochs=2, min_steps=200, batch_size=32)
    assert schedule(10_000, params) == (2, 1)  # 313 steps an epoch: the epoch floor decides
    epochs, every = schedule(250, params)  # 8 steps an epoch: 25 epochs, validated every 5th
    assert (epochs, every) == (25, 5) and epochs * 8 >= 200


def test_params_need_all_labels_and_known_search_counts():
    with pytest.raises(ParamsError, match=r"finetune.label_counts: must include 0"):
        load_params(REPO / "params.yaml", {"finetune.label_counts": [250, 1000]})
    with pytest.raises(ParamsError, match=r"finetune.snapshot_labels: 500 is not one of label_counts"):
        load_params(REPO / "params.yaml", {"finetune.snapshot_labels": 500})
    with pytest.raises(ParamsError, match=r"finetune.search_labels: 500 is not one of label_counts"):
        load_params(REPO / "params.yaml", {"finetune.search_labels": [250, 500]})
    with pytest.raises(ParamsError, match=r"finetune.search_labels"):
        load_params(REPO / "params.yaml", {"finetune.search_labels": [250, 250]})


def test_each_label_count_takes_its_own_recipe_or_the_nearest_searched_below():
    each = FinetuneParams(label_counts=[250, 1000, 3000, 0], search_labels=[0, 250, 1000, 3000])
    assert search_counts(each) == [250, 1000, 3000, 0]
    assert [recipe_count(each, c) for c in (250, 1000, 3000, 0)] == [250, 1000, 3000, 0]
    once = FinetuneParams(label_counts=[250, 1000, 3000, 0], search_labels=1000)  # one search for all
    assert search_counts(once) == [1000] and {recipe_count(once, c) for c in (250, 1000, 3000, 0)} == {1000}
    some = FinetuneParams(label_counts=[250, 1000, 3000, 0], search_labels=[1000, 0])
    assert [recipe_count(some, c) for c in (250, 1000, 3000, 0)] == [1000, 1000, 1000, 0]
    assert search_counts(load_params(REPO / "params.yaml").finetune) == [250, 1000, 3000, 0]


def test_a_label_count_as_large_as_the_train_split_is_refused_naming_the_key_and_file():
    check_counts([250, 999, ALL], 1000, "train.parquet")  # below the split's size, and all: fine
    for count in (1000, 5000):  # every label under another name: the all-labels point again
        with pytest.raises(
            ParamsError, match=rf"finetune.label_counts: {count} labels .* train.parquet has 1000"
        ):
            check_counts([250, count, ALL], 1000, "train.parquet")


def test_finetune_refuses_too_many_labels_before_any_run(workdir, monkeypatch):
    from tinytf.train import workers

    def no_run(*args, **kwargs):
        raise AssertionError("a fine-tuning run started before the label counts were checked")

    monkeypatch.setattr(workers.Workers, "map", no_run)
    params = FinetuneParams(
        label_counts=[24, 96, 0],
        seeds=[1, 2],
        search_labels=24,
        snapshot_labels=24,
        device="cpu",
        compile=False,
    )
    with pytest.raises(
        ParamsError, match=r"finetune.label_counts: 96 labels .*tokens/sentiment/train.parquet has 96"
    ):
        run_finetune(params, 32, workdir / "models" / "pretrained.pt", workdir)


def test_the_finetune_stage_refuses_too_many_labels_before_its_mlflow_run(workdir, tmp_path):
    store = tmp_path / "mlflow.db"
    sets = ["finetune.label_counts=[24,96,0]", "finetune.search_labels=24", "finetune.snapshot_labels=24"]
    result = subprocess.run(
        [
            sys.executable,
            "stages/finetune.py",
            "--data",
            str(workdir),
            "--pretrained",
            str(workdir / "models" / "pretrained.pt"),
            "--snapshots",
            str(tmp_path / "none"),
            "--reports",
            str(tmp_path / "reports"),
            "--baselines",
            str(tmp_path / "baselines.json"),
            "--baseline-predictions",
            str(tmp_path / "baselines.parquet"),
            "--predictions",
            str(tmp_path / "predictions.parquet"),
            *[arg for s in sets for arg in ("--set", s)],
        ],
        cwd=REPO,
        env=dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{store}", TINYTF_TRACKING="1"),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "finetune.label_counts: 96 labels" in result.stderr, result.stderr
    assert not store.exists() and not (tmp_path / "reports").exists()  # no failed run, nothing written


def test_chosen_recipe_is_the_best_mean_over_seeds_first_on_ties():
    rows = [{"lr": 1e-3, "dropout": 0.1, "validation_accuracy": v} for v in (0.5, 0.75)]  # binary fractions
    rows += [
        {"lr": 3e-3, "dropout": 0.1, "validation_accuracy": v} for v in (0.6875, 0.5)
    ]  # seed 1 alone: it
    rows += [{"lr": 1e-3, "dropout": 0.0, "validation_accuracy": v} for v in (0.5, 0.625)]
    chosen = chosen_recipe(rows)
    assert (chosen["lr"], chosen["dropout"]) == (1e-3, 0.1)
    assert {(c["lr"], c["dropout"], c["seeds"]) for c in chosen["candidates"]} == {
        (1e-3, 0.1, 2),
        (3e-3, 0.1, 2),
        (1e-3, 0.0, 2),
    }
    tied = chosen_recipe(rows + [{"lr": 1e-2, "dropout": 0.0, "validation_accuracy": 0.625}])
    assert (tied["lr"], tied["dropout"]) == (1e-3, 0.1)  # tie: the earlier recipe


def test_finetune_chooses_each_lr_on_validation_and_keeps_the_best_epoch(workdir, tmp_path):
    import shutil

    snapshot = tmp_path / "epoch1.pt"
    shutil.copy(workdir / "models" / "pretrained.pt", snapshot)
    shutil.copy(workdir / "models" / "pretrained.json", snapshot.with_suffix(".json"))
    params = FinetuneParams(
        label_counts=[24, 0],
        seeds=[1, 2],
        epochs=2,
        min_steps=6,
        batch_size=16,
        lrs=[1e-4, 3e-3],
        dropouts=[0.0, 0.3],
        probe_cs=[0.1, 1.0],
        search_labels=24,
        search_seeds=5,
        snapshot_labels=24,
        device="cpu",
        precision="fp32",
        compile=False,
    )
    result = run_finetune(params, 32, workdir / "models" / "pretrained.pt", workdir, [snapshot])
    runs = result.runs
    search = runs[(runs["labels"] == "24") & (runs["snapshot"] == "final")]
    for start in ("pretrained", "scratch"):
        mine = search[search["start"] == start].groupby(["lr", "dropout"])["validation_accuracy"]
        # halving over the 2 seeds there are (of 5 asked): all 4 candidates on seed 1, the better 2 on seed 2
        assert sorted(mine.count().to_list()) == [1, 1, 2, 2]
        chosen = result.recipes["24"][start]  # one searched count: its recipe serves the whole curve
        assert (chosen["lr"], chosen["dropout"]) == mine.mean()[mine.count() == 2].idxmax()
        curve = runs[(runs["start"] == start) & runs["chosen"]]
        assert set(zip(curve["lr"], curve["dropout"], strict=True)) == {(chosen["lr"], chosen["dropout"])}
    probes = runs[runs["start"] == "probe"]  # no recipe search: each run chooses its C on validation
    assert (
        list(result.recipes) == ["24"]
        and "probe" not in result.recipes["24"]
        and probes["lr"].isna().all()
        and probes["probe_c"].isin([0.1, 1.0]).all()
    )
    assert len(probes) == 4 and probes[["epochs", "best_epoch"]].isna().all().all()
    chosen = runs[runs["chosen"]]
    # lr search runs of the chosen lr are the curve's runs of those seeds, not run twice
    assert len(chosen) == len(chosen.drop_duplicates(["snapshot", "start", "labels", "seed"]))
    assert set(chosen.loc[chosen["snapshot"] == "epoch1", "seed"]) == {1, 2}
    trained = runs[runs["start"] != "probe"]
    assert (trained["best_epoch"] <= trained["epochs"]).all() and (runs["n_train"].isin([24, 96])).all()
    assert set(result.curves["start"]) == {"pretrained", "scratch"}  # all-label trained runs only
    # every run keeps one prediction per validation and test text: its accuracies recompute from them
    data = SentimentData.load(workdir)
    predictions = result.predictions
    keys = ["start", "labels", "seed", "snapshot", "lr", "dropout"]
    sizes = predictions.groupby(keys, dropna=False)["split"].value_counts().unstack()
    assert len(sizes) == len(runs.drop_duplicates(keys))
    assert (sizes["test"] == len(data.splits["test"])).all()
    assert (sizes["validation"] == len(data.splits["validation"])).all()
    right = predictions.assign(right=predictions["prediction"] == predictions["label"])
    accuracy = right.groupby([*keys, "split"], dropna=False)["right"].mean().unstack().reset_index()
    merged = runs.merge(accuracy, on=keys)
    assert len(merged) == len(runs)
    assert np.allclose(merged["test"], merged["test_accuracy"])
    assert np.allclose(merged["validation"], merged["validation_accuracy"])  # the kept epoch's pass
    assert predictions["probability"].between(0.5, 1.0).all()  # two classes: the argmax has at least half


def test_a_recipe_is_chosen_at_every_searched_label_count_and_serves_that_count(workdir):
    params = FinetuneParams(
        starts=["pretrained", "scratch"],
        label_counts=[24, 0],
        seeds=[1, 2],
        epochs=1,
        min_steps=4,
        batch_size=16,
        lrs=[1e-4, 3e-3],
        dropouts=[0.1],
        search_labels=[24, 0],
        search_seeds=2,
        snapshot_labels=24,
        device="cpu",
        precision="fp32",
        compile=False,
    )
    result = run_finetune(params, 32, workdir / "models" / "pretrained.pt", workdir)
    runs = result.runs
    assert list(result.recipes) == ["24", "all"]
    for labels, by_start in result.recipes.items():
        for start, chosen in by_start.items():
            mine = runs[(runs["labels"] == labels) & (runs["start"] == start)]
            first = mine[mine["seed"] == 1].set_index("lr")["validation_accuracy"]
            assert len(first) == 2 and chosen["lr"] == first.idxmax()  # seed 1 keeps the better half: one
            curve = mine[mine["chosen"]]
            assert set(curve["lr"]) == {chosen["lr"]} and sorted(curve["seed"]) == [1, 2]
    # count x start x (2 candidates on seed 1 + the kept one on seed 2): those runs are the curve's
    assert len(runs) == 2 * 2 * 3


def test_runs_side_by_side_give_the_numbers_of_one_process_and_reach_mlflow(workdir, monkeypatch):
    """Each run trains on one thread whatever the number of workers, so TINYTF_WORKERS changes
    the time a stage takes and nothing it computes; the workers' training events reach the
    stage's callbacks (its MLflow child runs) as if the runs had trained in its process."""
    params = FinetuneParams(
        label_counts=[24, 0],
        seeds=[1, 2],
        epochs=2,
        min_steps=6,
        batch_size=16,
        lrs=[1e-4, 3e-3],
        dropouts=[0.1],
        probe_cs=[1.0],
        search_labels=24,
        search_seeds=2,
        snapshot_labels=24,
        device="cpu",
        compile=False,
    )
    results, events = {}, {}
    for workers in ("1", "2"):
        monkeypatch.setenv("TINYTF_WORKERS", workers)
        seen = events[workers] = {}

        @contextlib.contextmanager
        def callbacks_for(tags, seen=seen):
            key = (tags["start"], tags["labels"], tags["seed"], tags["snapshot"])

            class Seen(Callback):
                def on_epoch(self, epoch, metrics):
                    seen.setdefault(key, []).append((epoch, metrics["validation_accuracy"]))

                def on_end(self, metrics):
                    seen.setdefault(key, []).append(("end", metrics["test_accuracy"]))

            yield [Seen()]

        results[workers] = run_finetune(
            params, 32, workdir / "models" / "pretrained.pt", workdir, callbacks_for=callbacks_for
        )
    one, two = results["1"], results["2"]
    assert (one.workers, two.workers) == (1, 2)
    pd.testing.assert_frame_equal(one.runs, two.runs)
    pd.testing.assert_frame_equal(one.curves, two.curves)
    pd.testing.assert_frame_equal(one.predictions, two.predictions)
    # every run of the study reaches the callbacks (an MLflow child run each), once
    rows = set(
        zip(one.runs["start"], one.runs["labels"], one.runs["seed"], one.runs["snapshot"], strict=True)
    )
    assert events["1"] == events["2"] and set(events["1"]) == rows
    trained = one.runs[(one.runs["labels"] == "all") & (one.runs["start"] == "scratch")].set_index("seed")
    for seed in (1, 2):
        *epochs, end = events["1"][("scratch", "all", seed, "final")]
        assert len(epochs) == 2 and end == ("end", trained.loc[seed, "test_accuracy"])
    assert events["1"][("probe", "all", 1, "final")] == [
        ("end", one.runs.query("start == 'probe' and labels == 'all'").iloc[0]["test_accuracy"])
    ]
    monkeypatch.setenv("TINYTF_WORKERS", "two")
    with pytest.raises(ParamsError, match=r"TINYTF_WORKERS='two': expected 'auto' or a whole number"):
        run_finetune(params, 32, workdir / "models" / "pretrained.pt", workdir)


def test_baselines_fit_on_train_choose_c_on_validation():
    words = ["good fine great", "bad awful poor"]
    texts = [f"{words[i % 2]} film {i}" for i in range(60)]
    labels = np.array([i % 2 for i in range(60)])
    split = (texts[:40], labels[:40]), (texts[40:50], labels[40:50]), (texts[50:], labels[50:])
    scores = fit_baselines(*split, cs=[0.1, 10.0])
    assert scores.tfidf_lr == 1.0 and scores.tfidf_lr_validation == 1.0 and scores.tfidf_lr_c == 0.1
    assert majority_accuracy(np.array([1, 1, 0]), np.array([1, 0, 0, 0])) == 0.25
    curve, predictions = baseline_curve(
        {"train": split[0], "validation": split[1], "test": split[2]},
        [(20, [1, 2]), (ALL, [1, 2])],
        [1.0],
        (1, 1),
        (2, 3),
    )
    assert list(curve) == ["20", "all"] and curve["20"]["n_train"] == 20
    assert len(curve["20"]["tfidf_lr"]["by_seed"]) == 2 and len(curve["all"]["tfidf_lr"]["by_seed"]) == 1
    # one row per (fit, split, text): 20 labels x 2 seeds, all labels fitted once
    assert len(predictions) == 3 * (10 + 10) and set(predictions["split"]) == {"validation", "test"}
    test = predictions.query("labels == '20' and seed == 1 and split == 'test'")
    assert (test["prediction"] == test["label"]).mean() == curve["20"]["tfidf_lr"]["by_seed"]["1"]
    assert test["probability"].between(0.5, 1.0).all() and list(test["item"]) == list(range(10))


def runs_frame() -> pd.DataFrame:
    rows = []
    for seed, (p, s) in enumerate([(0.70, 0.66), (0.72, 0.67), (0.71, 0.69)], start=1):
        for labels, n, shift in (("all", 900, 0.1), ("100", 100, 0.0)):
            rows += [
                {
                    "snapshot": "final",
                    "tokens": 4000,
                    "start": "pretrained",
                    "labels": labels,
                    "n_train": n,
                    "seed": seed,
                    "test_accuracy": p + shift,
                    "chosen": True,
                },
                {
                    "snapshot": "final",
                    "tokens": None,
                    "start": "scratch",
                    "labels": labels,
                    "n_train": n,
                    "seed": seed,
                    "test_accuracy": s + shift,
                    "chosen": True,
                },
            ]
        rows.append(
            {
                "snapshot": "epoch1",
                "tokens": 1000,
                "start": "pretrained",
                "labels": "100",
                "n_train": 100,
                "seed": seed,
                "test_accuracy": s + 0.01,
                "chosen": True,
            }
        )
    return pd.DataFrame(rows)


def test_curve_and_snapshot_summaries_pair_the_same_seeds():
    curve = curve_summary(runs_frame(), ["pretrained", "scratch"])
    assert list(curve) == ["100", "all"]  # by train size, whatever the run order
    assert curve["100"]["pretrained_vs_scratch"]["mean_difference"] == pytest.approx(
        0.11 / 3
    )  # 0.04, 0.05, 0.02
    assert curve["all"]["scratch"]["mean"] == pytest.approx(0.7733, abs=1e-4)
    assert {entry[start]["n"] for entry in curve.values() for start in ("pretrained", "scratch")} == {3}
    points = snapshot_curve(runs_frame(), "100")
    assert [p["snapshot"] for p in points] == ["scratch", "epoch1", "final"]
    assert points[1]["mean_difference"] == pytest.approx(0.01) and points[1]["tokens"] == 1000


def test_holm_adjusts_a_family_of_p_values_step_down():
    # sorted 0.01, 0.02, 0.04 -> x3, x2, x1 = 0.03, 0.04, 0.04 (kept monotone); None is not counted
    assert holm([0.04, 0.01, None, 0.02]) == pytest.approx([0.04, 0.03, None, 0.04], abs=1e-12)
    assert holm([0.6, 0.9]) == [1.0, 1.0]  # capped at 1
    curve = curve_summary(runs_frame(), ["pretrained", "scratch"])
    raw = [curve[k]["pretrained_vs_scratch"]["p_value"] for k in ("100", "all")]
    assert [curve[k]["pretrained_vs_scratch"]["p_holm"] for k in ("100", "all")] == pytest.approx(holm(raw))


def test_every_start_is_compared_with_tfidf_too_holm_within_each_comparison():
    tfidf = {
        "100": {"tfidf_lr": {"by_seed": {"1": 0.60, "2": 0.61, "3": 0.62}}},
        "all": {"tfidf_lr": {"by_seed": {"1": 0.90}}},  # all labels: one fit for every seed
    }
    curve = curve_summary(runs_frame(), ["pretrained", "scratch"], tfidf)
    every = curve["all"]
    assert every["pretrained_vs_tfidf"]["mean_difference"] == pytest.approx(0.81 - 0.90)
    assert every["scratch_vs_tfidf"]["test"].startswith("one-sample t")  # against one fit
    assert curve["100"]["pretrained_vs_tfidf"]["test"] == "paired t"
    for family in ("pretrained_vs_scratch", "pretrained_vs_tfidf", "scratch_vs_tfidf"):
        raw = [curve[k][family]["p_value"] for k in ("100", "all")]
        assert [curve[k][family]["p_holm"] for k in ("100", "all")] == pytest.approx(holm(raw))
    assert (
        every["pretrained_vs_tfidf"]["verdict"] == "lower" and every["scratch_vs_tfidf"]["verdict"] == "lower"
    )
    assert "pretrained_vs_tfidf" not in curve_summary(runs_frame(), ["pretrained", "scratch"])["all"]


def test_the_trend_fits_one_slope_per_seed_and_tests_the_slopes():
    def entry(n, gaps):
        return {
            "n_train": n,
            "pretrained": {"by_seed": {str(i): 0.6 + g for i, g in enumerate(gaps)}},
            "scratch": {"by_seed": {str(i): 0.6 for i in range(len(gaps))}},
        }

    # seed slopes per tenfold labels: -0.02, -0.025, -0.015
    shrinking = {
        "10": entry(10, [0.05, 0.06, 0.04]),
        "100": entry(100, [0.03, 0.035, 0.025]),
        "1000": entry(1000, [0.01, 0.01, 0.01]),
    }
    trend = gap_trend(shrinking)
    assert trend["slope_per_decade"] == pytest.approx(-0.02) and trend["n"] == 3 and trend["unit"] == "seed"
    assert trend["slopes_by_seed"] == pytest.approx({"0": -0.02, "1": -0.025, "2": -0.015})
    # one-sample t over 3 slopes: mean -0.02, sd 0.005, se 0.00289, t(0.975, 2) = 4.303
    assert trend["ci95"] == pytest.approx(
        [-0.02 - 4.303 * 0.005 / 3**0.5, -0.02 + 4.303 * 0.005 / 3**0.5], abs=1e-4
    )
    assert trend["p_value"] == pytest.approx(0.0202, abs=1e-3)  # t = -6.93 on 2 df
    # the 9 (label count, seed) gaps regressed as if independent would claim far more: p < 0.0001
    flat = {k: entry(v["n_train"], [0.03, 0.05, 0.01]) for k, v in shrinking.items()}
    flat_trend = gap_trend(flat)
    assert flat_trend["slope_per_decade"] == pytest.approx(0.0, abs=1e-12) and flat_trend["p_value"] is None
    assert gap_trend({"10": shrinking["10"]}) is None  # one label count: no line to fit


def test_a_side_that_is_one_fit_for_every_seed_is_named_a_one_sample_test():
    paired = paired_comparison([0.70, 0.72, 0.71], [0.66, 0.67, 0.69])
    probe = paired_comparison([0.68, 0.68, 0.68], [0.66, 0.67, 0.70])
    assert paired["test"] == "paired t" and probe["test"].startswith("one-sample t")
    assert "one-sample t = " in paired_text(probe) and "3 seeds against one fit" in paired_text(probe)
    assert "paired seeds" in paired_text(paired) and "one-sample" not in paired_text(paired)
    assert "Holm-adjusted p = 0.09" in paired_text({**paired, "p_holm": 0.09})


def test_verdicts_and_detectable_difference():
    # the Holm-adjusted p decides where the summary has it
    assert verdict({"mean_difference": 0.02, "p_value": 0.01, "p_holm": 0.06}) == "no detectable difference"
    assert verdict({"mean_difference": 0.02, "p_value": 0.01}) == "higher"
    assert verdict({"mean_difference": -0.02, "p_value": 0.01}) == "lower"
    assert verdict({"mean_difference": 0.05, "p_value": 0.2}) == "no detectable difference"
    # every seed the same difference: no t-test; a sign test needs 6 seeds to get below 0.05
    same = {"mean_difference": 0.016, "std_difference": 0.0, "t": None, "p_value": None}
    three, six = {**same, "n": 3}, {**same, "n": 6, "sign_test_p": 2 / 2**6}
    assert verdict(three) == "no detectable difference"
    assert verdict(six) == "higher"
    assert verdict({**six, "mean_difference": -0.016}) == "lower"
    assert paired_text(three) == (
        "+1.6 pp (the same in every seed, so no t-test; 3 seeds are too few for a sign test to reject "
        "(its smallest p is 0.25), 3 paired seeds)"
    )
    assert "a sign test gives p = 0.0312" in paired_text(six)
    assert "no spread: t-test undefined" in paired_text(
        {**same, "mean_difference": 0.0, "n": 3, "sign_test_p": None}
    )
    # both sides one fit for every seed (the linear probe and TF-IDF on all labels): the seeds vary
    # nothing, and the test over the test texts decides
    texts = {**three, "mean_difference": -0.13, "items": {"p_value": 0.0002, "n_items": 1275}}
    assert verdict(texts) == "lower"
    assert "over the 1,275 test texts p = 0.0002" in paired_text(texts)
    assert verdict({**texts, "items": {"p_value": 0.2, "n_items": 1275}}) == "no detectable difference"
    # t(0.975, 8) + t(0.8, 8) = 2.306 + 0.889; times std 1 and sqrt(2/2)
    assert detectable_difference(1.0, 2, 8) == pytest.approx(3.195, abs=1e-3)


def test_probe_features_are_every_layers_pooled_output_the_last_through_the_final_norm(workdir):
    import copy

    from tinytf.data.sentiment import SentimentData
    from tinytf.model.transformer import pool
    from tinytf.train.linear_probe import layer_features
    from tinytf.train.starts import build_classifier, classifier_config

    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    model = build_classifier("frozen", classifier_config(pretrained, 2), pretrained, 3).eval()
    features = layer_features(model, data, 32, CPU)
    d, n_layer, pooling = model.config.d_model, model.config.n_layer, model.config.pooling
    assert n_layer >= 2 and {s: f.shape for s, f in features.items()} == {
        s: (len(data.splits[s]), n_layer * d) for s in ("train", "validation", "test")
    }
    ids = data.splits["validation"].input_ids[2][:32]
    x, mask = torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long)
    first_only = copy.deepcopy(model.base)  # the body cut after its first block, no final norm
    first_only.blocks, first_only.ln_f = first_only.blocks[:1], None
    with torch.no_grad():
        first, last = first_only(x, mask), model.base(x, mask)
    row = features["validation"][2]
    torch.testing.assert_close(torch.from_numpy(row[:d]), pool(first, mask, pooling)[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(torch.from_numpy(row[-d:]), pool(last, mask, pooling)[0], atol=1e-5, rtol=1e-4)


def test_probe_chooses_c_on_validation_and_scores_test():
    from tinytf.train.linear_probe import fit_probe

    rng = np.random.default_rng(0)
    labels = {s: rng.integers(0, 2, n) for s, n in (("train", 200), ("validation", 100), ("test", 100))}
    # one informative column among 20 noise columns
    features = {
        s: np.column_stack([y * 2.0 + rng.normal(0, 0.5, len(y)), rng.normal(0, 1, (len(y), 20))])
        for s, y in labels.items()
    }
    cs = [1e-4, 1e-2, 1.0]
    fit = fit_probe(features, labels, cs)
    alone = {c: fit_probe(features, labels, [c]).validation_accuracy for c in cs}
    assert (
        fit.c == min(c for c in cs if alone[c] == max(alone.values()))
        and fit.validation_accuracy == alone[fit.c]
    )
    assert fit.test_accuracy > 0.9 and 0 < fit.test_loss < 0.5
    tie = fit_probe({s: np.ones((len(y), 1)) for s, y in labels.items()}, labels, [3.0, 0.1])
    assert tie.c == 0.1  # no C can do better than the majority: the more regularised wins the tie


def test_the_baselines_vocabulary_is_every_train_text_while_labels_come_from_the_subset(monkeypatch):
    """Protocol v3: TF-IDF reads every train text as the tokenizer and the LM do; a word that
    only texts outside the subset hold is still a feature, and the subset's labels alone are fitted."""
    import tinytf.analysis.baselines as baselines

    fitted = []
    real = baselines.fit_baselines

    def spy(train, validation, test, cs, word_ngrams, char_ngrams, features=None):
        fitted.append((len(train[0]), features))
        return real(train, validation, test, cs, word_ngrams, char_ngrams, features)

    monkeypatch.setattr(baselines, "fit_baselines", spy)
    texts = [f"{'good' if i % 2 else 'bad'} film number{i}" for i in range(60)]
    labels = np.array([i % 2 for i in range(60)])
    splits = {"train": (texts[:40], labels[:40]), "validation": (texts[40:50], labels[40:50])}
    splits["test"] = (texts[50:], labels[50:])
    baselines.baseline_curve(splits, [(10, [1, 2])], [1.0], (1, 1), (2, 2))
    assert [n for n, _ in fitted] == [10, 10]  # the regression: the subset's labels
    vocabulary = fitted[0][1].transformer_list[0][1].vocabulary_
    assert {f"number{i}" for i in range(40)} <= set(vocabulary)  # the features: all 40 texts
    assert fitted[0][1] is fitted[1][1]  # fitted once for the curve


def test_the_recipe_search_halves_the_candidates_each_seed_and_chooses_among_the_last():
    """Protocol v3: 6 candidates on seed 1, the better 3 on seed 2, the better 2 on seed 3; the
    choice is the best mean of the last round, whatever an eliminated candidate scored once."""
    from tinytf.train.recipes import RunSpec, halving_search

    recipes = [(lr, d) for lr in (3e-4, 1e-3, 3e-3) for d in (0.0, 0.1)]
    score = {  # validation accuracy per (recipe, seed); binary fractions, so means are exact
        (3e-4, 0.0): [0.5], (3e-4, 0.1): [0.875],  # (3e-4, 0.1): best on seed 1, then last
        (1e-3, 0.0): [0.75, 0.75, 0.75], (1e-3, 0.1): [0.625],
        (3e-3, 0.0): [0.625], (3e-3, 0.1): [0.75, 0.875, 0.625],
    }  # fmt: skip
    score[3e-4, 0.1] += [0.25]
    asked = []

    def run(specs):
        asked.append(sorted((s.lr, s.dropout, s.seed) for s in specs))
        return [
            {"start": s.start, "labels": "250", "lr": s.lr, "dropout": s.dropout, "seed": s.seed,
             "validation_accuracy": score[s.lr, s.dropout][s.seed - 1]}
            for s in specs
        ]  # fmt: skip

    def spec(start, count, seed, lr, dropout):
        return RunSpec(start, count, seed, lr, dropout, REPO / "m.pt", "final")

    rows, last = halving_search(run, {("scratch", 250): recipes}, [1, 2, 3], spec)
    assert [len(a) for a in asked] == [6, 3, 2] and len(rows) == 11
    # seed 1 keeps its 0.875 and its two 0.75s
    assert {(lr, d) for lr, d, _ in asked[1]} == {(3e-4, 0.1), (1e-3, 0.0), (3e-3, 0.1)}
    assert last["scratch", 250] == [(1e-3, 0.0), (3e-3, 0.1)]  # means over seeds 1-2: 0.75, 0.8125
    chosen = chosen_recipe(rows, last["scratch", 250])
    # over 3 seeds both have 0.75: the earlier candidate; (3e-4, 0.1)'s 0.875 on seed 1 counts for nothing
    assert (chosen["lr"], chosen["dropout"]) == (1e-3, 0.0)
    assert {(c["lr"], c["dropout"]): c["seeds"] for c in chosen["candidates"]}[3e-4, 0.1] == 2


def test_a_stopped_finetune_started_again_trains_only_the_runs_it_had_not_finished(
    workdir, tmp_path, monkeypatch
):
    """Each finished run is kept under `state` as it comes back; started again with the same
    params, data and code, the stage trains only the rest and its rows are the uninterrupted
    run's. Other params never read a kept run."""
    import tinytf.train.finetune as finetune
    from tinytf.train.loop import TrainingDiverged

    monkeypatch.setenv("TINYTF_WORKERS", "1")  # in this process: the counting below sees every run
    params = FinetuneParams(
        starts=["pretrained", "scratch"], label_counts=[24, 0], seeds=[1, 2], epochs=1, min_steps=4,
        batch_size=16, lrs=[1e-3], dropouts=[0.1], search_labels=24, search_seeds=1, snapshot_labels=24,
        device="cpu", precision="fp32", compile=False,
    )  # fmt: skip
    pretrained, state = workdir / "models" / "pretrained.pt", tmp_path / "state"
    whole = run_finetune(params, 32, pretrained, workdir).runs
    trained, real = [], finetune._train

    def failing_on(spec_to_fail):
        def train(trainer, spec):
            if spec == spec_to_fail:
                raise TrainingDiverged("a stop from outside")
            trained.append(spec)
            return real(trainer, spec)

        return train

    last = finetune.RunSpec("scratch", 0, 2, 1e-3, 0.1, pretrained, "final")
    monkeypatch.setattr(finetune, "_train", failing_on(last))
    with pytest.raises(TrainingDiverged):
        run_finetune(params, 32, pretrained, workdir, state=state)
    kept = len(list(state.rglob("*.pkl")))
    assert kept == len(trained) > 0  # every finished run, no more
    trained.clear()
    monkeypatch.setattr(finetune, "_train", failing_on(None))
    again = run_finetune(params, 32, pretrained, workdir, state=state).runs
    assert len(trained) == len(whole) - kept  # only the rest
    columns = ["start", "labels", "seed", "lr", "validation_accuracy", "test_accuracy"]
    pd.testing.assert_frame_equal(again[columns], whole[columns])
    trained.clear()
    other = dataclasses.replace(params, dropouts=[0.2])  # other params: nothing kept applies
    run_finetune(other, 32, pretrained, workdir, state=state)
    assert len(trained) == len(whole)


def test_every_body_of_pretrain_seeds_is_found_and_each_seed_takes_one_in_turn(tmp_path):
    """pretrain.seeds [1, 2, 3]: the i-th fine-tuning seed fine-tunes body i mod 3, with that body's
    snapshots; a body stage pretrain has not written is one line naming it and the command."""
    from tinytf.errors import DataError
    from tinytf.train.recipes import body_of, find_bodies

    for seed in (1, 2, 3):
        (tmp_path / "m").mkdir(exist_ok=True)
        (tmp_path / "m" / f"seed{seed}.pt").write_bytes(b"")
        (tmp_path / "s" / f"seed{seed}").mkdir(parents=True)
        for epoch in (2, 1, 10):
            (tmp_path / "s" / f"seed{seed}" / f"epoch{epoch}.pt").write_bytes(b"")
    bodies = find_bodies(tmp_path / "m", tmp_path / "s", [1, 2, 3])
    assert [b.seed for b in bodies] == [1, 2, 3]
    assert [p.stem for p in bodies[1].snapshots] == ["epoch1", "epoch2", "epoch10"]
    assert bodies[1].snapshots[0].parent.name == "seed2"
    assert [body_of(s, [1, 2, 3, 4, 5], bodies).seed for s in (1, 2, 3, 4, 5)] == [1, 2, 3, 1, 2]
    with pytest.raises(DataError, match=r"seed4.pt: not found.*dvc repro pretrain"):
        find_bodies(tmp_path / "m", tmp_path / "s", [1, 4])
