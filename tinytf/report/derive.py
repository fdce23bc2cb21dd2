"""What the README says, as numbers and short phrases: `derive(facts, params, listing)` reads
the typed facts (tinytf.report.facts) and returns the view, plain JSON, that the templates
render (tinytf.report.render). Every choice a sentence rests on (which start, which count, which
test decided) is made here; the templates only word it."""

from __future__ import annotations

from tinytf.analysis.evaluation import detected, verdict
from tinytf.params.starts import present, subject
from tinytf.report import derive_answers, derive_course, derive_transfer
from tinytf.report.champion import name
from tinytf.report.derive_answers import starts
from tinytf.report.derive_transfer import paired_view
from tinytf.report.facts import Facts, Listing
from tinytf.report.tables import CELL


def derive(f: Facts, params, listing: Listing) -> dict:
    """The README's view: one entry per section template, in the document's order."""
    return {
        "run_card": f.run_card or [],
        "answer": answer(f, listing.plots),
        "headline": headline(f),
        "transfer": derive_transfer.transfer(f),
        "missing": [list(m) for m in dict.fromkeys(tuple(m) for m in listing.missing)],
        "notes": list(listing.notes),
        "tables": [list(t) for t in listing.tables],
        "plots": [list(p) for p in listing.plots],
        "published": list(listing.published),
        "wrong": derive_course.wrong(f, params),
        "answers": derive_answers.answers(f, params),
    }


def tfidf_all(f: Facts) -> float | None:
    """TF-IDF + LR's test accuracy with all labels, where the baselines ran."""
    return ((f.baselines or {}).get("label_curve", {}).get("all", {}).get("tfidf_lr") or {}).get("mean")


def headline(f: Facts) -> dict:
    m = f.metrics
    return {
        "metrics": None
        if m is None
        else {
            **{k: m[k] for k in ("test_accuracy", "test_accuracy_ci95", "test_macro_f1")},
            "n": (f.test_report or {}).get("n"),
            "best": {k: m["best"][k] for k in (*CELL, "validation_accuracy")},
            "seeds": len(m["best"].get("seeds", [0])),
        },
        "champion": champion(f.champion_vs),
        "majority_test": f.majority_test,
        "tfidf": tfidf_all(f) if "all" in (f.baselines or {}).get("label_curve", {}) else None,
        "finetune": None if f.finetune is None else finetune_headline(f.finetune),
        "pretrain": None
        if f.pretrain is None
        else {
            "objective": f.objective,
            "steps": f.pretrain["steps"],
            "perplexity": f.pretrain["validation_perplexity"],
            "word_perplexity": f.pretrain.get("validation_word_perplexity"),
            "bodies": f.pretrain_bodies or {},
        },
        "model": None
        if f.counts is None
        else {"total": f.counts["base+cls_head"], "base": f.counts["base"], "vocab": f.vocab},
    }


def finetune_headline(s: dict) -> dict:
    tests = []
    every = s.get("label_curve", {}).get("all", {})
    for key in ("pretrained_vs_tfidf", "pretrained_vs_scratch", "probe_vs_scratch"):
        test = every.get(key, s.get(key))  # the all-labels point of the curve carries its Holm p
        if test:
            name = key.replace("_vs_", " − ").replace("tfidf", "TF-IDF + LR")
            # a start against TF-IDF's one all-labels fit is a one-sample test, not a paired one
            paired = test.get("test", "paired t") == "paired t"
            label = "Paired " + name if paired else name[0].upper() + name[1:]
            tests.append({"label": label, "said": test.get("verdict", ""), "test": paired_view(test)})
    return {"seeds": len(s.get("seeds", [])) or "?", "starts": starts(s), "tests": tests}


def champion(c: dict | None) -> dict | None:
    """The served model against each rival on the same test texts, and which scored highest."""
    if c is None:
        return None
    return {
        "accuracy": c["champion"],
        "n_items": c["n_items"],
        "rivals": [
            {
                "name": name(r["start"]),
                **{k: r[k] for k in ("accuracy", "seeds", "mean_difference", "p_value")},
                "detected": verdict(r) != "no detectable difference",
            }
            for r in c["rivals"].values()
        ],
        "best": "the served model" if c["best"] == "champion" else name(c["best"]),
    }


def answer(f: Facts, plots: list) -> dict:
    """The opening sentences: every start against TF-IDF, pretraining's difference over the
    curve, the probe against the majority class, the served model; each None without its inputs."""
    s, m = f.finetune or {}, f.metrics
    last = s.get("label_curve", {}).get("all", {})
    return {
        "vs_tfidf": _answer_tfidf(last, tfidf_all(f)),
        "pretraining": _answer_pretraining(s),
        "probe": None
        if "probe" not in last or f.majority_test is None
        else {"accuracy": last["probe"]["mean"], "majority": f.majority_test},
        "served": None if m is None else {k: m[k] for k in ("test_accuracy", "test_accuracy_ci95")},
        "figure": next((link for link, _ in plots if link.endswith("label_curve.png")), None),
    }


def _answer_tfidf(last: dict, tfidf: float | None) -> dict | None:
    """With all labels, each neural start against TF-IDF + LR over every source at once."""
    boots = {
        subject(s): last[f"{s}_vs_tfidf"]["multiboot"]
        for s in present(last)
        if "multiboot" in last.get(f"{s}_vs_tfidf", {})
    }
    if tfidf is None or not boots:
        return None
    return {
        "tfidf": tfidf,
        "lower": all(b["estimate"] < 0 for b in boots.values()),
        "each": [{"name": n, **{k: b[k] for k in ("estimate", "ci95", "p_holm")}} for n, b in boots.items()],
        "found": [n for n, b in boots.items() if detected(b)],
    }


def _answer_pretraining(s: dict) -> dict | None:
    """Pretrained − scratch over the curve: where a difference is detected, and with all labels."""
    tests = {
        c: e["pretrained_vs_scratch"]["multiboot"]
        for c, e in s.get("label_curve", {}).items()
        if "multiboot" in e.get("pretrained_vs_scratch", {})
    }
    if "all" not in tests:
        return None
    bodies = len(s.get("pretrain_seeds") or [])
    runs = f"{bodies} pretraining runs, " if bodies > 1 else ""
    found = [
        {
            "labels": "all labels" if c == "all" else f"{int(c):,} labels",
            "estimate": b["estimate"],
            "ci95": b["ci95"],
        }
        for c, b in tests.items()
        if detected(b)
    ]
    return {
        "sources": f"over {runs}{len(s.get('seeds', []))} fine-tuning seeds and the test movies at once",
        "counts": len(tests),
        "all": {k: tests["all"][k] for k in ("estimate", "ci95")},
        "found": found,
        "all_found": detected(tests["all"]),
    }
