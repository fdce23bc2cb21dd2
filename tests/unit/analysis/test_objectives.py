"""Masked vs causal pretraining on the label curve: the paired comparison and the masked preset's
export against the committed causal run."""

import hashlib
import json
import subprocess

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.report_tree import fake_report_tree
from tinytf.analysis.objectives import objective_comparison, table, verdict
from tinytf.errors import DataError, ParamsError

SEEDS = [1, 2, 3, 4, 5]
LABELS = {"250": 250, "1000": 1000, "all": 10201}


def runs(pretrained_shift: dict[str, float], seeds=SEEDS) -> pd.DataFrame:
    """A finetune runs.csv: scratch at 0.70 + seed noise, pretrained shifted per label count."""
    rows = []
    for labels, n_train in LABELS.items():
        for seed in seeds:
            noise = 0.01 * ((seed * 7) % 5 - 2)
            for start, acc in (
                ("scratch", 0.70 + noise),
                ("pretrained", 0.72 + noise + pretrained_shift[labels]),
            ):
                rows.append(
                    {
                        "snapshot": "final",
                        "tokens": 100,
                        "start": start,
                        "labels": labels,
                        "n_train": n_train,
                        "seed": seed,
                        "lr": 0.001,
                        "dropout": 0.1,
                        "validation_accuracy": acc,
                        "test_accuracy": acc,
                        "chosen": True,
                    }
                )
    return pd.DataFrame(rows)


def test_masked_minus_causal_is_paired_by_seed_and_holm_adjusted_across_label_counts():
    causal = runs({"250": 0.0, "1000": 0.0, "all": 0.0})
    masked = runs({"250": 0.0, "1000": 0.0, "all": 0.0})
    masked.loc[(masked["start"] == "pretrained") & (masked["labels"] == "all"), "test_accuracy"] += [
        0.030,
        0.034,
        0.026,
        0.031,
        0.029,
    ]
    result = objective_comparison(causal, masked)
    curve = result["label_curve"]
    assert list(curve) == ["250", "1000", "all"]
    test = curve["all"]["masked_vs_causal"]
    assert test["mean_difference"] == pytest.approx(0.030) and test["n"] == 5
    assert test["p_value"] < 0.001 and test["p_holm"] == pytest.approx(test["p_value"])  # the only t-test
    assert test["ci95"] == pytest.approx(2.776 * test["std_difference"] / 5**0.5, rel=1e-3)
    assert curve["250"]["masked_vs_causal"]["p_value"] is None  # every seed alike: no t-test
    assert curve["all"]["masked"] - curve["all"]["causal"] == pytest.approx(0.030)
    masked.loc[masked["start"] == "scratch", "test_accuracy"] -= 0.05  # each run's scratch is its own
    curve = objective_comparison(causal, masked)["label_curve"]
    assert curve["all"]["causal_scratch"] - curve["all"]["masked_scratch"] == pytest.approx(0.05)
    assert "| all (10201) | 72.0 % | 70.0 % | 75.0 % | 65.0 % | +3.0 |" in table({"label_curve": curve})
    # against its own scratch the masked start gained 3 + 5 points more than the causal one
    did = curve["all"]["did"]
    assert did["mean_difference"] == pytest.approx(0.080) and did["p_holm"] < 0.001
    assert verdict("all", curve["all"], "did").startswith(
        "all labels: (masked − its scratch) − (causal − its scratch) +8.0 ± 0.4 points (95 % CI)"
    )
    assert verdict("all", curve["all"]).startswith(
        "all labels: masked − causal +3.0 ± 0.4 points (95 % CI), p = "
    )
    assert "no difference detected" not in verdict("all", curve["all"])
    assert (
        table(result)
        .splitlines()[-1]
        .startswith("| all (10201) | 72.0 % | 70.0 % | 75.0 % | 70.0 % | +3.0 |")
    )
    # read back from objectives.json, whose writer sorts its keys as text: still smallest first
    reread = json.loads(json.dumps(result, sort_keys=True))
    assert list(reread["label_curve"]) == ["1000", "250", "all"]
    assert [line.split(" (")[0] for line in table(reread).splitlines()[2:]] == ["| 250", "| 1000", "| all"]


def test_runs_that_do_not_share_seeds_are_not_compared():
    with pytest.raises(DataError, match=r"at 250 labels the runs' seeds differ"):
        objective_comparison(
            runs(dict.fromkeys(LABELS, 0.0)), runs(dict.fromkeys(LABELS, 0.0), seeds=[1, 2, 3])
        )


