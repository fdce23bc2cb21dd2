"""The report's tables and plots, section by section, in the order the README lists them, and
nothing of a section whose inputs are missing; their sentences are templates/captions.md.j2's. The
plots module is imported when a section draws (matplotlib is slow to import; text tests stub it)."""

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
from tinytf.report.render import caption
from tinytf.report.transfer import transfer_tables


def sections(f: Facts, params) -> list[Table | Plot]:
    """Every table and plot of the report, in the README's order."""
    parts = (data, checks, pretrain, variants, finetune, transfer_tables, history, grid_tables, bodies_tables)
    parts += (extras, attention, mistakes_tables, champion_tables)
    return [item for part in parts for item in part(f, params)]


def data(f: Facts, params) -> list:
    if f.data is None:
        return []
    return [Table("data_card", "Data card", caption("data_card"), rt.data_card_table(f.data))]


def checks(f: Facts, params) -> list:
    out = []
    if f.parameters is not None:
        sentence = caption("parameters", vocab=f.vocab, classes=f.classes)
        out.append(Table("parameters", "Parameter counts", sentence, f.parameters))
    if f.course_claims is not None:
        title = "Course reports' parameter arithmetic"
        out.append(Table("seed_claims", title, caption("seed_claims"), f.course_claims))
    if f.checks is not None:
        title = "Course report claims checked in PyTorch"
        out.append(Table("pytorch_checks", title, caption("pytorch_checks"), f.checks))
    return out


def pretrain(f: Facts, params) -> list:
    from tinytf.report.plots import plot_pretrain_curves

    out = []
    if f.pretrain is not None:
        sentence = caption("pretrain", objective=f.objective, steps=f.pretrain["steps"])
        frame = rt.pretrain_table(f.pretrain, [x.name for x in params.pretrain.samples])
        formats = ("", ".3f", ",.1f", ",.1f")
        out.append(Table("pretrain", "Pretraining loss and perplexity", sentence, frame, None, formats))
    if f.pretrain_curves is not None:
        sentence = caption("plot_pretrain_loss")
        out.append(Plot("pretrain_loss", sentence, plot_pretrain_curves, f.pretrain_curves))
    return out


def variants(f: Facts, params) -> list:
    cells = f.variant_cells
    if cells is None:
        return []
    seeds = sorted(cells["seed"].unique().tolist())
    sentence = caption("variants", steps=params.variants.steps, seeds=seeds, spread=seed_spread(cells))
    md = rt.variants_markdown_frame(f.variants)
    return [Table("variants", "Positional encoding × head merge", sentence, f.variants, md)]


def seed_spread(cells: pd.DataFrame) -> dict | None:
    """Which differences between two variants this budget can detect, from the seed spread (None
    with one seed per cell)."""
    std, df = pooled_seed_std(cells, "dev")
    if df < 1:
        return None
    n = int(cells.groupby(["pos_encoding", "head_merge"])["dev"].count().min())
    return {"std": std, "n": n, "detectable": detectable_difference(std, n, df)}


def finetune(f: Facts, params) -> list:
    from tinytf.report.plots import plot_finetune_curves

    out, s = [], f.finetune
    if s is not None:
        path = f.root / UPSTREAM["finetune_summary"].path
        sentence = caption("finetune", epochs=s.get("epochs", "?"), patience=s.get("patience"))
        out.append(Table("finetune", "Pretrained vs scratch vs probe", sentence, rt.finetune_table(s, path)))
        tests = rt.paired_tests_table(s, path)
        out.append(Table("finetune_tests", "Paired tests", caption("finetune_tests"), tests))
    if f.curves is not None:
        sentence = caption("plot_finetune_curves")
        out.append(Plot("finetune_curves", sentence, plot_finetune_curves, (f.curves,)))
    return out


def extras(f: Facts, params) -> list:
    out = []
    if f.probes is not None:
        title = "Attention as selection and averaging"
        out.append(Table("probes", title, caption("probes"), f.probes, None, ".3g"))
    if f.fits is not None:
        table = rt.complexity_table(f.fits)
        out.append(Table("complexity", "Cost of attention", caption("complexity"), table, None, ".3g"))
    return out


def history(f: Facts, params) -> list:
    if f.protocol_history is None:
        return []
    title = "Protocol revisions and what each moved"
    return [Table("protocol_history", title, caption("protocol_history"), f.protocol_history)]


def attention(f: Facts, params) -> list:
    from tinytf.report.plots import plot_attention_maps

    if f.heads is None:
        return []
    name = f.sample[0]
    sentence = caption("attention_heads", sample=name)
    out: list = [Table("attention_heads", "Where each head looks", sentence, f.heads, None, ".3f")]
    weights, tokens = f.attention
    for layer, w in enumerate(weights):
        sentence = caption("plot_attention_layer", layer=layer, sample=name)
        out.append(Plot(f"attention_layer{layer}", sentence, plot_attention_maps, (w, tokens, layer)))
    return out
