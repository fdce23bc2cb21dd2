"""The report stage's core: render reports/README.md, reports/tables/*.{md,csv} and reports/plots/*.png.

Reads only what the upstream stages wrote (no training): the data card, the tokenizer, the
pretrained model, pretraining metrics and curves, the variants cells, the fine-tuning summary and
curves, the grid cells, the evaluation, and (if present) the probes and the attention-cost fits.
A missing input is listed in the README with the command that makes it; a malformed one raises
`DataError` naming the file. Output depends only on the inputs (no timestamps), and every file is
written atomically. The stages' own files (data/reports/, DVC-cached) are published beside the
README at the same relative paths, so reports/ is the whole of what git holds of a run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.analysis.power import detectable_difference, pooled_seed_std
from tinytf.errors import DataError
from tinytf.io import staged, write_text
from tinytf.params.config import Params
from tinytf.report import tables as rt
from tinytf.report.bodies import bodies_section
from tinytf.report.champion import champion_section
from tinytf.report.derive import derive
from tinytf.report.facts import STAGE_FILES, UPSTREAM, Facts, Listing
from tinytf.report.grid import grid_section
from tinytf.report.mistakes import mistakes_section
from tinytf.report.publish import publish, published
from tinytf.report.render import render, write_view
from tinytf.report.run_card import load_records, run_card
from tinytf.report.transfer import transfer_section


class _Report:
    def __init__(self, params: Params, root: Path, out: Path):
        self.params, self.root, self.out = params, root, out
        self.inputs = rt.Inputs(root, body=self.params.pretrain.seeds[0])
        self.pending: list[tuple[Path, object, tuple]] = []  # (path, writer, args), written at the end
        self.tables: list[tuple[str, str]] = []  # (link, sentence)
        self.plots: list[tuple[str, str]] = []
        self.notes: list[str] = []  # skipped parts that are not missing files
        self.f = Facts()  # what the README quotes

    @property
    def missing(self) -> list[tuple[str, str, str]]:
        return self.inputs.missing

    @property
    def published(self) -> list[str]:
        """The stages' own files the README names, of those this run wrote (published beside it)."""
        return published(self.root)

    # ------------------------------------------------------------------------------ writing
    def table(
        self,
        name: str,
        title: str,
        sentence: str,
        frame: pd.DataFrame,
        md: pd.DataFrame | None = None,
        floatfmt: str | tuple[str, ...] = ".4g",
    ) -> None:
        shown = (frame if md is None else md).map(
            lambda v: v.replace("|", "\\|") if isinstance(v, str) else v
        )
        shown = shown.astype(object).where(shown.notna(), None)  # blank cells, not "nan"
        table = shown.to_markdown(index=False, floatfmt=floatfmt, intfmt=",", missingval="")
        text = f"# {title}\n\n{sentence}\n\n{table}\n"
        for path, content in ((f"tables/{name}.md", text), (f"tables/{name}.csv", frame.to_csv(index=False))):
            self.pending.append((self.out / path, write_text, (content,)))
        self.tables.append((f"tables/{name}.md", f"**{title}** — {sentence}"))

    def plot(self, name: str, sentence: str, draw, *args) -> None:
        self.pending.append((self.out / "plots" / f"{name}.png", lambda path, a=args: draw(*a, path), ()))
        self.plots.append((f"plots/{name}.png", sentence))

    # ----------------------------------------------------------------------------- sections
    def data(self) -> None:
        stats = self.inputs.json("data")
        if stats is None:
            return
        self.f.data = stats
        self.table(
            "data_card",
            "Data card",
            "Rows, words and label balance of every split the pipeline "
            "trained and evaluated on (from `reports/data.json`).",
            rt.data_card_table(stats),
        )
        self.f.majority_test = rt.majority_share(stats, "test")
        self.f.majority_val = rt.majority_share(stats, "validation")

    def parameters(self) -> None:
        counts = self.inputs.json("checks_counts", keys=("vocab", "classes", "ours", "lab100"))
        if counts is not None:
            vocab, classes = counts["vocab"], counts["classes"]
            self.f.counts, self.f.vocab, self.f.lab100 = counts["ours"], vocab, counts["lab100"]
            table = self.inputs.split("checks_parameters")
            if table is not None:
                self.table(
                    "parameters",
                    "Parameter counts",
                    f"Trainable parameters per component of our model "
                    f"(`params.yaml: model`, vocabulary {vocab:,}, {classes} classes) and of the course lab's "
                    "nn.TransformerEncoder model at the same vocabulary, in closed form and counted from "
                    "the built module.",
                    table,
                )
        claims = self.inputs.split("checks_seed_claims")
        if claims is not None:
            self.f.course_claims = claims
            self.table(
                "seed_claims",
                "Course reports' parameter arithmetic",
                "Every count course reports 000 (vocab 100) and 002 "
                "(vocab 50,001) state, their own expression evaluated, and PyTorch's count.",
                claims,
            )
        checks = self.inputs.split("checks_pytorch_checks")
        if checks is not None:
            self.f.checks = checks
            self.table(
                "pytorch_checks",
                "Course report claims checked in PyTorch",
                "Claims about modules and head merges, each measured on a small seeded model.",
                checks,
            )

    def pretrain(self) -> None:
        from tinytf.report.plots import plot_pretrain_curves

        m = self.inputs.json("pretrain_metrics", keys=("validation_loss", "validation_perplexity", "steps"))
        self.f.objective = self.objective()
        if m is not None:
            self.f.pretrain = m
            self.f.pretrain_bodies = self.bodies_perplexity()
            self.table(
                "pretrain",
                "Pretraining loss and perplexity",
                f"The {self.f.objective} language model "
                f"after {m['steps']} steps: loss and perplexity per split and per sample sentence "
                "(course report 004's baseline table).",
                rt.pretrain_table(m, [x.name for x in self.params.pretrain.samples]),
                floatfmt=("", ".3f", ",.1f", ",.1f"),
            )
        steps = self.inputs.csv("pretrain_steps", ("step", "train_loss"))
        epochs = self.inputs.csv("pretrain_epochs", ("step", "validation_loss"))
        if steps is not None and epochs is not None:
            self.plot(
                "pretrain_loss",
                "Pretraining loss: train per logged step, validation per epoch.",
                plot_pretrain_curves,
                steps,
                epochs,
            )

    def bodies_perplexity(self) -> dict[str, float]:
        """Every pretraining run's validation perplexity, by its seed (those written so far)."""
        out = {}
        for seed in self.params.pretrain.seeds:
            path = self.root / UPSTREAM["pretrain_metrics"].path.format(seed=seed)
            if path.exists():
                out[str(seed)] = json.loads(path.read_text(encoding="utf-8"))["validation_perplexity"]
        return out

    def objective(self) -> str:
        meta = self.inputs.path("models_pretrained")
        if meta.exists():
            try:
                return "causal" if json.loads(meta.read_text())["model"]["causal"] else "masked"
            except (json.JSONDecodeError, KeyError, TypeError):
                raise DataError(
                    f"{meta}: not a model config (expected {{'model': {{'causal': ...}}}})"
                ) from None
        return self.params.pretrain.objective

    def variants(self) -> None:
        cells = self.inputs.csv("variants_cells", rt.ID_COLUMNS + ("train", "dev"))
        if cells is None:
            return
        first = [
            *rt.ID_COLUMNS,
            "train",
            "dev",
            *(x.name for x in self.params.pretrain.samples if x.name in cells),
        ]
        cells = cells[
            first + [c for c in cells.columns if c not in first]
        ]  # course report 004's column order
        stats = rt.variants_stats(cells)
        self.f.variants = stats
        self.f.variants_summary = self.inputs.json(
            "variants_summary", ("detectable_difference_pct", "verdicts")
        )
        self.table(
            "variants",
            "Positional encoding × head merge",
            f"Perplexity per BPE token after "
            f"{self.params.variants.steps} pretraining steps, mean ± std over seeds "
            f"{sorted(cells['seed'].unique().tolist())} (course report 004 §2.2). {variants_resolution(cells)}",
            stats,
            rt.variants_markdown_frame(stats),
        )

    def finetune(self) -> None:
        from tinytf.report.plots import plot_finetune_curves

        s = self.inputs.json("finetune_summary", keys=("starts",))
        if s is not None:
            starts = self.params.finetune.starts
            order = [a for a in starts if a in s["starts"]] + sorted(set(s["starts"]) - set(starts))
            s = {
                **s,
                "starts": {start: s["starts"][start] for start in order},
            }  # params order, not the file's sorted keys
            self.f.finetune = s
            path = self.root / UPSTREAM["finetune_summary"].path
            self.table(
                "finetune",
                "Pretrained vs scratch vs probe",
                "Test accuracy of the same classifier from "
                "three starts with all labels, "
                + (
                    f"at most {s.get('epochs', '?')} epoch(s), stopped {s['patience']} validation passes "
                    "after the best"
                    if s.get("patience")
                    else f"at least {s.get('epochs', '?')} epoch(s)"
                )
                + ", best validation epoch kept (the linear probe: a logistic regression, C chosen on validation), per seed "
                "and mean ± std.",
                rt.finetune_table(s, path),
            )
            self.table(
                "finetune_tests",
                "Paired tests",
                "Paired t-test over seeds of each start against "
                "scratch (same seed = same head init and batch order).",
                rt.paired_tests_table(s, path),
            )
        curves = self.inputs.csv(
            "finetune_curves",
            (
                "start",
                "seed",
                "epoch",
                "train_accuracy",
                "validation_accuracy",
                "train_loss",
                "validation_loss",
            ),
        )
        if curves is not None:
            self.f.curves = curves
            self.plot(
                "finetune_curves",
                "Accuracy and loss per epoch for each start with all labels (mean ± std "
                "over seeds; course report 000's figure).",
                plot_finetune_curves,
                curves,
            )
        transfer_section(self)

    def grid(self) -> None:
        grid_section(self)

    def bodies(self) -> None:
        bodies_section(self)

    def run_card(self) -> None:
        folder = self.inputs.exists("runs")
        if folder is not None:
            found = {
                s: self.inputs.json(f"{s}_{n}") for s, n in (("pretrain", "metrics"), ("finetune", "summary"))
            }
            precision = {s: d["precision"] for s, d in found.items() if d and d.get("precision")}
            self.f.run_card = run_card(load_records(folder), precision)

    def mistakes(self) -> None:
        mistakes_section(self)
        champion_section(self)

    def extras(self) -> None:
        probes = self.inputs.csv("probes_probes", ("exercise", "weight_err", "pass"))
        if probes is not None:
            self.f.probes = probes
            self.table(
                "probes",
                "Attention as selection and averaging",
                "Course report 004 §1: each constructed query or "
                "key, the weights it achieves, and the error against the target.",
                probes,
                floatfmt=".3g",
            )
        fits = self.inputs.csv("complexity_fits", ("kind", "variable", "time_exponent"))
        if fits is not None:
            self.f.fits = fits
            self.table(
                "complexity",
                "Cost of attention",
                "Fitted log-log exponents of attention time and memory "
                "against sequence length and width (course report 003 Q3), beside the operation-count "
                "prediction.",
                rt.complexity_table(fits),
                floatfmt=".3g",
            )

    def dvc_views(self) -> None:
        """reports/headline.json (the declared metrics) and reports/dvc/*.csv (plot data): see dvc_views."""
        from tinytf.io import write_json
        from tinytf.report import dvc_views as dv

        self.pending.append((self.out / "headline.json", write_json, (dv.headline(self.f),)))
        views = {}
        if self.f.curves is not None:
            views.update(
                {f"finetune_{start}": frame for start, frame in dv.start_curves(self.f.curves).items()}
            )
        if self.f.label_curve is not None:
            views["label_curve"] = dv.label_curve_points(self.f.label_curve)
        if self.f.test_report is not None:
            views["confusion"] = dv.confusion_rows(self.f.test_report)
        if self.f.grid is not None:
            views["grid"] = dv.grid_points(self.f.grid)
        for name, frame in views.items():
            self.pending.append((self.out / "dvc" / f"{name}.csv", write_text, (frame.to_csv(index=False),)))

    def attention(self) -> None:
        from tinytf.report.plots import plot_attention_maps

        att = self.inputs.json("checks_attention")
        if att is None:
            return
        if att.get("skipped"):
            self.notes.append(f"Attention maps skipped: {att['skipped']}.")
            return
        rt.require(
            att,
            self.root / UPSTREAM["checks_attention"].path,
            "sample",
            "text",
            "tokens",
            "weights",
            "causal",
        )
        name = att["sample"]
        weights = [np.asarray(w, dtype=np.float32) for w in att["weights"]]  # (H, L, L) per layer
        heads = rt.attention_head_table(weights, att["causal"])
        self.f.heads, self.f.sample = heads, (name, att["text"])
        self.table(
            "attention_heads",
            "Where each head looks",
            f"For the '{name}' sample, the mean attention "
            "weight (over query positions 1..L-1) on the token itself, the previous token and the first "
            "token, the mean largest weight (1 = hard selection), and the weight uniform averaging over the "
            "visible keys would give each.",
            heads,
            floatfmt=".3f",
        )
        for layer, w in enumerate(weights):
            self.plot(
                f"attention_layer{layer}",
                f"Pretrained model, layer {layer}: attention weights of every head on the '{name}' sample.",
                plot_attention_maps,
                w,
                att["tokens"],
                layer,
            )


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