def predictions(frame: pd.DataFrame, right: float, seed: int = 0) -> pd.DataFrame:
    """Every run's predictions on 40 test texts, about `right` of them correct."""
    import numpy as np

    from tinytf.data.predictions import prediction_rows

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 40)
    parts = []
    for _, run in frame.iterrows():
        keys = {k: run[k] for k in ("start", "labels", "seed", "snapshot", "lr", "dropout")}
        guess = np.where(rng.random(40) < right, labels, 1 - labels)
        parts.append(prediction_rows(keys, "test", labels, guess, np.full(40, 0.9)))
    return pd.concat(parts, ignore_index=True)


def _commit(repo, message):
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message], cwd=repo, check=True
    )


def test_the_masked_presets_export_pairs_its_run_with_the_committed_causal_run(tmp_path):
    from tinytf.cli import presets

    repo = tmp_path / "repo"
    reports = repo / "reports"
    fake_report_tree(reports)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    causal_runs = runs(dict.fromkeys(LABELS, 0.0))
    causal_runs.to_csv(reports / "finetune" / "runs.csv", index=False)
    # the causal run's predictions: in the DVC cache, as HEAD's dvc.lock names them
    cached = repo / "causal.parquet"
    predictions(causal_runs, 0.8).to_parquet(cached)
    md5 = hashlib.md5(cached.read_bytes()).hexdigest()
    (repo / ".dvc/cache/files/md5" / md5[:2]).mkdir(parents=True)
    cached.rename(repo / ".dvc/cache/files/md5" / md5[:2] / md5[2:])
    lock = {"stages": {"finetune": {"outs": [{"path": "data/predictions/finetune.parquet", "md5": md5}]}}}
    (repo / "dvc.lock").write_text(yaml.safe_dump(lock))
    (repo / ".gitignore").write_text(".dvc/cache\ndata/\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    _commit(repo, "the causal run")
    params["pretrain"]["objective"] = "masked"
    params["finetune"]["attention"] = "bidirectional"  # v3: each body fine-tuned as pretrained
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    masked_runs = runs({"250": 0.01, "1000": 0.0, "all": -0.02})
    masked_runs.to_csv(reports / "finetune" / "runs.csv", index=False)
    (repo / "data/predictions").mkdir(parents=True)
    masked_predictions = predictions(masked_runs, 0.6, seed=0)
    scratch = masked_predictions["start"] == "scratch"  # the bidirectional scratch: the causal one's texts
    masked_predictions.loc[scratch, "prediction"] = predictions(causal_runs, 0.8).loc[scratch, "prediction"]
    masked_predictions.to_parquet(repo / "data/predictions/finetune.parquet")

    out = presets.export_report("masked", repo / "params.yaml", REPO / "presets", reports)
    written = json.loads((out / "objectives.json").read_text())
    entry = written["objectives"]["label_curve"]["all"]["masked_vs_causal"]
    assert entry["mean_difference"] == pytest.approx(-0.02) and "p_value" in entry
    # the verdict's test: the same texts, 0.6 against 0.8 right, over seeds and texts at once
    boot = entry["multiboot"]
    assert boot["estimate"] == pytest.approx(-0.2, abs=0.08) and boot["ci95"][1] < 0 and boot["p_holm"] < 0.05
    # the same scratch predictions in both runs: the difference in differences is the same gap
    did = written["objectives"]["label_curve"]["all"]["did"]["multiboot"]
    assert did["estimate"] == pytest.approx(boot["estimate"]) and did["ci95"][1] < 0
    assert did["sources"] == boot["sources"] and did["p_holm"] < 0.05
    assert set(written["objectives"]["label_curve"]) == {"250", "1000", "all"}
    readme = (out / "README.md").read_text()
    assert readme == presets.preset_readme(out)  # the report's text, then the comparison
    assert (
        readme.startswith("# tinytf report\n")
        and "\n\n## Masked vs causal pretraining on the label curve\n" in readme
    )
    assert (
        "The course's claim (course report 000)" in readme
        and "- all labels: masked − causal -2.0 points, 95 % CI [" in readme
        and "- all labels: (masked − its scratch) − (causal − its scratch) -2.0 points, 95 % CI [" in readme
    )
    assert "fine-tunes every start under bidirectional attention, the default run under causal" in readme
    assert (
        "The other half of objective × attention (each body under the other's attention) was not run"
        in readme
    )
    assert "15 % of those tokens predicted" in readme
    assert (
        "| all (10201) | 72.0 % | 70.0 % | 70.0 % | 70.0 % | -2.0 |"
        in (out / "tables" / "objectives.md").read_text()
    )

    params["model"]["dropout"] = 0.3  # a second difference: the runs are not twins
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(
        ParamsError, match=r"HEAD's run is not this preset's causal twin \(differs in model.dropout\)"
    ):
        presets.export_report("masked", repo / "params.yaml", REPO / "presets", reports)
    assert (out / "objectives.json").exists()  # the failed export left the previous one whole
