"""The README text of the report: headline numbers, where the course reports went wrong, and
answers to the course reports' questions, each sentence built from the measured numbers in the report's typed `Facts`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinytf.report import tables as rt
from tinytf.report.answer import answer_lines
from tinytf.report.answers import answers
from tinytf.report.bodies import lm_corpus
from tinytf.report.champion import champion_text
from tinytf.report.facts import ReportView
from tinytf.report.transfer import items_text, multiboot_text, transfer_text

COURSE_004_GRID = (
    "-S 'grid.optimizers=[Adagrad]' -S 'grid.lrs=[0.0001,5e-05,1e-05]' -S 'grid.batch_sizes=[64,128,256]'"
)


# ------------------------------------------------------------------------------------ README text


def _headline(r: ReportView) -> list[str]:
    f, out = r.f, []
    if f.metrics is not None:
        m, n = f.metrics, (f.test_report or {}).get("n")
        b, (lo, hi) = m["best"], m["test_accuracy_ci95"]
        out.append(
            f"- **Test accuracy {rt.pct(m['test_accuracy'])}** (95% bootstrap CI {rt.pct(lo)} – {rt.pct(hi)}"
            + (f", {n:,} test texts" if n else "")
            + f"), macro F1 {m['test_macro_f1']:.3f}, from the grid's "
            f"winner: {b['optimizer']}, lr {b['lr']:g}, batch {b['batch_size']}, {b['epochs']} epoch(s), "
            f"mean validation accuracy {rt.pct(b['validation_accuracy'])} over {len(b.get('seeds', [0]))} seed(s)."
        )
    if f.champion_vs is not None:
        out.append(champion_text(f.champion_vs))
    if f.majority_test is not None:
        out.append(
            f"- Majority-class baseline (always predict the most frequent class): {rt.pct(f.majority_test)} "
            "of test."
        )
    if f.baselines is not None and "all" in f.baselines.get("label_curve", {}):
        tfidf = f.baselines["label_curve"]["all"]["tfidf_lr"]
        out.append(
            f"- TF-IDF (word 1–2-grams + character 2–5-grams) + logistic regression, all labels, C chosen on "
            f"validation: {rt.pct(tfidf['mean'])} of test."
        )
    if f.finetune is not None:
        s = f.finetune
        out.append(
            f"- Test accuracy by start, mean ± std over {len(s.get('seeds', [])) or '?'} seeds: {rt.starts_text(f.finetune)}."
        )
        every = s.get("label_curve", {}).get("all", {})
        for key in ("pretrained_vs_tfidf", "pretrained_vs_scratch", "probe_vs_scratch"):
            test = every.get(key, s.get(key))  # the all-labels point of the curve carries its Holm p
            if test:
                name = key.replace("_vs_", " − ").replace("tfidf", "TF-IDF + LR")
                said = test.get("verdict", "")
                # a start against TF-IDF's one all-labels fit is a one-sample test, not a paired one
                paired = test.get("test", "paired t") == "paired t"
                label = "Paired " + name if paired else name[0].upper() + name[1:]
                diagnostics = f"{rt.paired_text(test)}{items_text(test)}"
                if "multiboot" in test:  # v3: the verdict rests on every source at once
                    out.append(
                        f"- {label}, all labels: {rt.pp(test['mean_difference'])}, {multiboot_text(test)}: "
                        f"{said}; diagnostics: {diagnostics}."
                    )
                else:
                    out.append(f"- {label}, all labels: {diagnostics}" + (f": {said}." if said else "."))
    if f.pretrain is not None:
        m = f.pretrain
        word = (
            f" ({m['validation_word_perplexity']:.1f} per word)" if "validation_word_perplexity" in m else ""
        )
        bodies = getattr(f, "pretrain_bodies", None) or {}
        spread = (
            f"; the {len(bodies)} pretraining runs (seeds {', '.join(bodies)}), which the curve "
            f"fine-tunes from: {', '.join(f'{v:.2f}' for v in bodies.values())}"
            if len(bodies) > 1
            else ""
        )
        first = " (the first run's, whose body the grid fine-tunes)" if spread else ""
        out.append(
            f"- Pretraining ({f.objective} LM, {m['steps']} steps): validation perplexity "
            f"{m['validation_perplexity']:.2f} per token{word}{first}{spread}."
        )
    if f.counts is not None:
        c = f.counts
        out.append(
            f"- Model: {c['base+cls_head']:,} trainable parameters as a classifier ({c['base']:,} in the "
            f"body), vocabulary {f.vocab:,}."
        )
    return out


def _wrong(r: ReportView) -> list[str]:
    """Where the course reports went wrong, each claim beside what PyTorch and our runs measure."""
    out = _wrong_arithmetic(r.f)
    if r.f.checks is None or r.f.counts is None:  # the checks stage has not run: its claims cannot be quoted
        return out
    return [*out, *_wrong_checks(r.f), *_positions(r.f), _grid_note(r), *_wrong_training(r.f)]


def _wrong_arithmetic(f) -> list[str]:
    out = []
    out.append(
        "- **Parameter arithmetic (course reports 000, 002)**, every claim in [tables/seed_claims.md]"
        "(tables/seed_claims.md):"
    )
    for _, c in (f.course_claims if f.course_claims is not None else pd.DataFrame()).iterrows():
        if c["verdict"] != "right":
            out.append(
                f"  - course report {c['seed']}, {c['quantity']}: claimed {c['claimed']:,}, PyTorch {c['PyTorch']:,} "
                f"({c['verdict']}); {c['note']}."
            )
    return out


def _wrong_checks(f) -> list[str]:
    """The claims the checks stage tests: the mask, the pretrained body, the head merges."""
    checks, c, out = f.checks, f.counts, []
    row = checks.iloc[0]
    out.append(
        f"- **'{row['claim']}'** (course report 000 Q1): {row['check']}: {row['measured']}. {row['verdict'].capitalize()} "
        "(and the blocked entries are −∞, not ∞: exp(−∞) = 0 is what removes them from the softmax)."
    )
    out.append(
        f"- **'We use a network that was trained on a specific classification task'** (course report 000 Q2): the body "
        f"is pretrained as a {f.objective} language model; only the classification head "
        f"({c['cls_head']:,} parameters) is new."
    )
    stats = f.variants
    row = checks.iloc[1]
    line = f"- **Shuffle / shift head merges (course report 004 §2.2.3)**: {row['check']}: {row['measured']}. {row['verdict'].capitalize()}."
    if stats is not None:
        pairs = [(pos, m) for pos in dict.fromkeys(stats["pos_encoding"]) for m in ("shuffle", "shift")]
        spread = rt.spread_text(stats, pairs)
        line += f" Our dev perplexity: {rt.variants_text(stats, ('concat', 'shuffle', 'shift'))}" + (
            f" ({spread})." if spread else "."
        )
    else:
        line += " (Variants not run: no seed spread to compare with.)"
    out.append(line)
    row = checks.iloc[2]
    line = (
        f"- **Re-weighting heads (course report 004 table 5: dev 345.57 vs 380.80 baseline, normal sample 2,178,713 vs "
        f"280.21)**: {row['check']}: {row['measured']}. Ours weighs each head per token, "
        "w_h(t) = ‖o_h(t)‖ / Σ‖o_h'(t)‖, so it is causal; a norm over the whole sequence lets position t see "
        "later tokens, which can flatter train/dev perplexity on full blocks."
    )
    if stats is not None and (stats["head_merge"] == "reweight").any():
        cols = [col for col in ("dev", "normal") if col in stats]
        line += (
            " Ours: "
            + "; ".join(f"{col}: {rt.variants_text(stats, ('concat', 'reweight'), col)}" for col in cols)
            + "."
        )
    line += variants_verdict(f, "reweight_vs_concat")
    out.append(line)
    return out


def _wrong_training(f) -> list[str]:
    """Claims about training: scratch's first accuracy, the least-squares probe."""
    out = []
    scratch = rt.first_epoch(f.curves)
    if scratch is not None and "scratch" in scratch.index and f.majority_val is not None:
        v = scratch.loc["scratch", "validation_accuracy"]
        out.append(
            f"- **'The model trained from scratch starts from zero accuracy'** (course report 002 Q4): after our first "
            f"epoch scratch has validation accuracy {rt.pct(v)} (majority-class share {rt.pct(f.majority_val)}). "
            "A two-class classifier at 0% would be a perfect one with its outputs swapped; untrained, it "
            "sits near the majority share."
        )
    if f.probes is not None:
        pr = f.probes
        out.append(
            f"- **Course report 004 §1 solved q Kᵀ = (100, 0, 0, 0) by least squares**: 4 equations in 3 unknowns have "
            "no exact solution in general, and softmax only needs score *gaps*. Our constructions "
            f"([tables/probes.md](tables/probes.md)) meet the tolerance in {int(pr['pass'].sum())} of "
            f"{len(pr)} exercises (largest weight error {pr['weight_err'].max():.2g})."
        )
    return out


