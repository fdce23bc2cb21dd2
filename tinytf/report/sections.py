"""The report's tables and plots, section by section, from the facts (tinytf.report.read): each
section returns what it shows, in the order the README lists them, and nothing of a section
whose inputs are missing. The plots module is imported when a section draws (matplotlib is slow
to import, and the report's text tests stub it)."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.power import detectable_difference, pooled_seed_std
from tinytf.report import tables as rt
from tinytf.report.artifacts import Plot, Table
from tinytf.report.bodies import bodies_tables
from tinytf.report.champion import champion_tables
from tinytf.report.facts import UPSTREAM, Facts
from tinytf.report.grid import grid_tables
from tinytf.report.mistakes import mistakes_tables
from tinytf.report.transfer import transfer_tables


def sections(f: Facts, params) -> list[Table | Plot]:
    """Every table and plot of the report, in the README's order."""
    parts = (data, checks, pretrain, variants, finetune, transfer_tables, grid_tables, bodies_tables)
    parts += (extras, attention, mistakes_tables, champion_tables)
    return [item for part in parts for item in part(f, params)]


def data(f: Facts, params) -> list:
    if f.data is None:
        return []
    sentence = "Rows, words and label balance of every split the pipeline trained and evaluated on (from `reports/data.json`)."
    return [Table("data_card", "Data card", sentence, rt.data_card_table(f.data))]


def checks(f: Facts, params) -> list:
    out = []
    if f.parameters is not None:
        sentence = (
            f"Trainable parameters per component of our model (`params.yaml: model`, vocabulary {f.vocab:,}, "
            f"{f.classes} classes) and of the course lab's nn.TransformerEncoder model at the same vocabulary, "
            "in closed form and counted from the built module."
        )
        out.append(Table("parameters", "Parameter counts", sentence, f.parameters))
    if f.course_claims is not None:
        sentence = (
            "Every count course reports 000 (vocab 100) and 002 (vocab 50,001) state, their own expression "
            "evaluated, and PyTorch's count."
        )
        out.append(Table("seed_claims", "Course reports' parameter arithmetic", sentence, f.course_claims))
    if f.checks is not None:
        sentence = "Claims about modules and head merges, each measured on a small seeded model."
        out.append(Table("pytorch_checks", "Course report claims checked in PyTorch", sentence, f.checks))
    return out


def pretrain(f: Facts, params) -> list:
    from tinytf.report.plots import plot_pretrain_curves

    out = []
    if f.pretrain is not None:
        m = f.pretrain
        sentence = (
            f"The {f.objective} language model after {m['steps']} steps: loss and perplexity per split and per "
            "sample sentence (course report 004's baseline table)."
        )
        frame = rt.pretrain_table(m, [x.name for x in params.pretrain.samples])
        out.append(
            Table(
                "pretrain",
                "Pretraining loss and perplexity",
                sentence,
                frame,
                None,
                ("", ".3f", ",.1f", ",.1f"),
            )
        )
    if f.pretrain_curves is not None:
        sentence = "Pretraining loss: train per logged step, validation per epoch."
        out.append(Plot("pretrain_loss", sentence, plot_pretrain_curves, f.pretrain_curves))
    return out


def variants(f: Facts, params) -> list:
    cells = f.variant_cells
    if cells is None:
        return []
    sentence = (
        f"Perplexity per BPE token after {params.variants.steps} pretraining steps, mean ± std over seeds "
        f"{sorted(cells['seed'].unique().tolist())} (course report 004 §2.2). {variants_resolution(cells)}"
    )
    md = rt.variants_markdown_frame(f.variants)
    return [Table("variants", "Positional encoding × head merge", sentence, f.variants, md)]


def variants_resolution(cells: pd.DataFrame) -> str:
    """Which differences between two variants this budget can detect, from the seed spread."""
    std, df = pooled_seed_std(cells, "dev")
    if df < 1:
        return "One seed per cell: no seed spread, so no difference between cells can be called detected."
    n = int(cells.groupby(["pos_encoding", "head_merge"])["dev"].count().min())
    return (
        f"Seeds move dev perplexity by {std:.1f} (pooled std), so with {n} seeds per cell this budget "
        f"detects differences of about {detectable_difference(std, n, df):.0f} or more between two cells "
        "(two-sided t-test, α 0.05, power 0.8); closer cells are ties at this budget."
    )


def finetune(f: Facts, params) -> list:
    from tinytf.report.plots import plot_finetune_curves

    out, s = [], f.finetune
    if s is not None:
        path = f.root / UPSTREAM["finetune_summary"].path
        epochs = (
            f"at most {s.get('epochs', '?')} epoch(s), stopped {s['patience']} validation passes after the best"
            if s.get("patience")
            else f"at least {s.get('epochs', '?')} epoch(s)"
        )
        sentence = (
            f"Test accuracy of the same classifier from three starts with all labels, {epochs}, best validation "
            "epoch kept (the linear probe: a logistic regression, C chosen on validation), per seed and mean ± std."
        )
        out.append(Table("finetune", "Pretrained vs scratch vs probe", sentence, rt.finetune_table(s, path)))
        sentence = "Paired t-test over seeds of each start against scratch (same seed = same head init and batch order)."
        out.append(Table("finetune_tests", "Paired tests", sentence, rt.paired_tests_table(s, path)))
    if f.curves is not None:
        sentence = (
            "Accuracy and loss per epoch for each start with all labels (mean ± std over seeds; course report "
            "000's figure)."
        )
        out.append(Plot("finetune_curves", sentence, plot_finetune_curves, (f.curves,)))
    return out


def extras(f: Facts, params) -> list:
    out = []
    if f.probes is not None:
        sentence = (
            "Course report 004 §1: each constructed query or key, the weights it achieves, and the error "
            "against the target."
        )
        out.append(Table("probes", "Attention as selection and averaging", sentence, f.probes, None, ".3g"))
    if f.fits is not None:
        sentence = (
            "Fitted log-log exponents of attention time and memory against sequence length and width (course "
            "report 003 Q3), beside the operation-count prediction."
        )
        out.append(
            Table("complexity", "Cost of attention", sentence, rt.complexity_table(f.fits), None, ".3g")
        )
    return out


def attention(f: Facts, params) -> list:
    from tinytf.report.plots import plot_attention_maps

    if f.heads is None:
        return []
    name = f.sample[0]
    sentence = (
        f"For the '{name}' sample, the mean attention weight (over query positions 1..L-1) on the token itself, "
        "the previous token and the first token, the mean largest weight (1 = hard selection), and the weight "
        "uniform averaging over the visible keys would give each."
    )
    out: list = [Table("attention_heads", "Where each head looks", sentence, f.heads, None, ".3f")]
    weights, tokens = f.attention
    for layer, w in enumerate(weights):
        sentence = f"Pretrained model, layer {layer}: attention weights of every head on the '{name}' sample."
        out.append(Plot(f"attention_layer{layer}", sentence, plot_attention_maps, (w, tokens, layer)))
    return out
