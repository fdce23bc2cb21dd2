import numpy as np
import pandas as pd
import pytest

from tests.helpers.report_text import section_lines
from tests.unit.report.test_mistakes import _runs
from tinytf.report.champion import best_start, champion_comparison
from tinytf.report.derive import champion as champion_view
from tinytf.report.dvc_views import headline
from tinytf.report.facts import Facts

N = 40  # test texts


def _curve_runs(validation: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "start": start,
            "labels": labels,
            "seed": seed,
            "snapshot": "final",
            "lr": 0.001,
            "dropout": 0.1,
            "chosen": True,
            "validation_accuracy": accuracy - (labels != "all"),
        }
        for start, accuracy in validation.items()
        for labels in ("all", "100")
        for seed in (1, 2)
    )


def test_the_best_start_is_chosen_on_validation_over_all_label_runs():
    assert best_start(_curve_runs({"pretrained": 0.70, "scratch": 0.72})) == "scratch"
    runs = _curve_runs({"pretrained": 0.70}).assign(chosen=False)
    assert best_start(runs) is None  # no chosen all-label run: nothing to compare with


def test_the_champion_is_paired_per_text_with_the_best_start_and_tfidf():
    right = lambda k: [1] * k + [0] * (N - k)  # noqa: E731
    champion = _runs("pretrained", [right(30)], 0.9)  # 75 %
    finetune = pd.concat(
        [_runs("pretrained", [right(20), right(22)], 0.8), _runs("scratch", [right(10)] * 2, 0.8)]
    )
    tfidf = _runs("tfidf_lr", [right(38)], 0.7)  # 95 %
    c = champion_comparison(champion, finetune, _curve_runs({"pretrained": 0.7, "scratch": 0.6}), tfidf)
    start, baseline = c["rivals"]["best_start"], c["rivals"]["tfidf"]
    assert (start["start"], start["seeds"], start["accuracy"]) == ("pretrained", 2, pytest.approx(21 / N))
    assert start["mean_difference"] == pytest.approx(30 / N - 21 / N) and start["p_value"] < 0.05
    assert baseline["mean_difference"] == pytest.approx(-8 / N) and c["best"] == "tfidf_lr"
    [text] = section_lines("headline", champion=champion_view(c))
    assert "against the pretrained start with all labels (52.5%, mean of 2 seeds) +22.5 points (p = " in text
    assert " over the texts, a difference detected there)" in text
    # one run of the served model: the sentence says what its p hold fixed
    assert "The served model is one run, one seed of the grid's winner: these p hold it fixed" in text
    assert text.endswith(
        "Highest test accuracy of the three: TF-IDF + LR (the best start is the one with the "
        "best mean validation accuracy; test chose nothing)."
    )
    assert "champion_minus" not in headline(Facts(champion_vs=c))  # dvc exp show's columns stay few
    assert np.isclose(c["champion"], 0.75) and c["n_items"] == N