def variants_verdict(f, key: str) -> str:
    """' Verdict (test, power): sentence.' from the variants study's summary, or ''."""
    summary = f.variants_summary
    entry = (summary or {}).get("verdicts", {}).get(key)
    if entry is None:
        return ""
    pct = summary["detectable_difference_pct"]
    power = (
        f", detects differences of {pct:.1f} % of the cells' mean dev perplexity" if pct is not None else ""
    )
    return (
        f" Verdict ({summary['test']}, {summary['seeds_per_cell']} seed(s) per cell, "
        f"{summary['steps']} steps{power}): {entry['sentence']}."
    )


def _positions(f) -> list[str]:
    """Course report 004's 'sinusoidal hurts' (one run each) next to our cells and the study's verdict."""
    stats = f.variants
    if stats is None or stats["pos_encoding"].nunique() < 2:
        return []
    pos = list(dict.fromkeys(stats["pos_encoding"]))
    vals = [(q, rt.variant(stats, q, "concat")) for q in pos]
    vals = [(q, v) for q, v in vals if v]
    if len(vals) < 2:
        return []
    low = min(vals, key=lambda qv: qv[1][0])
    gap, sd = max(v[0] for _, v in vals) - low[1][0], max(v[1] for _, v in vals)
    verdict = (
        "one seed only, so no spread to judge it by"
        if np.isnan(sd)
        else f"{'within' if gap <= 2 * sd else 'beyond'} twice the largest seed std ({sd:,.1f})"
    )
    return [
        "- **'Sinusoidal positional encoding hurts'** (course report 004 §2.2.2, one run each: dev 485.56 vs "
        "380.80 learned): ours with concat heads, dev perplexity "
        + ", ".join(f"{q} {rt.pm(*v, 1)}" for q, v in vals)
        + f"; {low[0]} is lower by {gap:,.1f}, "
        f"{verdict}." + variants_verdict(f, "learned_vs_sinusoidal")
    ]


