"""The view of "Where pretraining helps": the protocol, every start against TF-IDF + LR and
pretrained against scratch at each label count, the trend, the probe, the baselines and the
pretraining-tokens curve (templates/transfer.md.j2 words them)."""

from __future__ import annotations

from tinytf.analysis.evaluation import ALPHA, verdict_of
from tinytf.params.starts import name, present
from tinytf.report.phrases import no_spread

# Published SST-2 numbers, cited for context only (another dataset than the default one)
PUBLISHED = (
    ("SVM (bag of words), Socher et al. 2013", 0.794),
    ("Naive Bayes (bigrams), Socher et al. 2013", 0.818),
    ("CNN-rand, Kim 2014", 0.837),
)

# a miss over a degenerate comparison says "too few texts to tell" (a tiny run): both starts
# within ON_MAJORITY of the majority class, or an interval wider than WIDE (accuracy, not points)
ON_MAJORITY = 0.005
WIDE = 0.2

# each verdict of a start against TF-IDF + LR, worded with TF-IDF as the subject
VERBS = {"lower": "it beats", "no detectable difference": "no difference detected from", "higher": "loses to"}

# the keys of a test dict the phrasing filters read (tinytf.report.phrases)
TEST_KEYS = ("mean_difference", "t", "p_value", "p_holm", "test", "sign_test_p", "n")
ITEM_KEYS = ("n_items", "p_value", "mean_difference")
BOOT_KEYS = ("ci95", "sources", "p_value", "p_holm")


def paired_view(test: dict) -> dict:
    """A paired test as the filters read it, without its per-seed and per-resample detail."""
    out = {k: test[k] for k in TEST_KEYS if k in test}
    if test.get("items"):
        out["items"] = {k: test["items"][k] for k in ITEM_KEYS}
    if "multiboot" in test:
        out["multiboot"] = _boot(test["multiboot"])
    return out


def _boot(boot: dict) -> dict:
    return {k: boot[k] for k in BOOT_KEYS if k in boot}


def against_view(test: dict) -> dict:
    """A start against TF-IDF as its clause reads it: the interval over every source where the
    summary has one (it decides), else the Holm p and the test over texts."""
    if "multiboot" in test:
        return {"mean_difference": test["mean_difference"], "multiboot": _boot(test["multiboot"])}
    return {k: v for k, v in paired_view(test).items() if k in ("mean_difference", "p_holm", "items")}


def search_labels_text(p: dict) -> str:
    """'1000 labels' (one search for the whole curve) or 'each of 250, all labels'."""
    counts = p["search_labels"]
    if isinstance(counts, list) and len(counts) > 1:
        return f"each of {', '.join(counts)} labels"
    return f"{counts[0] if isinstance(counts, list) else counts} labels"


def tokens_text(tokens: int) -> str:
    return f"{tokens / 1e6:.1f}M" if tokens >= 1e5 else f"{tokens:,}"


def transfer(f) -> dict | None:
    """None where there is no label curve (the section is left out)."""
    curve = f.label_curve
    if curve is None:
        return None
    s = f.finetune
    counts = list(curve["labels"])  # by train size (JSON keeps keys sorted as text)
    every = s["label_curve"].get("all", {})
    points = f.snapshot_curve
    return {
        "protocol": protocol(s.get("protocol")),
        "vs_tfidf": [e for c in counts if (e := against_tfidf(c, s["label_curve"][c]))],
        "vs_scratch": [
            vs_scratch(c, s["label_curve"][c], len(s["label_curve"]), majority(f, c))
            for c in counts
            if s["label_curve"][c].get("pretrained_vs_scratch")
        ],
        "trend": trend(s.get("trend")),
        "probe": {
            "accuracy": every["probe"]["mean"],
            "majority": f.baselines["label_curve"]["all"]["majority"]["mean"],
        }
        if "probe" in every and f.baselines
        else None,
        "baselines": baselines(curve, ((f.data or {}).get("sentiment") or {}).get("source")),
        "snapshots": None
        if points is None
        else {
            "labels": s["snapshot_labels"],
            "points": [[tokens_text(p.tokens), p.mean_difference] for p in points.itertuples() if p.tokens],
        },
    }


