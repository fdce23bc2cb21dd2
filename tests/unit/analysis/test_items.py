import numpy as np
import pandas as pd
import pytest

from tinytf.analysis.items import ItemSource, chosen_predictions, correct_by_item, item_comparison
from tinytf.data.predictions import COLUMNS, prediction_rows


def test_item_comparison_finds_a_difference_over_texts_and_none_between_equals():
    rng = np.random.default_rng(0)
    b = (rng.random((5, 400)) < 0.6).astype(float)
    a = np.maximum(b, (rng.random((5, 400)) < 0.3))  # a is right wherever b is, and on more texts
    found = item_comparison(a, b)
    assert found["mean_difference"] == pytest.approx((a.mean(0) - b.mean(0)).mean())
    assert found["p_value"] < 0.001 and found["ci95"][0] > 0 and found["n_items"] == 400
    assert found["method"].startswith("paired permutation test over test texts")
    same = item_comparison(b, b)
    assert same["p_value"] == 1.0 and same["mean_difference"] == 0.0
    # a coin's worth of disagreement on every text: no difference detected
    noise = item_comparison((rng.random((5, 400)) < 0.6).astype(float), b)
    assert noise["p_value"] > 0.05 and noise["ci95"][0] < 0 < noise["ci95"][1]
    with pytest.raises(ValueError, match="same texts"):
        item_comparison(a[:, :10], b)


def test_five_seeds_against_one_fit_are_compared_text_by_text():
    one_fit = np.array([[1, 1, 0, 0]], dtype=float)
    seeds = np.array([[1, 1, 1, 0]] * 5, dtype=float)
    result = item_comparison(seeds, one_fit)
    assert result["mean_difference"] == pytest.approx(0.25)  # one text in four gained, in every seed


def frame(start, labels, seed, lr, right):
    labels_ = np.array([0, 1] * (len(right) // 2))
    predictions = np.where(right, labels_, 1 - labels_)
    keys = {"start": start, "labels": labels, "seed": seed, "snapshot": "final", "lr": lr, "dropout": 0.1}
    return prediction_rows(keys, "test", labels_, predictions, np.full(len(right), 0.8))


def test_prediction_rows_and_the_chosen_runs_items():
    rows = frame("pretrained", "all", 1, 0.001, np.array([1, 1, 0, 1], dtype=bool))
    assert tuple(rows.columns) == COLUMNS and list(rows["item"]) == [0, 1, 2, 3]
    assert rows["probability"].dtype == np.float32
    probe = prediction_rows(
        {"start": "probe", "labels": "all", "seed": 1}, "test", [0, 1], [0, 0], [0.6, 0.7]
    )
    assert probe["lr"].isna().all() and probe["dropout"].isna().all()  # NaN, as runs.csv has them
    every = pd.concat(
        [
            rows,
            frame("pretrained", "all", 1, 0.003, np.array([0, 0, 0, 0], dtype=bool)),  # a searched recipe
            frame("scratch", "all", 1, 0.001, np.array([1, 0, 0, 1], dtype=bool)),
        ],
        ignore_index=True,
    )
    runs = pd.DataFrame(
        [
            {
                "start": "pretrained",
                "labels": "all",
                "seed": 1,
                "snapshot": "final",
                "lr": 0.001,
                "dropout": 0.1,
            },
            {
                "start": "pretrained",
                "labels": "all",
                "seed": 1,
                "snapshot": "final",
                "lr": 0.003,
                "dropout": 0.1,
            },
            {
                "start": "scratch",
                "labels": "all",
                "seed": 1,
                "snapshot": "final",
                "lr": 0.001,
                "dropout": 0.1,
            },
        ]
    ).assign(chosen=[True, False, True])
    chosen = chosen_predictions(every, runs)
    assert len(chosen) == 8 and set(chosen["lr"]) == {0.001}
    assert correct_by_item(chosen, start="pretrained", labels="all").tolist() == [[1, 1, 0, 1]]
    comparison = ItemSource(chosen).compare("all", "pretrained", "scratch")
    assert comparison["mean_difference"] == pytest.approx(0.25)
    with pytest.raises(KeyError, match="no test predictions"):
        correct_by_item(chosen, start="hf", labels="all")


def test_the_curve_states_each_comparison_with_its_multi_bootstrap_holm_within_the_family():
    """Every start against scratch and against TF-IDF carries one block over seeds and movies at
    once, Holm-adjusted across the label counts as the seed test is."""
    import pandas as pd

    from tinytf.analysis.evaluation import curve_summary
    from tinytf.data.predictions import prediction_rows

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 60)
    frames, runs = [], []
    for count, gain in (("100", 0.0), ("all", 0.3)):
        for start in ("pretrained", "scratch", "tfidf_lr"):
            for seed in (1, 2, 3):
                right = rng.random(60) < (0.6 + (gain if start == "pretrained" else 0.0))
                keys = {
                    "start": start,
                    "labels": count,
                    "seed": seed,
                    "snapshot": "final",
                    "lr": 0.001,
                    "dropout": 0.1,
                }
                frames.append(
                    prediction_rows(keys, "test", labels, np.where(right, labels, 1 - labels), np.ones(60))
                )
                if start != "tfidf_lr":
                    runs.append(
                        keys
                        | {
                            "n_train": 100 if count == "100" else 900,
                            "chosen": True,
                            "test_accuracy": float(right.mean()),
                            "validation_accuracy": 0.5,
                        }
                    )
    predictions = pd.concat(frames, ignore_index=True)
    baselines = predictions[predictions["start"] == "tfidf_lr"]
    items = ItemSource(
        predictions[predictions["start"] != "tfidf_lr"], baselines, np.repeat(np.arange(20), 3)
    )
    tfidf = {c: {"tfidf_lr": {"by_seed": {"1": 0.6, "2": 0.6, "3": 0.6}}} for c in ("100", "all")}
    curve = curve_summary(pd.DataFrame(runs), ["pretrained", "scratch"], tfidf, items)
    for family in ("pretrained_vs_scratch", "pretrained_vs_tfidf"):
        boots = [curve[c][family]["multiboot"] for c in ("100", "all")]
        assert all(b["sources"] == ["seed", "movie"] for b in boots)
        assert boots[1]["ci95"][0] > 0 and boots[1]["p_value"] < 0.05  # the 30-point gain at all labels
        ordered = sorted(b["p_value"] for b in boots)
        assert sorted(b["p_holm"] for b in boots) == pytest.approx(
            [min(1, 2 * ordered[0]), max(2 * ordered[0], ordered[1])]
        )
