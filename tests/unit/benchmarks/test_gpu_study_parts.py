"""The GPU study's summaries: the GPU's use per stage from nvidia-smi's samples, and the verdict
on our pretrained model against TF-IDF + LR with all labels, over seeds and over test items."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from gpu_use import read_samples, summarise  # noqa: E402
from study_verdict import over_items, over_seeds, verdict  # noqa: E402


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def test_gpu_use_is_summarised_per_stage_window_and_for_the_whole_run(tmp_path):
    t0 = 1_800_000_000.0
    rows = [(0, 10, 1000), (1, 90, 5000), (2, 70, 6000), (3, 100, 7000), (4, 0, 500)]
    lines = [f"{stamp(t0 + t)}, {u}, {m}, 81559" for t, u, m in rows]
    lines += ["garbage line", f"{stamp(t0 + 2.5)}, [N/A], 10, 81559"]  # unmeasured samples are left out
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    samples = read_samples(tmp_path / "s.csv")
    assert len(samples) == 5
    summary = summarise(samples, [("pretrain", t0 + 0.5, t0 + 2.2), ("finetune", t0 + 2.9, t0 + 3.1)])
    assert summary["pretrain"] == {
        "samples": 2,
        "util_mean_pct": 80.0,
        "util_max_pct": 90.0,
        "memory_max_mib": 6000.0,
        "memory_total_mib": 81559.0,
    }
    assert summary["finetune"]["samples"] == 1 and summary["finetune"]["memory_max_mib"] == 7000.0
    assert summary["all"]["samples"] == 3 and summary["all"]["util_max_pct"] == 100.0
    assert summarise([], [("pretrain", t0, t0 + 1)]) == {}


def write_run(reports: Path, ours: list[float], tfidf: dict[str, float]) -> None:
    (reports / "finetune").mkdir(parents=True)
    (reports / "baselines").mkdir()
    rows = [
        {"start": "final", "arm": arm, "labels": labels, "seed": seed, "test_accuracy": acc, "chosen": True}
        for seed, acc in enumerate(ours, 1)
        for arm, labels in (("pretrained", "all"), ("scratch", "all"), ("pretrained", "250"))
    ]
    snapshot = {"start": "epoch1", "arm": "pretrained", "labels": "all", "seed": 1, "test_accuracy": 0.1}
    rows.append(snapshot | {"chosen": True})  # a snapshot's run: not the final start
    pd.DataFrame(rows).to_csv(reports / "finetune" / "runs.csv", index=False)
    summary = {"label_curve": {"all": {"tfidf_lr": {"by_seed": tfidf}}}}
    (reports / "baselines" / "summary.json").write_text(json.dumps(summary))


def test_over_seeds_one_tfidf_fit_stands_for_every_seed(tmp_path):
    write_run(tmp_path, [0.80, 0.82, 0.81], {"1": 0.78})
    seeds = over_seeds(tmp_path)
    assert seeds["n"] == 3 and seeds["mean_difference"] == pytest.approx(0.03)
    assert seeds["test"].startswith("one-sample t") and seeds["interval"][0] < 0.03 < seeds["interval"][1]
    items = over_items(tmp_path)
    assert items == {"missing": f"no {tmp_path / 'finetune'}/predictions.* file"}
    text = verdict(seeds, items)
    assert "+3.00 points over 3 seeds" in text[0] and text[1].startswith("Over test items: not tested")
    assert text[-1] == "verdict: our pretrained model beats TF-IDF + LR with all labels, by 3.00 points"


def test_a_gap_the_seeds_do_not_settle_is_no_difference_detected(tmp_path):
    write_run(tmp_path, [0.70, 0.90, 0.75], {"1": 0.80, "2": 0.80, "3": 0.74})
    text = verdict(over_seeds(tmp_path), over_items(tmp_path))
    assert text[-1].startswith("verdict: no difference detected") and "(+0.33 points)" in text[-1]


def test_the_item_test_pairs_each_items_accuracy_over_seeds(tmp_path):
    write_run(tmp_path, [0.80, 0.82, 0.81], {"1": 0.78})

    def row(arm, seed, item, correct):
        return {"arm": arm, "labels": "all", "seed": seed, "item": item, "correct": int(correct)}

    ours = [row("pretrained", s, i, i % 4 != 0) for s in (1, 2, 3) for i in range(200)]
    theirs = [row("tfidf_lr", 1, i, i % 2 == 0) for i in range(200)]
    pd.DataFrame(ours).to_csv(tmp_path / "finetune" / "predictions.csv", index=False)
    pd.DataFrame(theirs).to_parquet(tmp_path / "baselines" / "predictions.parquet")
    items = over_items(tmp_path)
    assert items["n"] == 200 and items["mean_difference"] == pytest.approx(0.75 - 0.5)
    assert items["p_value"] < 0.05 and items["interval"][0] < 0.25 < items["interval"][1]
    text = verdict(over_seeds(tmp_path), items)
    assert text[1].startswith("Over 200 test items (each item's accuracy over seeds): +25.00 points")
    assert text[-1].startswith("verdict: our pretrained model beats")


def test_predictions_without_the_item_columns_are_named(tmp_path):
    write_run(tmp_path, [0.80, 0.82, 0.81], {"1": 0.78})
    pd.DataFrame({"seed": [1], "prediction": [0]}).to_csv(tmp_path / "finetune" / "predictions.csv")
    pd.DataFrame({"seed": [1], "prediction": [0]}).to_csv(tmp_path / "baselines" / "predictions.csv")
    assert "lacks the columns ['arm', 'correct', 'item', 'labels']" in over_items(tmp_path)["missing"]
