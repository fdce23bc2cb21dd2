"""The tiny preset's pipeline, end to end, in a temporary copy of the repository: every output
written, a second `dvc repro` that runs nothing, and `dvc status` that sees every module a stage reaches."""

from __future__ import annotations

import pytest

from tests.helpers.repo import dvc
from tests.helpers.tiny_run import DVC_STAGES

pytestmark = pytest.mark.slow


def test_the_tiny_preset_runs_as_a_dvc_experiment_and_writes_every_output(workspace):
    import json

    changed = json.loads(dvc(workspace, "params", "diff", "--json").stdout)["params.yaml"]
    assert changed["model.d_model"]["new"] == 32 and changed["model.d_model"]["old"] == 128, changed
    assert "prepare.sentiment.source" not in changed  # and nothing else

    import numpy as np
    import pandas as pd

    for split in ("train", "validation", "test"):
        corpus = pd.read_parquet(workspace / f"data/prepared/corpus/{split}.parquet")
        # train also holds the in-domain text (2 copies of the sentiment train texts and plot rows)
        assert list(corpus.columns) == ["text"] and 0 < len(corpus) <= (
            2000 if split != "train" else 2000 + 2 * 2400
        )
        sentiment = pd.read_parquet(workspace / f"data/prepared/sentiment/{split}.parquet")
        assert set(sentiment["label"]) <= {0, 1}
        ids = np.load(workspace / f"data/tokens/corpus/{split}.npy")
        assert ids.dtype == np.uint16 and ids.max() < 400
    assert (workspace / "data/tokenizer.json").exists()
    assert "## sentiment: `rt_critic_snippets`" in (workspace / "reports/data.md").read_text()
    assert (workspace / "dvc.lock").exists()
    import json

    metrics = json.loads((workspace / "reports/pretrain/seed1/metrics.json").read_text())
    assert metrics["steps"] == 8 and metrics["validation_perplexity"] > 1
    assert set(metrics["samples"]) == {"normal", "weird", "long"}
    assert (workspace / "data/models/pretrained/seed1.pt").exists()
    epochs = pd.read_csv(workspace / "reports/pretrain/seed1/epochs.csv")
    assert epochs["epoch"].tolist() == [1, 2]
    table = (workspace / "reports/variants/variants.md").read_text()
    assert "| learned" in table and "concat" in table and " ± " in table
    summary = json.loads((workspace / "reports/finetune/summary.json").read_text())
    test_texts = len(pd.read_parquet(workspace / "data/prepared/sentiment/test.parquet"))
    assert set(summary["starts"]) == {"pretrained", "scratch", "probe"}
    assert set(summary["label_curve"]) == {"60", "all"}
    for entry in summary["label_curve"].values():  # the protocol: every label count runs every seed
        assert len(entry["pretrained"]["by_seed"]) == len(entry["scratch"]["by_seed"]) == 2
        assert entry["pretrained"]["n"] == entry["scratch"]["n"] == 2
        test = entry["pretrained_vs_scratch"]  # a tiny test set can give every seed the same difference
        assert test["p_holm"] is None if test["p_value"] is None else test["p_holm"] >= test["p_value"]
        # every start against scratch and against TF-IDF + LR, Holm within each; over texts too
        assert {"pretrained_vs_tfidf", "scratch_vs_tfidf", "probe_vs_tfidf"} <= set(entry)
        items = test["items"]
        assert 0 <= items["p_value"] <= 1 and items["n_items"] == test_texts and items["method"]
        assert "items" in entry["pretrained_vs_tfidf"]
    # the seed is the trend's unit: one slope per seed
    assert summary["trend"]["n"] == 2 and summary["trend"]["unit"] == "seed"
    assert len(summary["trend"]["ci95"]) == 2 and len(summary["trend"]["slopes_by_seed"]) == 2
    runs = pd.read_csv(workspace / "reports/finetune/runs.csv")
    predictions = pd.read_parquet(workspace / "data/predictions/finetune.parquet")
    texts = {
        s: len(pd.read_parquet(workspace / f"data/prepared/sentiment/{s}.parquet"))
        for s in ("validation", "test")
    }
    assert len(predictions) == len(runs) * (texts["validation"] + texts["test"])  # one row per (run, text)
    baselines = pd.read_parquet(workspace / "data/predictions/baselines.parquet")
    assert set(baselines["start"]) == {"tfidf_lr"} and set(baselines["split"]) == {"validation", "test"}
    champion = pd.read_parquet(workspace / "data/predictions/evaluate.parquet")
    assert len(champion) == texts["test"]
    assert [p["snapshot"] for p in summary["snapshot_curve"]] == ["scratch", "epoch1", "final"]
    assert summary["snapshot_curve"][1]["n"] == 2  # the same seeds as every other point
    # presets/tiny.yaml searches once, at 60 labels; the linear probe chooses its C in every run
    assert list(summary["recipes"]) == ["60"] and set(summary["recipes"]["60"]) == {"pretrained", "scratch"}
    assert {(r["lr"], r["dropout"]) for r in summary["recipes"]["60"].values()} <= {
        (lr, 0.1) for lr in (0.001, 0.003)
    }
    probes = pd.read_csv(workspace / "reports/finetune/runs.csv").query("start == 'probe'")
    assert len(probes) == 2 * 2 and probes["probe_c"].isin([0.1, 1]).all()  # presets/tiny.yaml: probe_cs
    assert (workspace / "data/models/snapshots/seed1/epoch1.pt").exists()
    assert (workspace / "reports/plots/finetune_curves.png").stat().st_size > 10_000
    final = json.loads((workspace / "reports/metrics.json").read_text())
    assert 0 <= final["test_accuracy"] <= 1
    assert final["best"]["optimizer"] in {"AdamW", "SGD"}
    assert set(final["pretrained_vs_scratch"]) >= {"pretrained", "scratch"}
    assert 0.3 < final["baselines"]["majority"]["test_accuracy"] < 0.7
    point = final["label_curve"]["60"]
    assert set(point) == {
        "pretrained",
        "scratch",
        "probe",
        "tfidf_lr",
        "pretrained_vs_scratch",
        "pretrained_vs_tfidf",
    }
    assert {"p_value", "p_holm", "verdict"} <= set(point["pretrained_vs_tfidf"])
    readme = (workspace / "reports/README.md").read_text()
    assert f"Test accuracy {final['test_accuracy']:.1%}" in readme
    assert "- all labels, against TF-IDF + logistic regression (" in readme
    assert "- Pretrained − TF-IDF + LR, all labels: " in readme  # one fit: a one-sample test, not paired
    for table in ("disagreements", "champion_mistakes"):
        assert f"tables/{table}.md" in readme and (workspace / f"reports/tables/{table}.md").exists()
    headline = json.loads((workspace / "reports/headline.json").read_text())
    for key in ("pretrained_minus_scratch", "pretrained_minus_tfidf"):  # one block per comparison
        block = headline[key]
        assert set(block) == {"estimate", "ci95_low", "ci95_high", "p_value", "p_holm", "sources", "verdict"}
        assert block["sources"].startswith("pretraining run, seed")  # the multi-bootstrap decides
        assert block["ci95_low"] <= block["ci95_high"]
    every = final["label_curve"]["all"]
    for key in ("pretrained_vs_scratch", "pretrained_vs_tfidf"):  # diagnostics named for what they fix
        assert {"seeds_only", "texts_only"} <= set(every[key]) and every[key]["sources"]
    assert "## Where pretraining helps" in readme
    # the run card opens the report, from every stage's record (a matrix's cells summed)
    records = sorted(p.stem for p in (workspace / "data/runs").glob("*.json"))
    assert {"prepare", "pretrain-seed1", "pretrain-seed2", "finetune", "evaluate"} <= set(records)
    assert sum(r.startswith("grid-") for r in records) == 2  # presets/tiny.yaml: 2 cells
    card = readme[readme.index("## Run card") : readme.index("## Headline")]
    assert (
        "- Wall time per stage, in the order they finished: check_params " in card
        and "grid (2 cells)" in card
    )
    assert "The served model (" in readme  # beside the best start and TF-IDF, paired per text
    # every candidate of every trained start: 2 lrs x 1 dropout
    searched = pd.read_csv(workspace / "reports/tables/recipes.csv")
    assert len(searched) == 4 and searched["chosen"].sum() == 2
    # presets/tiny.yaml: search_seeds 2 of the 2 seeds at 60 labels, halved: both on seed 1, 1 on seed 2
    assert sorted(searched["seeds"]) == [1, 1, 2, 2]
    assert (searched.loc[searched["chosen"], "seeds"] == 2).all()
    assert readme.index("- Protocol (params.yaml") < readme.index("- 60 labels: ")
    assert "- Trend: " in readme
    assert readme.index("- 60 labels: ") < readme.index("- all labels:")
    for png in (
        "pretrain_loss",
        "finetune_curves",
        "grid_heatmaps",
        "optimizer_curves",
        "attention_layer0",
        "label_curve",
        "snapshot_curve",
    ):
        assert (workspace / f"reports/plots/{png}.png").stat().st_size > 5_000, png
    assert "Missing inputs" not in readme, readme[:2000]


