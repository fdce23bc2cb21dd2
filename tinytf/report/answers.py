"""The report's answers to the course's questions, one function per group of questions, each
sentence built from the measured numbers in the report's typed `Facts`."""

from __future__ import annotations

from tinytf.report import tables as rt
from tinytf.report.facts import ReportView

MASKED_RUN = "tinytf preset masked"


def answers(r: ReportView) -> list[str]:
    """The course's questions, course report by course report, each answered from the facts."""
    return [
        "### Course reports 000 and 002 (the lab, Q1–Q5)",
        "",
        *_lab_model(r),
        *_lab_transfer(r),
        "",
        "### Course report 003 (discussion questions)",
        "",
        *_discussion(r),
        "",
        "### Course report 004 (attention, mini transformer, fine-tuning)",
        "",
        *_attention_and_data(r),
        *_fine_tuning(r),
    ]


def _lab_model(r: ReportView) -> list[str]:
    """Q1–Q3: the mask and positions, the head, the parameter counts."""
    f, p = r.f, r.params
    c, lab, stats = f.counts, f.lab100, f.variants
    out = []
    if f.checks is None or c is None or lab is None:
        out.append("- **Q1–Q3** are answered from the checks stage's tables: run `dvc repro checks`.")
    else:
        free = f.checks.iloc[0]["measured"]
        pos = (
            f" Ours, dev perplexity with concat heads: {rt.variants_text(stats, ('concat',))}."
            if stats is not None
            else ""
        )
        out.append(
            f"- **Q1 mask, positional encoding.** The square mask sets attention to later positions to −∞ so a "
            f"token is predicted from earlier ones only (nn.TransformerEncoder, last token changed, max |Δ| at "
            f"earlier positions: {free}). Attention is permutation-equivariant, so "
            f"position must be added to the embedding: a fixed sinusoidal table or a learned one "
            f"({p.model.block_size * p.model.d_model:,} parameters).{pos}"
        )
        tied = "; tied to the embedding, so only its bias is new" if p.model.tie_weights else ""
        out.append(
            f"- **Q2 the head.** The body is kept and the head swapped: the LM head predicts one of "
            f"{f.vocab:,} tokens at every position ({c['lm_head']:,} parameters{tied}); the classifier maps "
            f"the pooled (`{p.model.pooling}`) token to the classes ({c['cls_head']:,} parameters)."
        )
        out.append(
            f"- **Q3 parameters.** The course lab at vocabulary 100: body {lab['base']:,}, with classifier "
            f"{lab['base+cls_head']:,}, with LM head {lab['base+lm_head']:,}; ours: body {c['base']:,}, with "
            f"classifier {c['base+cls_head']:,} ([tables/parameters.md](tables/parameters.md))."
        )
    return out


def _lab_transfer(r: ReportView) -> list[str]:
    """Q4 and Q5: pretrained against scratch, and the masked-LM run."""
    f = r.f
    first = rt.first_epoch(f.curves)
    out = []
    if f.finetune is not None:
        line = f"- **Q4 pretrained vs scratch.** Test accuracy: {rt.starts_text(f.finetune)} (course report 000: 80% vs 75%)."
        if "pretrained_vs_scratch" in f.finetune:
            line += f" Paired pretrained − scratch: {rt.paired_text(f.finetune['pretrained_vs_scratch'])}."
        if first is not None and {"pretrained", "scratch"} <= set(first.index):
            d = first.loc["pretrained"] - first.loc["scratch"]
            line += (
                f" After the first epoch, pretrained − scratch is {rt.pp(d['train_accuracy'])} in train and "
                f"{rt.pp(d['validation_accuracy'])} in validation accuracy (course report 000: '25% higher')."
            )
        out.append(line)
    else:
        out.append("- **Q4 pretrained vs scratch.** Not run: `dvc repro finetune`.")
    out.append(_masked(r))
    return out


