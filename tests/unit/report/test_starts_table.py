"""One table of starts (tinytf.params.starts): a start added there, and in a run's summary, reaches
the label-curve table, its plot, its DVC view, headline.json and metrics.json, in the table's order;
and analysis's verdicts are what the report words."""

from __future__ import annotations

import pandas as pd
import pytest

import tinytf.params.starts as starts
from tests.helpers.report_text import section_lines
from tinytf.analysis.headline import headline_metrics
from tinytf.params.starts import Start
from tinytf.report.dvc_views import headline, label_curve_points
from tinytf.report.facts import Facts
from tinytf.report.transfer import curve_frame

# a start the table does not have, put second: every list must follow the table's order
FAKE = Start("distilled", "the distilled encoder", "the distilled encoder")


@pytest.fixture
def with_fake(monkeypatch):
    monkeypatch.setattr(starts, "STARTS", (starts.STARTS[0], FAKE, *starts.STARTS[1:]))


def _side(mean: float) -> dict:
    return {"mean": mean, "std": 0.01, "n": 2, "by_seed": {"1": mean - 0.01, "2": mean + 0.01}}


def _test(diff: float) -> dict:
    return {"mean_difference": diff, "p_value": 0.01, "p_holm": 0.02, "n": 2, "verdict": "higher"}


def _summary() -> dict:
    """A finetune summary as analysis writes it (keys sorted, as JSON keeps them), with the fake start."""
    curve = {
        labels: {
            "distilled": _side(0.80 + bump),
            "distilled_vs_scratch": _test(0.1),
            "distilled_vs_tfidf": _test(0.05),
            "n_train": n,
            "pretrained": _side(0.72 + bump),
            "pretrained_vs_scratch": _test(0.02),
            "scratch": _side(0.70 + bump),
        }
        for labels, n, bump in (("100", 100, 0.0), ("all", 1000, 0.05))
    }
    accuracy = {"test_accuracy_mean": 0.8, "test_accuracy_std": 0.01}
    return {
        "starts": {"distilled": accuracy, "pretrained": accuracy, "scratch": accuracy},
        "label_curve": curve,
    }


BASELINES = {
    "label_curve": {
        labels: {"majority": {"mean": 0.5}, "tfidf_lr": {"mean": 0.75 + bump, "std": 0.0}}
        for labels, bump in (("100", 0.0), ("all", 0.05))
    }
}


def test_a_start_added_to_the_table_reaches_every_table_plot_and_headline_file(with_fake, monkeypatch):
    curve = curve_frame(_summary(), BASELINES, "summary.json")
    means = [c for c in curve.columns if c.endswith(" mean")]
    assert means[:3] == ["pretrained mean", "distilled mean", "scratch mean"]
    assert "distilled − scratch" in curve and "distilled − TF-IDF" in curve

    view = label_curve_points(curve)
    assert list(view.columns[:4]) == ["n_train", "pretrained", "distilled", "scratch"]
    assert view["distilled"].tolist() == pytest.approx([0.80, 0.85])

    drawn = []
    import tinytf.report.plots as plots

    def keep_legend(fig, path):
        drawn.extend(t.get_text() for t in fig.axes[0].get_legend().get_texts())
        return path

    monkeypatch.setattr(plots, "_save", keep_legend)
    plots.plot_label_curve(curve, "unused.png")
    assert drawn[:3] == ["pretrained", "distilled", "scratch"]

    files = headline(Facts(finetune=_summary(), label_curve=curve))
    assert files["label_curve"]["all"]["distilled"] == pytest.approx(0.85)

    report = {"accuracy": 0.8, "accuracy_ci95": [0.7, 0.9], "macro_f1": 0.8}
    metrics = headline_metrics(report, {}, _summary(), BASELINES)
    assert metrics["label_curve"]["100"]["distilled"] == {"mean": pytest.approx(0.80)}
    assert "distilled" in metrics["pretrained_vs_scratch"]