def test_second_repro_does_nothing(workspace):
    out = dvc(workspace, "repro").stdout
    for stage in DVC_STAGES:
        assert f"Stage '{stage}' didn't change, skipping" in out
    assert "Running stage" not in out


# one module each stage's code reaches (the first five are the examples of edits that
# `dvc status` used to miss); editing it must make `dvc status` list that stage
EDITS = {
    "prepare": "tinytf/data/readers.py",
    "tokenize": "tinytf/data/tokenizer.py",
    "pretrain": "tinytf/data/batching.py",
    "variants": "tinytf/train/runtime.py",
    "variants_table": "tinytf/analysis/variants.py",
    "finetune": "tinytf/train/finetune.py",
    "baselines": "tinytf/analysis/baselines.py",
    "grid": "tinytf/train/classify.py",
    "grid_finalists": "tinytf/train/grid.py",
    "evaluate": "tinytf/analysis/evaluation.py",
    "probes": "tinytf/course/attention_probes.py",
    "complexity": "tinytf/course/complexity.py",
    "checks": "tinytf/course/checks.py",
    "report": "tinytf/report/derive.py",
}


@pytest.mark.parametrize("stage", sorted(EDITS))
def test_editing_a_module_a_stage_reaches_makes_dvc_status_list_it(workspace, stage):
    module = workspace / EDITS[stage]
    original = module.read_text()
    module.write_text(original + "\n# an edit\n")
    try:
        out = dvc(workspace, "status").stdout
    finally:
        module.write_text(original)
    listed = [line.rstrip(":") for line in out.splitlines() if line and not line[0].isspace()]
    assert stage in {name.split("@")[0] for name in listed}, out
    assert f"modified:           {EDITS[stage]}" in out or EDITS[stage] in out
    assert "Data and pipelines are up to date" in dvc(workspace, "status").stdout