def build_report(params: Params, root: str | Path = ".", out_dir: str | Path = "reports") -> list[Path]:
    """Write the README, tables and plots under `out_dir` (relative to `root`); returns the paths written."""
    root = Path(root)
    out = Path(out_dir) if Path(out_dir).is_absolute() else root / out_dir
    report = _Report(params, root, out)
    # read and check every input first: a malformed file stops the build before anything is written
    for section in (
        report.data,
        report.parameters,
        report.pretrain,
        report.variants,
        report.finetune,
        report.grid,
        report.bodies,
        report.extras,
        report.attention,
        report.mistakes,
        report.run_card,
        report.dvc_views,
    ):
        section()
    listing = Listing(report.missing, report.notes, report.tables, report.plots, report.published)
    # the README is rendered from what readme.json holds (plain JSON), so a committed README can be
    # checked against its view (tests/contract/test_committed_reports.py)
    view = json.loads(json.dumps(derive(report.f, params, listing)))
    report.pending.append((out / "README.md", write_text, (render(view),)))
    report.pending.append((out / "readme.json", write_view, (view,)))
    # written beside `out`, then put in place together (tinytf.io.staged): a failure leaves the last
    # report whole; tables/, plots/ and dvc/ are replaced whole, so no file of an earlier build stays
    with staged([out], "report") as staging:
        for folder in ("tables", "plots", "dvc"):
            (staging[out] / folder).mkdir()
        for path, writer, args in report.pending:
            writer(staging[out] / path.relative_to(out), *args)
        publish(root / STAGE_FILES, staging[out])
    return [path for path, _, _ in report.pending]
