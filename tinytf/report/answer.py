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
    """With all labels, each neural start against TF-IDF + LR (`tfidf`: its test accuracy), each
    with its interval and Holm p, and which differences survive Holm's correction."""
    last = curve.get("all", {})
    boots = {
        s: last[f"{s}_vs_tfidf"]["multiboot"] for s in NAMES if "multiboot" in last.get(f"{s}_vs_tfidf", {})
    }
    if tfidf is None or not boots:
        return None
    lower = all(b["estimate"] < 0 for b in boots.values())
    each = "; ".join(
        f"{NAMES[s]} {100 * b['estimate']:+.1f} points ({_interval(b)}, Holm p = {b['p_holm']:.2g})"
        for s, b in boots.items()
    )
    found = [NAMES[s] for s, b in boots.items() if _detected(b)]
    said = (
        f"detected after Holm's correction for {', '.join(found)}"
        if found
        else "none detected after Holm's correction"
    )
    lead = "every neural start scores below it" if lower else "the neural starts against it"
    return f"With all labels TF-IDF + logistic regression scores {rt.pct(tfidf)} and {lead}: {each}; {said}."


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
        return (
            f"No difference from pretraining was detected at any of the {len(tests)} label counts after Holm's "
            f"correction ({sources}): {all_labels}."
        )
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