def _discussion(r: ReportView) -> list[str]:
    """Course report 003: positions, heads, complexity, encoder against decoder, pretrained LMs."""
    f = r.f
    out = []
    out.append(
        "- **Positional encoding**: see Q1 above; `model.pos_encoding: none` (add it to "
        "`variants.pos_encodings`) measures what dropping it costs."
    )
    heads = f.heads
    if heads is not None:

        def top(col: str) -> str:
            h = heads.loc[heads[col].idxmax()]
            where = "itself" if col == "self" else f"the {col}"
            return (
                f"layer {int(h['layer'])} head {int(h['head'])} puts {rt.pct(h[col])} on {where} "
                f"(uniform: {rt.pct(h['uniform'])})"
            )

        out.append(
            "- **Multi-head attention** lets heads specialise; on the '"
            + f.sample[0]
            + "' sample: "
            + "; ".join(top(col) for col in ("previous token", "first token", "self"))
            + " ([tables/"
            "attention_heads.md](tables/attention_heads.md), plots `attention_layer*.png`)."
        )
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
    out.append(
        "- **Complexity** with hidden size k: encoder self-attention O(M²k), decoder-encoder O(NMk), decoder "
        "self-attention O(N²k), plus O((M+N)k²) for the projections." + measured
    )
    out.append(
        "- **Encoder vs decoder**: encoder activations do not depend on the decoder; the source is encoded "
        "once (O(M²k)), and translating into another language re-runs only the decoder (O(N²k + NMk))."
    )
    frozen = ""
    if f.finetune is not None and "probe" in f.finetune["starts"]:
        frozen = (
            f" The probe start (a logistic regression on the fixed body's layers): "
            f"{rt.pct(f.finetune['starts']['probe']['test_accuracy_mean'])}"
            " test accuracy, what the pretrained features carry on their own."
        )
    out.append(
        "- **Pretrained LMs**: GPT-style (causal, ours by default) can generate but each position sees only "
        "its left context, which is why the classifier pools the whole text (or its last token), never the first; BERT-style (masked) sees both sides but does "
        "not generate; T5 (encoder-decoder, text-to-text) covers both at twice the machinery." + frozen
    )
    return out


def _attention_and_data(r: ReportView) -> list[str]:
    """Course report 004 §1–§2 and Q1–Q2: the probes, the LM baseline, the dataset, a batch's shapes."""
    f, p = r.f, r.params
    stats = f.variants
    out = []
    if f.probes is not None:
        out.append(
            f"- **§1 selection and averaging**: {int(f.probes['pass'].sum())}/{len(f.probes)} "
            "constructions pass ([tables/probes.md](tables/probes.md))."
        )
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
            + " perplexity per token ([tables/pretrain.md](tables/pretrain.md)); course report 004's numbers are per "
            "GPT-2 token on another corpus, not comparable."
            + (" Variants: [tables/variants.md](tables/variants.md)." if stats is not None else "")
        )
    data = (f.data or {}).get("sentiment")
    if data:
        rows = {s: v["rows"] for s, v in rt.ordered_splits(data["splits"]).items()}
        sst = (
            " — SST-2's 6920/872/1821, as in the seed"
            if data["source"] == "sst2" and list(rows.values()) == [6920, 872, 1821]
            else "; the course report's 6920/872/1821 is SST-2: `dvc exp run -S prepare.sentiment.source=sst2`"
        )
        out.append(
            f"- **Q2.1 dataset sizes** ({data['source']}): "
            + ", ".join(f"{s} {n:,}" for s, n in rows.items())
            + sst
            + "."
        )
    out.append(
        f"- **Q1.x / Q2.3 padding, truncation, shapes**: a batch is input_ids and attention_mask, int64 (B, L) "
        f"with B = batch size and L the longest text in the batch, at most `tokenize.max_length` = "
        f"{p.tokenize.max_length} (longer texts truncated), and labels (B,)."
    )
    if f.external:
        out.append(
            f"- **Q1.1–Q1.2 for the external encoder** (`{f.external['source']}`): its own tokenizer adds its "
            f"special tokens ([CLS] … [SEP] for BERT), truncates each text to {f.external['max_length']} tokens "
            "*including* them (`truncation=True, max_length`), and a batch is padded with its pad id to "
            "its longest text under an attention mask of 1s and 0s (PyTorch int64 tensors). The course report's "
            "`padding='max_length'` with 512 pads every sentence to 512 tokens, nearly all of them padding: "
            "the same predictions (masked) for many times the work."
        )
    return out