METRICS = ("train_accuracy", "train_loss", "validation_accuracy", "validation_loss")


def test_the_finetune_curves_draw_their_starts_in_the_tables_order(with_fake, monkeypatch):
    import tinytf.report.plots as plots

    rows = [
        {"start": start, "seed": 1, "epoch": epoch, **dict.fromkeys(METRICS, 0.5)}
        for start in ("scratch", "distilled", "pretrained")  # as a params.yaml may list them
        for epoch in (1, 2)
    ]
    drawn = []
    monkeypatch.setattr(
        plots, "_save", lambda fig, path: drawn.append(fig.axes[0].get_legend_handles_labels()[1])
    )
    plots.plot_finetune_curves(pd.DataFrame(rows), "unused.png")
    assert drawn[0][:3] == ["pretrained (validation)", "distilled (validation)", "scratch (validation)"]


def test_a_summary_lists_its_starts_in_the_tables_order(with_fake):
    assert starts.ordered(["scratch", "unknown", "distilled", "pretrained"]) == [
        "pretrained",
        "distilled",
        "scratch",
        "unknown",  # a start the table lacks still shows, after the table's
    ]
    assert starts.name("distilled") == "the distilled encoder" and starts.subject("new") == "the new start"


@pytest.mark.parametrize(
    ("said", "words"),
    [
        ("higher", "pretraining helped"),
        ("lower", "pretraining hurt"),
        ("no detectable difference", "pretraining made no detectable difference"),
    ],
)
def test_the_report_words_the_verdict_analysis_decided(said, words):
    from tinytf.report.derive_transfer import vs_scratch

    test = {"mean_difference": 0.02, "p_value": 0.01, "p_holm": 0.01, "n": 5, "verdict": said}
    entry = {"pretrained_vs_scratch": test, "pretrained": _side(0.72), "scratch": _side(0.70)}
    point = vs_scratch("250", entry, 1)
    assert point["said"] == said  # the view keeps analysis's word; only the template chooses others
    [line] = section_lines("transfer", vs_scratch=[point])
    assert line.startswith(f"- 250 labels: {words}")


@pytest.mark.parametrize(
    ("scratch", "ci95", "majority", "reason"),
    [
        (0.5781, [-0.01, 0.01], 0.578, "both starts sit on the majority class (57.8%"),
        (0.70, [-0.15, 0.12], 0.578, "the interval spans 27 points"),
    ],
)
def test_a_degenerate_miss_says_too_few_texts_to_tell(scratch, ci95, majority, reason):
    from tinytf.report.derive_transfer import vs_scratch

    boot = {"ci95": ci95, "sources": ["seed"], "p_value": 0.9}
    test = {
        "mean_difference": 0.0,
        "p_value": 0.9,
        "n": 2,
        "verdict": "no detectable difference",
        "multiboot": boot,
    }
    entry = {"pretrained_vs_scratch": test, "pretrained": _side(0.578), "scratch": _side(scratch)}
    [line] = section_lines("transfer", vs_scratch=[vs_scratch("60", entry, 2, majority)])
    assert (
        line.startswith("- 60 labels: too few texts to tell whether pretraining helps: ") and reason in line
    )
    assert "no detectable difference" not in line and "tie" not in line


def test_a_miss_over_a_narrow_interval_off_the_majority_class_keeps_its_words():
    from tinytf.report.derive_transfer import vs_scratch

    boot = {"ci95": [-0.02, 0.03], "sources": ["seed"], "p_value": 0.6}
    test = {"mean_difference": 0.005, "n": 5, "verdict": "no detectable difference", "multiboot": boot}
    entry = {"pretrained_vs_scratch": test, "pretrained": _side(0.72), "scratch": _side(0.715)}
    [line] = section_lines("transfer", vs_scratch=[vs_scratch("250", entry, 2, 0.578)])
    assert line.startswith("- 250 labels: pretraining made no detectable difference")
