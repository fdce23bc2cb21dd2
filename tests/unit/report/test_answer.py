"""The report's opening answer: plain sentences, each with its interval, the unwelcome first."""

from types import SimpleNamespace

from tests.helpers.report_text import section_lines
from tinytf.report.derive import answer


def answer_lines(f, plots):
    return section_lines("answer", **answer(f, plots))


def boot(estimate, low, high, p):
    return {
        "estimate": estimate,
        "ci95": [low, high],
        "p_value": p,
        "p_holm": p,
        "sources": ["seed", "movie"],
    }


def facts(gaps, tfidf_gaps):
    curve = {}
    for count, gap in gaps.items():
        entry = {"pretrained": {"mean": 0.7}, "scratch": {"mean": 0.7}, "probe": {"mean": 0.64}}
        entry["pretrained_vs_scratch"] = {"multiboot": gap}
        for start, tb in tfidf_gaps[count].items():
            entry[f"{start}_vs_tfidf"] = {"multiboot": tb}
        curve[count] = entry
    finetune = {"label_curve": curve, "seeds": [1, 2, 3, 4, 5], "pretrain_seeds": [1, 2, 3]}
    baselines = {"label_curve": {"all": {"tfidf_lr": {"mean": 0.781}}}}
    metrics = {"test_accuracy": 0.723, "test_accuracy_ci95": [0.70, 0.747]}
    return SimpleNamespace(finetune=finetune, baselines=baselines, metrics=metrics, majority_test=0.578)


def test_the_answer_puts_tfidf_first_and_says_no_difference_detected_with_its_interval():
    below = boot(-0.04, -0.06, -0.02, 0.001)
    f = facts(
        {"250": boot(0.02, -0.01, 0.05, 0.2), "all": boot(-0.01, -0.03, 0.01, 0.4)},
        {c: {"pretrained": below, "scratch": below, "probe": below} for c in ("250", "all")},
    )
    lines = answer_lines(f, [("plots/label_curve.png", "the curve")])
    text = lines[0]
    assert text.startswith(
        "With all labels TF-IDF + logistic regression scores 78.1% and every neural start scores below it"
    )
    assert "the pretrained start -4.0 points (95 % CI [-6.0, -2.0], Holm p = 0.001)" in text
    assert (
        "detected after Holm's correction for the pretrained start, training from scratch, the frozen probe"
        in text
    )
    assert (
        "No difference from pretraining was detected at any of the 2 label counts after Holm's correction"
        in text
    )
    assert "over 3 pretraining runs, 5 fine-tuning seeds and the test movies at once" in text
    assert "pretrained − scratch is -1.0 points (95 % CI [-3.0, +1.0])" in text
    assert "tie" not in text and "72.3%" in text
    assert "![Test accuracy against labelled examples](plots/label_curve.png)" in lines


def test_a_difference_is_named_only_where_the_interval_excludes_zero():
    f = facts(
        {"250": boot(0.03, 0.01, 0.05, 0.01), "all": boot(0.0, -0.02, 0.02, 0.9)},
        {c: {"pretrained": boot(-0.01, -0.03, 0.01, 0.3)} for c in ("250", "all")},
    )
    text = answer_lines(f, [])[0]
    assert "the pretrained start -1.0 points (95 % CI [-3.0, +1.0], Holm p = 0.3); none detected" in text
    assert "detected difference at 1 of 2 label counts" in text and "+3.0 points at 250 labels" in text
    assert "no difference detected at the other 1" in text