def _fine_tuning(r: ReportView) -> list[str]:
    """Course report 004 Q4–Q5: the curves, the optimizer grid, the best cell's test accuracy."""
    f = r.f
    first = rt.first_epoch(f.curves)
    out = []
    if first is not None and "pretrained" in first.index:
        cur = f.curves
        curve = (
            cur[cur["start"] == "pretrained"]
            .groupby("epoch")[["train_accuracy", "validation_accuracy"]]
            .mean()
        )
        out.append(
            f"- **Q4.2 curves** (pretrained start, mean over seeds): best train accuracy at epoch "
            f"{curve['train_accuracy'].idxmax()}, best validation accuracy at epoch "
            f"{curve['validation_accuracy'].idxmax()} of {curve.index.max()}."
        )
    if f.grid is not None:
        g, b = f.grid, f.best
        per_opt = g.groupby("optimizer", sort=False)["validation_accuracy"].max()
        out.append(
            "- **Q4.5 optimizers** (best validation accuracy over the grid): "
            + ", ".join(f"{o} {rt.pct(a)}" for o, a in per_opt.items())
            + "; curves in `optimizer_curves.png`."
        )
        best = g[
            (g["optimizer"] == b["optimizer"])
            & (g["lr"] == b["lr"])
            & (g["batch_size"] == b["batch_size"])
            & (g["epochs"] == b["epochs"])
        ].iloc[0]
        out.append(
            f"- **Q4.6/4.7 search and best cell**: a full grid of {len(g)} cells ({', '.join(dict.fromkeys(g['optimizer']))}"
            f"; lr {sorted(set(g['lr']))}; batch {sorted(set(g['batch_size']))}; epochs "
            f"{sorted(set(g['epochs']))}), each cached as its own DVC stage. Best: {b['optimizer']}, lr "
            f"{b['lr']:g}, batch {b['batch_size']}, {b['epochs']} epoch(s): train accuracy "
            f"{rt.pct(best['train_accuracy'])}, validation {rt.pct(best['validation_accuracy'])}."
        )
    if f.metrics is not None:
        m = f.metrics
        out.append(
            f"- **Q5.1 test accuracy** of the best cell: {rt.pct(m['test_accuracy'])} (95% CI "
            f"{rt.pct(m['test_accuracy_ci95'][0])} – {rt.pct(m['test_accuracy_ci95'][1])})."
        )
    return out


def _masked(r: ReportView) -> str:
    f = r.f
    if f.objective == "masked" and f.finetune is not None:
        s = f.finetune
        line = f"- **Q5 bidirectional pretraining.** This workspace's body is a masked LM: {rt.starts_text(f.finetune)}"
        if "pretrained_vs_scratch" in s:
            line += f"; pretrained − scratch {rt.paired_text(s['pretrained_vs_scratch'])}"
        return line + (
            ". `tinytf preset masked --export` pairs it with the committed causal run, seed by seed "
            "(reports/presets/masked/objectives.json)."
        )
    return (
        "- **Q5 bidirectional pretraining.** This run's body is a causal LM. The masked objective is the "
        f"masked preset's (`{MASKED_RUN}`): its export pairs a masked body with the committed causal run "
        "on the label curve, seed by seed, in reports/presets/masked/ (README.md and objectives.json)."
    )
