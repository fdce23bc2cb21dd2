import numpy as np
import pandas as pd
import pytest

from tests.helpers.report_text import section_lines
from tinytf.data.predictions import prediction_rows
from tinytf.report.derive_transfer import against_tfidf
from tinytf.report.mistakes import ROWS, champion_mistakes, disagreements, short


def _runs(start: str, right_by_seed: list[list[int]], confidence: float) -> pd.DataFrame:
    labels = np.array([0, 1] * (len(right_by_seed[0]) // 2))
    frames = []
    for seed, right in enumerate(right_by_seed, start=1):
        predictions = np.where(np.asarray(right, bool), labels, 1 - labels)
        keys = {
            "start": start,
            "labels": "all",
            "seed": seed,
            "snapshot": "final",
            "lr": 0.001,
            "dropout": 0.1,
        }
        frames.append(prediction_rows(keys, "test", labels, predictions, np.full(len(right), confidence)))
    return pd.concat(frames, ignore_index=True)


def test_disagreements_put_the_largest_gap_first_each_way():
    # texts 0-1: pretrained right in every seed, scratch in none / one; text 2: the other way round
    pretrained = _runs("pretrained", [[1, 1, 0, 1], [1, 1, 0, 1], [1, 0, 0, 1]], 0.9)
    scratch = _runs("scratch", [[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]], 0.7)
    texts = ["a fine film", "so  so\\nfilm", "awful", "ok"]
    table = disagreements(pd.concat([pretrained, scratch]), texts, ["rotten", "fresh"])
    assert list(table["item"]) == [0, 1, 2] and list(table["right"]) == [
        "pretrained",
        "pretrained",
        "scratch",
    ]
    assert table.iloc[0]["pretrained right (seeds)"] == 1.0 and table.iloc[0]["scratch right (seeds)"] == 0.0
    assert table.iloc[2]["label"] == "rotten" and table.iloc[2]["mean confidence"] == pytest.approx(0.8)
    assert 3 not in set(table["item"])  # both right in every seed: no disagreement


def test_the_champions_mistakes_are_its_most_confident_wrong_answers():
    labels = np.array([0, 1, 0, 1, 1])
    predictions = np.array([1, 1, 1, 0, 1])
    probabilities = np.array([0.6, 0.99, 0.95, 0.7, 0.5])
    rows = prediction_rows({"start": "pretrained"}, "test", labels, predictions, probabilities)
    table = champion_mistakes(rows, ["t0", "t1", "t2", "t3", "t4"], ["rotten", "fresh"])
    assert list(table["item"]) == [2, 3, 0]  # 0.95, 0.7, 0.6; the right answers are left out
    assert list(table["predicted"]) == ["fresh", "rotten", "fresh"] and len(table) <= 2 * ROWS
    assert short("word " * 100).endswith("…") and len(short("word " * 100)) == 110


def _test(diff, p_holm, verdict):
    return {"mean_difference": diff, "p_value": p_holm / 2, "p_holm": p_holm, "verdict": verdict, "n": 5}


def against_line(labels: str, entry: dict) -> str:
    [line] = section_lines("transfer", vs_tfidf=[against_tfidf(labels, entry)])
    return line


def test_the_baseline_sentence_says_who_wins_ties_or_loses():
    entry = {
        "pretrained": {"mean": 0.75},
        "scratch": {"mean": 0.72},
        "pretrained_vs_tfidf": _test(-0.03, 0.004, "lower"),
        "scratch_vs_tfidf": _test(-0.06, 0.001, "lower"),
    }
    line = against_line("all", entry)
    assert line.startswith(
        "- all labels, against TF-IDF + logistic regression (78.0%): it beats every start:"
    )
    assert "pretrained -3.0 points (TF-IDF wins, Holm p = 0.004)" in line
    entry["pretrained_vs_tfidf"] = _test(-0.01, 0.3, "no detectable difference") | {
        "items": {"n_items": 1275, "mean_difference": -0.011, "p_value": 0.2}
    }
    line = against_line("all", entry)
    assert ": it beats scratch, no difference detected from pretrained:" in line
    assert (
        "(no difference detected over seeds, Holm p = 0.3; over the 1,275 test texts -1.1 points, p = 0.2)"
        in line
    )
    assert against_tfidf("all", {"pretrained": {"mean": 0.7}}) is None


def test_a_trend_whose_seeds_share_one_slope_is_said_without_a_p():
    from tinytf.report.derive_transfer import trend

    slope = {"slope_per_decade": 0.0, "ci95": [0.0, 0.0], "p_value": None, "model": "m", "n": 3}
    [line] = section_lines("transfer", trend=trend(slope))
    assert "no trend of the gain with the label count detected" in line and "no t-test" in line


def test_with_a_multi_bootstrap_the_sentence_rests_on_it_and_names_what_it_drew():
    """Protocol v3: the verdict and the words come from the one interval over seeds and test
    movies; the seed-only and text-only tests are not quoted beside it as confirmation."""
    from tinytf.analysis.evaluation import verdict
    from tinytf.analysis.headline import brief_test

    boot = {"estimate": 0.021, "ci95": [-0.004, 0.046], "p_value": 0.09, "p_holm": 0.18,
            "sources": ["seed", "movie"]}  # fmt: skip
    test = _test(0.021, 0.004, "higher") | {
        "items": {"n_items": 1275, "mean_difference": 0.021, "p_value": 0.001},
        "multiboot": boot,
    }
    test.pop("verdict")
    assert verdict(test) == "no detectable difference"  # the seed test's 0.004 does not decide
    test["verdict"] = verdict(test)
    entry = {"pretrained": {"mean": 0.75}, "scratch": {"mean": 0.72}, "pretrained_vs_tfidf": test}
    line = against_line("all", entry)
    assert (
        "pretrained +2.1 points (no difference detected, 95 % CI [-0.4, +4.6] over seeds and test movies "
        in line
    )
    assert "at once (multi-bootstrap p = 0.09, Holm p = 0.18))" in line and "test texts" not in line
    brief = brief_test(test)
    assert brief | {"seeds_only": None} == {
        "estimate": 0.021, "ci95_low": -0.004, "ci95_high": 0.046, "p_value": 0.09, "p_holm": 0.18,
        "sources": "seed, movie", "verdict": "no detectable difference", "seeds_only": None,
        "texts_only": {"p_value": 0.001},
    }  # fmt: skip
    assert brief["seeds_only"]["p_value"] == test["p_value"]  # a diagnostic, named for what it holds fixed


def test_the_label_curve_table_carries_the_multi_bootstrap_columns_where_the_run_has_them():
    from tinytf.report.transfer import curve_frame

    boot = {
        "estimate": 0.02,
        "ci95": [-0.005, 0.045],
        "p_value": 0.09,
        "p_holm": 0.18,
        "sources": ["seed", "movie"],
    }
    entry = {
        "n_train": 250,
        "scratch": {"mean": 0.6, "std": 0.01, "by_seed": {"1": 0.6}},
        "pretrained": {"mean": 0.62, "std": 0.01, "by_seed": {"1": 0.62}},
        "pretrained_vs_scratch": {
            "mean_difference": 0.02,
            "p_value": 0.04,
            "p_holm": 0.08,
            "multiboot": boot,
        },
    }
    frame = curve_frame({"label_curve": {"250": entry}}, None, "summary.json")
    row = frame.iloc[0]
    assert row["pretrained − scratch CI low (all sources)"] == -0.005
    assert row["pretrained − scratch CI high (all sources)"] == 0.045
    assert row["pretrained − scratch p (all sources, Holm)"] == 0.18
    del entry["pretrained_vs_scratch"]["multiboot"]  # a v2 summary: no such columns
    assert not [
        c for c in curve_frame({"label_curve": {"250": entry}}, None, "s").columns if "all sources" in c
    ]


def test_baseline_sentence_says_when_the_published_numbers_are_on_the_same_test_sentences():
    from tinytf.report.derive_transfer import baselines

    curve = pd.DataFrame(
        {"pretrained mean": [0.70, 0.85], "scratch mean": [0.6, 0.75], "tfidf_lr mean": [0.7, 0.82]}
    )
    [sst2] = section_lines("transfer", baselines=baselines(curve, "sst2"))
    assert "(pretrained, 85.0%) stands 3.0 points above TF-IDF" in sst2
    assert "1.3 points above CNN-rand's published 83.7%" in sst2 and "the same 1,821 test sentences" in sst2
    other = baselines(curve.assign(**{"pretrained mean": [0.7, 0.8]}), "rt_critic_snippets")
    [other] = section_lines("transfer", baselines=other)
    assert "2.0 points below TF-IDF" in other and "3.7 points below CNN-rand" in other
    assert "context only, another dataset" in other
