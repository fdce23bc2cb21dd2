"""The README text of the report: headline numbers, where the seed reports went wrong, and
answers to the seed questions, each sentence built from the measured numbers in the report's typed `Facts`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinytf.report import tables as rt
from tinytf.report.bodies import lm_corpus
from tinytf.report.facts import ReportView
from tinytf.report.transfer import transfer_text

MASKED_RUN = "tinytf preset masked"
SEED_004_GRID = (
    "-S 'grid.optimizers=[Adagrad]' -S 'grid.lrs=[0.0001,5e-05,1e-05]' -S 'grid.batch_sizes=[64,128,256]'"
)


# ------------------------------------------------------------------------------------ README text


def _headline(r: ReportView) -> list[str]:
    f, out = r.f, []
    if f.metrics is not None:
        m, n = f.metrics, (f.test_report or {}).get("n")
        b, (lo, hi) = m["best"], m["test_accuracy_ci95"]
        out.append(f"- **Test accuracy {rt.pct(m['test_accuracy'])}** (95% bootstrap CI {rt.pct(lo)} – {rt.pct(hi)}"
                   + (f", {n:,} test texts" if n else "") + f"), macro F1 {m['test_macro_f1']:.3f}, from the best "
                   f"grid cell: {b['optimizer']}, lr {b['lr']:g}, batch {b['batch_size']}, {b['epochs']} epoch(s), "
                   f"validation accuracy {rt.pct(b['validation_accuracy'])}.")  # fmt: skip
    if f.majority_test is not None:
        out.append(f"- Majority-class baseline (always predict the most frequent class): {rt.pct(f.majority_test)} "
                   "of test.")  # fmt: skip
    if f.baselines is not None and "all" in f.baselines.get("label_curve", {}):
        tfidf = f.baselines["label_curve"]["all"]["tfidf_lr"]
        out.append(f"- TF-IDF (word 1–2-grams + character 2–5-grams) + logistic regression, all labels, C chosen on "
                   f"validation: {rt.pct(tfidf['mean'])} of test.")  # fmt: skip
    if f.finetune is not None:
        s = f.finetune
        out.append(
            f"- Test accuracy by start, mean ± std over {len(s.get('seeds', [])) or '?'} seeds: {rt.arms_text(f.finetune)}."
        )
        every = s.get("label_curve", {}).get("all", {})
        for key in ("pretrained_vs_scratch", "frozen_vs_scratch"):
            if key in s:  # the all-labels point of the curve carries its Holm-adjusted p
                out.append(
                    f"- Paired {key.replace('_vs_', ' − ')}, all labels: {rt.paired_text(every.get(key, s[key]))}."
                )
    if f.pretrain is not None:
        m = f.pretrain
        word = (
            f" ({m['validation_word_perplexity']:.1f} per word)" if "validation_word_perplexity" in m else ""
        )
        out.append(f"- Pretraining ({f.objective} LM, {m['steps']} steps): validation perplexity "
                   f"{m['validation_perplexity']:.2f} per token{word}.")  # fmt: skip
    if f.counts is not None:
        c = f.counts
        out.append(f"- Model: {c['base+cls_head']:,} trainable parameters as a classifier ({c['base']:,} in the "
                   f"body), vocabulary {f.vocab:,}.")  # fmt: skip
    return out


# Long on purpose, like _answers: one README section, a bullet per seed claim found wrong.
def _wrong(r: ReportView) -> list[str]:
    f, out = r.f, []
    out.append("- **Parameter arithmetic (seeds 000, 002)**, every claim in [tables/seed_claims.md]"
               "(tables/seed_claims.md):")  # fmt: skip
    for _, c in (f.seed_claims if f.seed_claims is not None else pd.DataFrame()).iterrows():
        if c["verdict"] != "right":
            out.append(f"  - seed {c['seed']}, {c['quantity']}: claimed {c['claimed']:,}, PyTorch {c['PyTorch']:,} "
                       f"({c['verdict']}); {c['note']}.")  # fmt: skip
    checks, c = f.checks, f.counts
    if checks is None or c is None:  # the checks stage has not run: its claims cannot be quoted
        return out
    row = checks.iloc[0]
    out.append(
        f"- **'{row['claim']}'** (seed 000 Q1): {row['check']}: {row['measured']}. {row['verdict'].capitalize()} "
        "(and the blocked entries are −∞, not ∞: exp(−∞) = 0 is what removes them from the softmax)."
    )
    out.append(f"- **'We use a network that was trained on a specific classification task'** (seed 000 Q2): the body "
               f"is pretrained as a {f.objective} language model; only the classification head "
               f"({c['cls_head']:,} parameters) is new.")  # fmt: skip
    stats = f.variants
    row = checks.iloc[1]
    line = f"- **Shuffle / shift head merges (seed 004 §2.2.3)**: {row['check']}: {row['measured']}. {row['verdict'].capitalize()}."
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
    line = (f"- **Re-weighting heads (seed 004 table 5: dev 345.57 vs 380.80 baseline, normal sample 2,178,713 vs "
            f"280.21)**: {row['check']}: {row['measured']}. Ours weighs each head per token, "
            "w_h(t) = ‖o_h(t)‖ / Σ‖o_h'(t)‖, so it is causal; a norm over the whole sequence lets position t see "
            "later tokens, which can flatter train/dev perplexity on full blocks.")  # fmt: skip
    if stats is not None and (stats["head_merge"] == "reweight").any():
        cols = [col for col in ("dev", "normal") if col in stats]
        line += (
            " Ours: "
            + "; ".join(f"{col}: {rt.variants_text(stats, ('concat', 'reweight'), col)}" for col in cols)
            + "."
        )
    line += variants_verdict(f, "reweight_vs_concat")
    out.append(line)
    out += _positions(f)
    out.append(_grid_note(r))
    scratch = rt.first_epoch(f.curves)
    if scratch is not None and "scratch" in scratch.index and f.majority_val is not None:
        v = scratch.loc["scratch", "validation_accuracy"]
        out.append(f"- **'The model trained from scratch starts from zero accuracy'** (seed 002 Q4): after our first "
                   f"epoch scratch has validation accuracy {rt.pct(v)} (majority-class share {rt.pct(f.majority_val)}). "
                   "A two-class classifier at 0% would be a perfect one with its outputs swapped; untrained, it "
                   "sits near the majority share.")  # fmt: skip
    if f.probes is not None:
        pr = f.probes
        out.append(f"- **Seed 004 §1 solved q Kᵀ = (100, 0, 0, 0) by least squares**: 4 equations in 3 unknowns have "
                   "no exact solution in general, and softmax only needs score *gaps*. Our constructions "
                   f"([tables/probes.md](tables/probes.md)) meet the tolerance in {int(pr['pass'].sum())} of "
                   f"{len(pr)} exercises (largest weight error {pr['weight_err'].max():.2g}).")  # fmt: skip
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
    return (f" Verdict ({summary['test']}, {summary['seeds_per_cell']} seed(s) per cell, "
            f"{summary['steps']} steps{power}): {entry['sentence']}.")  # fmt: skip


def _positions(f) -> list[str]:
    """Seed 004's 'sinusoidal hurts' (one run each) next to our cells and the study's verdict."""
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
    verdict = ("one seed only, so no spread to judge it by" if np.isnan(sd) else
               f"{'within' if gap <= 2 * sd else 'beyond'} twice the largest seed std ({sd:,.1f})")  # fmt: skip
    return ["- **'Sinusoidal positional encoding hurts'** (seed 004 §2.2.2, one run each: dev 485.56 vs "
            "380.80 learned): ours with concat heads, dev perplexity " + ", ".join(
                f"{q} {rt.pm(*v, 1)}" for q, v in vals) + f"; {low[0]} is lower by {gap:,.1f}, "
            f"{verdict}." + variants_verdict(f, "learned_vs_sinusoidal")]  # fmt: skip


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
    text = ("- **Seed 004's grid was chosen for roberta-base, not for a model like ours.** Batch 64/128/256, lr "
            "1e-4/5e-5/1e-5, Adagrad (20 epochs by default, 2 or 5 in its search) fine-tunes roberta-base: 125M "
            "parameters, already a strong pretrained encoder, where small learning rates avoid destroying it. Ours "
            f"has {total:,} parameters ({125e6 / total:.0f}× fewer), {trained}, so it needs lr ~1e-3 and few "
            "epochs.")  # fmt: skip
    if f.grid is None:
        return text + f" (Grid not run; the seed's grid on our model: `dvc exp run {SEED_004_GRID}`.)"
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
    where = (f"the seed's largest lr, 1e-4, is {smallest / 1e-4:g}× below our smallest" if smallest > 1e-4
             else "our grid reaches the seed's range")  # fmt: skip
    return text + f". {where.capitalize()}; the seed's grid on our model: `dvc exp run {SEED_004_GRID}`."


# Long on purpose: one README section, a bullet per seed question, each built from the facts it quotes;
# split up, a question's sentence would be scattered over helpers that each serve it once.
def _answers(r: ReportView) -> list[str]:
    f, p = r.f, r.params
    c, lab, stats = f.counts, f.lab100, f.variants
    out = ["### Seeds 000 and 002 (the lab, Q1–Q5)", ""]
    if f.checks is None or c is None or lab is None:
        out.append("- **Q1–Q3** are answered from the checks stage's tables: run `dvc repro checks`.")
    else:
        free = f.checks.iloc[0]["measured"]
        pos = (
            f" Ours, dev perplexity with concat heads: {rt.variants_text(stats, ('concat',))}."
            if stats is not None
            else ""
        )
        out.append(f"- **Q1 mask, positional encoding.** The square mask sets attention to later positions to −∞ so a "
                   f"token is predicted from earlier ones only (nn.TransformerEncoder, last token changed, max |Δ| at "
                   f"earlier positions: {free}). Attention is permutation-equivariant, so "
                   f"position must be added to the embedding: a fixed sinusoidal table or a learned one "
                   f"({p.model.block_size * p.model.d_model:,} parameters).{pos}")  # fmt: skip
        tied = "; tied to the embedding, so only its bias is new" if p.model.tie_weights else ""
        out.append(f"- **Q2 the head.** The body is kept and the head swapped: the LM head predicts one of "
                   f"{f.vocab:,} tokens at every position ({c['lm_head']:,} parameters{tied}); the classifier maps "
                   f"the pooled (`{p.model.pooling}`) token to the classes ({c['cls_head']:,} parameters).")  # fmt: skip
        out.append(f"- **Q3 parameters.** The seed lab at vocabulary 100: body {lab['base']:,}, with classifier "
                   f"{lab['base+cls_head']:,}, with LM head {lab['base+lm_head']:,}; ours: body {c['base']:,}, with "
                   f"classifier {c['base+cls_head']:,} ([tables/parameters.md](tables/parameters.md)).")  # fmt: skip
    first = rt.first_epoch(f.curves)
    if f.finetune is not None:
        line = f"- **Q4 pretrained vs scratch.** Test accuracy: {rt.arms_text(f.finetune)} (seed 000: 80% vs 75%)."
        if "pretrained_vs_scratch" in f.finetune:
            line += f" Paired pretrained − scratch: {rt.paired_text(f.finetune['pretrained_vs_scratch'])}."
        if first is not None and {"pretrained", "scratch"} <= set(first.index):
            d = first.loc["pretrained"] - first.loc["scratch"]
            line += (f" After the first epoch, pretrained − scratch is {rt.pp(d['train_accuracy'])} in train and "
                     f"{rt.pp(d['validation_accuracy'])} in validation accuracy (seed 000: '25% higher').")  # fmt: skip
        out.append(line)
    else:
        out.append("- **Q4 pretrained vs scratch.** Not run: `dvc repro finetune`.")
    out.append(_masked(r))
    out += ["", "### Seed 003 (discussion questions)", ""]
    out.append("- **Positional encoding**: see Q1 above; `model.pos_encoding: none` (add it to "
               "`variants.pos_encodings`) measures what dropping it costs.")  # fmt: skip
    heads = f.heads
    if heads is not None:

        def top(col: str) -> str:
            h = heads.loc[heads[col].idxmax()]
            where = "itself" if col == "self" else f"the {col}"
            return (f"layer {int(h['layer'])} head {int(h['head'])} puts {rt.pct(h[col])} on {where} "
                    f"(uniform: {rt.pct(h['uniform'])})")  # fmt: skip

        out.append("- **Multi-head attention** lets heads specialise; on the '" + f.sample[0] + "' sample: "
                   + "; ".join(top(col) for col in ("previous token", "first token", "self")) + " ([tables/"
                   "attention_heads.md](tables/attention_heads.md), plots `attention_layer*.png`).")  # fmt: skip
    fits = f.fits
    measured = ""
    if fits is not None:
        rows = fits[fits["variable"].isin(["length", "length_k", "length_q"])]
        rows = rows.groupby(["kind", "variable"], sort=False)["time_exponent"].median().reset_index()
        measured = (
            " Measured time exponents: "
            + ", ".join(
                f"{k} vs {v} {e:.2f}"
                for k, v, e in zip(rows["kind"], rows["variable"], rows["time_exponent"], strict=True)
            )
            + " ([tables/complexity.md](tables/complexity.md))."
        )
    out.append("- **Complexity** with hidden size k: encoder self-attention O(M²k), decoder-encoder O(NMk), decoder "
               "self-attention O(N²k), plus O((M+N)k²) for the projections." + measured)  # fmt: skip
    out.append(
        "- **Encoder vs decoder**: encoder activations do not depend on the decoder; the source is encoded "
        "once (O(M²k)), and translating into another language re-runs only the decoder (O(N²k + NMk))."
    )
    frozen = ""
    if f.finetune is not None and "frozen" in f.finetune["arms"]:
        frozen = (f" The frozen arm (a logistic regression on the fixed body's layers): "
                  f"{rt.pct(f.finetune['arms']['frozen']['test_accuracy_mean'])}"
                  " test accuracy, what the pretrained features carry on their own.")  # fmt: skip
    out.append(
        "- **Pretrained LMs**: GPT-style (causal, ours by default) can generate but each position sees only "
        "its left context, which is why the classifier pools the whole text (or its last token), never the first; BERT-style (masked) sees both sides but does "
        "not generate; T5 (encoder-decoder, text-to-text) covers both at twice the machinery." + frozen
    )
    out += ["", "### Seed 004 (attention, mini transformer, fine-tuning)", ""]
    if f.probes is not None:
        out.append(f"- **§1 selection and averaging**: {int(f.probes['pass'].sum())}/{len(f.probes)} "
                   "constructions pass ([tables/probes.md](tables/probes.md)).")  # fmt: skip
    if f.pretrain is not None:
        m = f.pretrain
        scored = m.get("samples", {})
        names = [x.name for x in p.pretrain.samples if x.name in scored] + sorted(
            set(scored) - {x.name for x in p.pretrain.samples}
        )
        samples = ", ".join(f"{k} {scored[k]['perplexity']:,.1f}" for k in names)
        out.append(
            f"- **§2.2 baseline**: train {m.get('train_perplexity', float('nan')):,.1f}, dev "
            f"{m['validation_perplexity']:,.1f}"
            + (f", samples: {samples}" if samples else "")
            + " perplexity per token ([tables/pretrain.md](tables/pretrain.md)); seed 004's numbers are per "
            "GPT-2 token on another corpus, not comparable."
            + (" Variants: [tables/variants.md](tables/variants.md)." if stats is not None else "")
        )
    data = (f.data or {}).get("sentiment")
    if data:
        rows = {s: v["rows"] for s, v in rt.ordered_splits(data["splits"]).items()}
        sst = (" — SST-2's 6920/872/1821, as in the seed" if data["source"] == "sst2" and
               list(rows.values()) == [6920, 872, 1821] else "; the seed's 6920/872/1821 is SST-2: "
               "`dvc exp run -S prepare.sentiment.source=sst2`")  # fmt: skip
        out.append(f"- **Q2.1 dataset sizes** ({data['source']}): " + ", ".join(f"{s} {n:,}" for s, n in rows.items())
                   + sst + ".")  # fmt: skip
    out.append(f"- **Q1.x / Q2.3 padding, truncation, shapes**: a batch is input_ids and attention_mask, int64 (B, L) "
               f"with B = batch size and L the longest text in the batch, at most `tokenize.max_length` = "
               f"{p.tokenize.max_length} (longer texts truncated), and labels (B,).")  # fmt: skip
    if f.external:
        out.append(f"- **Q1.1–Q1.2 for the external encoder** (`{f.external['source']}`): its own tokenizer adds its "
                   f"special tokens ([CLS] … [SEP] for BERT), truncates each text to {f.external['max_length']} tokens "
                   "*including* them (`truncation=True, max_length`), and a batch is padded with its pad id to "
                   "its longest text under an attention mask of 1s and 0s (PyTorch int64 tensors). The seed's "
                   "`padding='max_length'` with 512 pads every sentence to 512 tokens, nearly all of them padding: "
                   "the same predictions (masked) for many times the work.")  # fmt: skip
    if first is not None and "pretrained" in first.index:
        cur = f.curves
        arm = (
            cur[cur["arm"] == "pretrained"].groupby("epoch")[["train_accuracy", "validation_accuracy"]].mean()
        )
        out.append(f"- **Q4.2 curves** (pretrained start, mean over seeds): best train accuracy at epoch "
                   f"{arm['train_accuracy'].idxmax()}, best validation accuracy at epoch "
                   f"{arm['validation_accuracy'].idxmax()} of {arm.index.max()}.")  # fmt: skip
    if f.grid is not None:
        g, b = f.grid, f.best
        per_opt = g.groupby("optimizer", sort=False)["validation_accuracy"].max()
        out.append(
            "- **Q4.5 optimizers** (best validation accuracy over the grid): "
            + ", ".join(f"{o} {rt.pct(a)}" for o, a in per_opt.items())
            + "; curves in `optimizer_curves.png`."
        )
        best = g[(g["optimizer"] == b["optimizer"]) & (g["lr"] == b["lr"]) & (g["batch_size"] == b["batch_size"])
                 & (g["epochs"] == b["epochs"])].iloc[0]  # fmt: skip
        out.append(f"- **Q4.6/4.7 search and best cell**: a full grid of {len(g)} cells ({', '.join(dict.fromkeys(g['optimizer']))}"
                   f"; lr {sorted(set(g['lr']))}; batch {sorted(set(g['batch_size']))}; epochs "
                   f"{sorted(set(g['epochs']))}), each cached as its own DVC stage. Best: {b['optimizer']}, lr "
                   f"{b['lr']:g}, batch {b['batch_size']}, {b['epochs']} epoch(s): train accuracy "
                   f"{rt.pct(best['train_accuracy'])}, validation {rt.pct(best['validation_accuracy'])}.")  # fmt: skip
    if f.metrics is not None:
        m = f.metrics
        out.append(f"- **Q5.1 test accuracy** of the best cell: {rt.pct(m['test_accuracy'])} (95% CI "
                   f"{rt.pct(m['test_accuracy_ci95'][0])} – {rt.pct(m['test_accuracy_ci95'][1])}).")  # fmt: skip
    return out


def _masked(r: ReportView) -> str:
    f = r.f
    if f.objective == "masked" and f.finetune is not None:
        s = f.finetune
        line = f"- **Q5 bidirectional pretraining.** This workspace's body is a masked LM: {rt.arms_text(f.finetune)}"
        if "pretrained_vs_scratch" in s:
            line += f"; pretrained − scratch {rt.paired_text(s['pretrained_vs_scratch'])}"
        return line + (
            ". `tinytf preset masked --export` pairs it with the committed causal run, seed by seed "
            "(reports/presets/masked/objectives.json)."
        )
    return (
        "- **Q5 bidirectional pretraining.** Our result above is for a causal LM; no masked-LM result exists "
        f"here. `{MASKED_RUN}` runs one; its export pairs it with this run on the label curve "
        "(reports/presets/masked/)."
    )


def render_readme(r: ReportView) -> str:
    lines = ["# tinytf report", "",
             "Built by `tinytf.report.build.build_report` from the pipeline's outputs (nothing is trained here); every "
             "number is read from those files, and the same inputs give the same bytes.", "",
             "## Headline", "", *_headline(r), ""]  # fmt: skip
    transfer = transfer_text(r)
    if transfer:
        lines += ["## Where pretraining helps", "", *transfer, ""]
    missing = list(dict.fromkeys(r.inputs.missing))
    if missing or r.notes:
        lines += ["## Missing inputs", ""]
        lines += [f"- {what}: `{path}` is absent (make it with `{how}`)." for what, path, how in missing]
        lines += [f"- {note}" for note in r.notes] + [""]
    lines += ["## Tables", "", "Each as markdown with a CSV twin beside it.", ""]
    lines += [f"- [{link}]({link}): {sentence}" for link, sentence in r.tables] + [""]
    lines += ["## Plots", ""] + [f"- [{link}]({link}): {sentence}" for link, sentence in r.plots]
    upstream = [rel for rel in ("reports/data.md", "reports/pretrain/samples.md", "reports/variants/variants.md",
                                "reports/finetune/curves.png", "reports/evaluate/test_report.json",
                                "reports/metrics.json", "reports/probes/probes.md",
                                "reports/complexity/complexity.md", "reports/complexity/attention_cost.png")
                if (r.root / rel).exists()]  # fmt: skip
    if upstream:
        lines += [
            "",
            "Written by the stages themselves: " + ", ".join(f"[{u}]({r.link(u)})" for u in upstream) + ".",
        ]
    lines += [
        "",
        "## Where the seed reports went wrong",
        "",
        "Where a seed and PyTorch (or our measurement) disagree, PyTorch wins.",
        "",
        *_wrong(r),
        "",
        "## Answers to the seed questions",
        "",
        *_answers(r),
    ]
    return "\n".join(lines) + "\n"