def _grid_note(r: ReportView) -> str:
    f, p = r.f, r.params
    c = f.counts
    total = c["base+cls_head"]
    steps, tokens = ((f.pretrain or {}).get(key) for key in ("steps", "tokens"))
    trained = "pretrained briefly"
    if steps and tokens:
        trained = (
            f"pretrained for {steps} optimizer steps (~{tokens:,} tokens) on "
            f"{lm_corpus(f.data, p.prepare.corpus.source)}"
        )
    text = (
        "- **Course report 004's grid was chosen for roberta-base, not for a model like ours.** Batch 64/128/256, lr "
        "1e-4/5e-5/1e-5, Adagrad (20 epochs by default, 2 or 5 in its search) fine-tunes roberta-base: 125M "
        "parameters, already a strong pretrained encoder, where small learning rates avoid destroying it. Ours "
        f"has {total:,} parameters ({125e6 / total:.0f}× fewer), {trained}, so it needs lr ~1e-3 and few "
        "epochs."
    )
    if f.grid is None:
        return (
            text + f" (Grid not run; course report 004's grid on our model: `dvc exp run {COURSE_004_GRID}`.)"
        )
    g = f.grid
    by_lr = g.groupby("lr")["validation_accuracy"].max()
    text += " Our grid, best validation accuracy per lr: " + ", ".join(
        f"{lr:g} → {rt.pct(a)}" for lr, a in by_lr.items()
    )
    low = g[g["lr"] == g["lr"].min()].groupby("optimizer", sort=False)["validation_accuracy"].max()
    text += f"; at our smallest lr ({g['lr'].min():g}): " + ", ".join(
        f"{o} {rt.pct(a)}" for o, a in low.items()
    )
    if f.majority_val is not None:
        text += f" (majority-class share of validation {rt.pct(f.majority_val)})"
    if "SGD" in set(g["optimizer"]):
        sgd = g[g["optimizer"] == "SGD"].groupby("lr")["validation_accuracy"].max()
        text += "; SGD by lr: " + ", ".join(f"{lr:g} → {rt.pct(a)}" for lr, a in sgd.items())
    smallest = g["lr"].min()
    where = (
        f"course report 004's largest lr, 1e-4, is {smallest / 1e-4:g}× below our smallest"
        if smallest > 1e-4
        else "our grid reaches course report 004's range"
    )
    return (
        text
        + f". {where.capitalize()}; course report 004's grid on our model: `dvc exp run {COURSE_004_GRID}`."
    )


def render_readme(r: ReportView) -> str:
    lines = [
        "# tinytf report",
        "",
        "Built by `tinytf.report.build.build_report` from the pipeline's outputs (nothing is trained here); every "
        "number is read from those files, and the same inputs give the same bytes.",
        "",
        *(["## Run card", "", *r.f.run_card, ""] if r.f.run_card else []),
        *(["## The answer", "", *answer] if (answer := answer_lines(r.f, r.plots)) else []),
        "## Headline",
        "",
        *_headline(r),
        "",
    ]
    transfer = transfer_text(r)
    if transfer:
        lines += ["## Where pretraining helps", "", *transfer, ""]
    missing = list(dict.fromkeys(tuple(m) for m in r.missing))
    if missing or r.notes:
        lines += ["## Missing inputs", ""]
        lines += [f"- {what}: `{path}` is absent (make it with `{how}`)." for what, path, how in missing]
        lines += [f"- {note}" for note in r.notes] + [""]
    lines += ["## Tables", "", "Each as markdown with a CSV twin beside it.", ""]
    lines += [f"- [{link}]({link}): {sentence}" for link, sentence in r.tables] + [""]
    lines += ["## Plots", ""]
    for link, sentence in r.plots:  # shown, not only linked
        lines += [f"{sentence} ([{link}]({link}))", "", f"![{sentence}]({link})", ""]
    lines.pop()
    published = r.published  # the stages' own files beside this README (tinytf.report.build)
    if published:
        lines += [
            "",
            "Written by the stages themselves: " + ", ".join(f"[reports/{u}]({u})" for u in published) + ".",
        ]
    lines += [
        "",
        "## Where the course reports went wrong",
        "",
        "Where a course report and PyTorch (or our measurement) disagree, PyTorch wins.",
        "",
        *_wrong(r),
        "",
        "## Answers to the course reports' questions",
        "",
        *answers(r),
    ]
    return "\n".join(lines) + "\n"