def protocol(p: dict | None) -> dict | None:
    """The protocol, fixed in params.yaml before the results: the section states it first."""
    if not p:
        return None
    keys = ("seeds", "label_counts", "lrs", "dropouts", "tests")
    return {
        **{k: p[k] for k in keys},
        "hf_lrs": p.get("hf_lrs"),
        "search_labels": search_labels_text(p),
        "halving_seeds": len(p["search_seeds"]) if p.get("search") else None,
    }


def against_tfidf(labels: str, entry: dict) -> dict | None:
    """Each start's difference from the baseline at one label count, and what the tests say."""
    tests = {start: entry[f"{start}_vs_tfidf"] for start in present(entry) if f"{start}_vs_tfidf" in entry}
    if not tests:
        return None
    said = {start: verdict_of(test) for start, test in tests.items()}
    names = {v: [name(a) for a, w in said.items() if w == v] for v in VERBS}
    if len(names["lower"]) == len(tests):
        summary = "it beats every start"
    elif len(names["higher"]) == len(tests):
        summary = "every start beats it"
    else:
        summary = ", ".join(f"{VERBS[v]} {' and '.join(who)}" for v, who in names.items() if who)
    first = next(iter(tests))
    return {
        "labels": labels,
        "tfidf": entry[first]["mean"] - tests[first]["mean_difference"],
        "summary": summary,
        "each": [{"name": name(a), "said": said[a], "test": against_view(t)} for a, t in tests.items()],
    }


def too_few(test: dict, pretrained: float, scratch: float, majority: float | None) -> str | None:
    """Why a miss says nothing at all: 'majority', 'wide' or None."""
    if majority is not None and max(abs(pretrained - majority), abs(scratch - majority)) < ON_MAJORITY:
        return "majority"
    low, high = (test.get("multiboot") or {}).get("ci95", (0.0, 0.0))
    return "wide" if high - low > WIDE else None


def vs_scratch(labels: str, entry: dict, family: int, majority: float | None = None) -> dict:
    """Pretrained − scratch at one label count, analysis's verdict (the template words it); `why`
    says which clause qualifies a miss; `majority` is the majority class's accuracy there."""
    test = entry["pretrained_vs_scratch"]
    said, why = verdict_of(test), None
    pretrained, scratch = entry["pretrained"]["mean"], entry["scratch"]["mean"]
    degenerate = too_few(test, pretrained, scratch, majority) if said == "no detectable difference" else None
    if degenerate:
        why = f"too_few_{degenerate}"
    elif said == "no detectable difference" and "multiboot" not in test:
        if no_spread(test):
            why = "no_spread"
        elif test.get("p_value") is not None and test["p_value"] < ALPHA:
            why = "one_test"
        else:
            why = "noise"
    return {
        "labels": labels,
        "said": said,
        "why": why,
        "family": family,
        "pretrained": pretrained,
        "scratch": scratch,
        "majority": majority,
        "test": paired_view(test),
    }


def majority(f, count: str) -> float | None:
    """The majority class's test accuracy at one label count, where the baselines ran."""
    entry = ((f.baselines or {}).get("label_curve") or {}).get(count) or {}
    return (entry.get("majority") or {}).get("mean")


def trend(t: dict | None) -> dict | None:
    """The only source of a claim that pretraining helps more (or less) with fewer labels."""
    if not t:
        return None
    p = t["p_value"]  # None: every seed the same slope, so no t-test
    return {
        **{k: t[k] for k in ("slope_per_decade", "ci95", "p_value", "model", "n")},
        "found": p is not None and p < ALPHA,
    }


def baselines(curve, source: str | None) -> dict | None:
    """Our highest-scoring start on test against TF-IDF + LR and the published SST-2 numbers."""
    if "tfidf_lr mean" not in curve:
        return None
    last = curve.iloc[-1]
    ours = {start: float(last[f"{start} mean"]) for start in present(curve.columns.str.removesuffix(" mean"))}
    top = max(ours, key=ours.get)
    return {
        "start": top,
        "accuracy": ours[top],
        "tfidf": float(last["tfidf_lr mean"]),
        "published": [list(p) for p in PUBLISHED],
        # Kim's stsa.binary test file is the sst2 source's: the same sentences, though the
        # published models also trained on SST's labelled phrases
        "sst2": source == "sst2",
    }
