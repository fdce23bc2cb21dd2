"""The report's opening answer: three to five plain sentences, each with its interval, the
unwelcome ones first, and the headline figure inline (issue "The first hour"). Every number is
read from the fine-tuning summary's multi-bootstrap blocks, the baselines and the metrics; a
sentence whose inputs are missing is left out."""

from __future__ import annotations

from tinytf.report import tables as rt

NAMES = {
    "pretrained": "the pretrained start",
    "scratch": "training from scratch",
    "probe": "the frozen probe",
}
COUNT_WORDS = {"all": "all labels"}


def _interval(boot: dict) -> str:
    low, high = (100 * x for x in boot["ci95"])
    return f"95 % CI [{low:+.1f}, {high:+.1f}]"


def _detected(boot: dict) -> bool:
    p = boot.get("p_holm", boot["p_value"])
    return p is not None and p < 0.05 and not boot["ci95"][0] <= 0 <= boot["ci95"][1]


def _labels(count: str) -> str:
    return COUNT_WORDS.get(count, f"{int(count):,} labels")


def against_tfidf(curve: dict, tfidf: float | None) -> str | None:
    """Where TF-IDF + LR (`tfidf`: its all-labels test accuracy) stands against the neural starts."""
    last = curve.get("all", {})
    if tfidf is None:
        return None
    starts = [s for s in NAMES if f"{s}_vs_tfidf" in last and "multiboot" in last[f"{s}_vs_tfidf"]]
    if not starts:
        return None
    beaten = [
        c
        for c, entry in curve.items()
        if all(
            f"{s}_vs_tfidf" in entry
            and _detected(entry[f"{s}_vs_tfidf"]["multiboot"])
            and entry[f"{s}_vs_tfidf"]["multiboot"]["estimate"] < 0
            for s in starts
        )
    ]
    closest = max(starts, key=lambda s: last[f"{s}_vs_tfidf"]["multiboot"]["estimate"])
    boot = last[f"{closest}_vs_tfidf"]["multiboot"]
    where = (
        "at every label count"
        if len(beaten) == len(curve)
        else f"at {len(beaten)} of {len(curve)} label counts"
    )
    verb = "beats every neural start" if beaten else "is not detectably better than every neural start"
    where = where if beaten else "at any label count"
    return (
        f"TF-IDF + logistic regression {verb} {where}: with all labels it scores "
        f"{rt.pct(tfidf)}, and the nearest start, {NAMES[closest]}, is "
        f"{abs(100 * boot['estimate']):.1f} points {'below' if boot['estimate'] < 0 else 'above'} it ({_interval(boot)})."
    )


def pretraining(curve: dict, sources: str) -> str | None:
    """Pretrained − scratch over the curve: where a difference is detected, and the all-labels interval."""
    tests = {
        c: e["pretrained_vs_scratch"]["multiboot"]
        for c, e in curve.items()
        if "multiboot" in e.get("pretrained_vs_scratch", {})
    }
    if "all" not in tests:
        return None
    found = [c for c, boot in tests.items() if _detected(boot)]
    all_labels = f"with all labels pretrained − scratch is {100 * tests['all']['estimate']:+.1f} points ({_interval(tests['all'])})"
    if not found:
        return f"No difference from pretraining was detected at any of the {len(tests)} label counts ({sources}): {all_labels}."
    said = "; ".join(
        f"{'+' if tests[c]['estimate'] > 0 else '−'}{abs(100 * tests[c]['estimate']):.1f} points at {_labels(c)} ({_interval(tests[c])})"
        for c in found
    )
    rest = len(tests) - len(found)
    return (
        f"Pretraining made a detected difference at {len(found)} of {len(tests)} label counts ({sources}): {said}"
        + (f"; no difference detected at the other {rest}" if rest else "")
        + (f", and {all_labels}." if "all" not in found else ".")
    )


def probe(curve: dict, majority: float | None) -> str | None:
    last = curve.get("all", {})
    if "probe" not in last or majority is None:
        return None
    gap = 100 * (last["probe"]["mean"] - majority)
    return (
        f"The frozen pretrained features alone (a linear probe) reach {rt.pct(last['probe']['mean'])} with all "
        f"labels, {abs(gap):.1f} points {'above' if gap > 0 else 'below'} always answering the majority class "
        f"({rt.pct(majority)})."
    )


def served(metrics: dict | None) -> str | None:
    if metrics is None:
        return None
    lo, hi = metrics["test_accuracy_ci95"]
    return (
        f"The served model, the grid's winner chosen on validation, scores {rt.pct(metrics['test_accuracy'])} "
        f"on test (95 % CI {rt.pct(lo)} – {rt.pct(hi)} over test texts, one run)."
    )


def answer_lines(f, plots: list[tuple[str, str]]) -> list[str]:
    """The opening: the sentences, then the label curve figure."""
    curve = (f.finetune or {}).get("label_curve", {})
    seeds = len((f.finetune or {}).get("seeds", []))
    bodies = len((f.finetune or {}).get("pretrain_seeds") or [])
    sources = (
        f"over {bodies} pretraining runs, {seeds} fine-tuning seeds and the test movies at once"
        if bodies > 1
        else f"over {seeds} fine-tuning seeds and the test movies at once"
    )
    tfidf = (f.baselines or {}).get("label_curve", {}).get("all", {}).get("tfidf_lr", {}).get("mean")
    sentences = [
        against_tfidf(curve, tfidf),
        pretraining(curve, sources),
        probe(curve, f.majority_test),
        served(f.metrics),
    ]
    sentences = [s for s in sentences if s]
    if not sentences:
        return []
    figure = next((link for link, _ in plots if link.endswith("label_curve.png")), None)
    return [
        " ".join(sentences),
        "",
        *([f"![Test accuracy against labelled examples]({figure})", ""] if figure else []),
    ]
