"""The GPU study's summaries: the GPU's use per stage from nvidia-smi's samples, and the verdict
on our pretrained model against TF-IDF + LR with all labels, over seeds and over test items."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from gpu_use import read_samples, summarise  # noqa: E402
from study_verdict import from_summary, verdict  # noqa: E402


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


def write_run(reports: Path, test: dict, ours: float = 0.81) -> None:
    (reports / "finetune").mkdir(parents=True, exist_ok=True)
    summary = {"label_curve": {"all": {"pretrained": {"mean": ours}, "pretrained_vs_tfidf": test}}}
    (reports / "finetune" / "summary.json").write_text(json.dumps(summary))


ONE_FIT = {"mean_difference": 0.03, "n": 3, "test": "one-sample t (one side is the same for every seed)"}


def test_the_verdict_words_the_finetune_stages_own_tests(tmp_path):
    items = {"n_items": 200, "method": "paired permutation", "mean_difference": 0.025, "p_value": 0.01}
    write_run(
        tmp_path, ONE_FIT | {"p_value": 0.004, "p_holm": 0.012, "items": items | {"ci95": [0.01, 0.04]}}
    )
    seeds, over_items = from_summary(tmp_path)
    assert seeds["tfidf_lr"] == pytest.approx(0.78)
    text = verdict(seeds, over_items)
    assert "+3.00 points over 3 seeds (one-sample t" in text[0] and "Holm p = 0.012" in text[0]
    assert text[1].startswith("Over 200 test items (paired permutation): +2.50 points, p = 0.01")
    assert text[-1] == "verdict: our pretrained model beats TF-IDF + LR with all labels, by 3.00 points"


def test_a_gap_the_seeds_or_the_items_do_not_settle_is_no_difference_detected(tmp_path):
    items = {"n_items": 200, "method": "m", "mean_difference": 0.01, "p_value": 0.2, "ci95": [-0.01, 0.03]}
    write_run(tmp_path, ONE_FIT | {"p_value": 0.004, "p_holm": 0.012, "items": items})
    text = verdict(*from_summary(tmp_path))
    assert text[-1].startswith("verdict: no difference detected") and "(+3.00 points)" in text[-1]
    write_run(tmp_path, ONE_FIT | {"p_value": 0.03, "p_holm": 0.09})  # no predictions kept
    text = verdict(*from_summary(tmp_path))
    assert text[1] == "Over test items: not tested (the finetune stage kept no predictions)."
    assert text[-1].startswith("verdict: no difference detected")  # the Holm p decides, not the raw one


def test_a_run_without_the_comparison_is_named(tmp_path):
    (tmp_path / "finetune").mkdir()
    (tmp_path / "finetune" / "summary.json").write_text(json.dumps({"label_curve": {"all": {}}}))
    with pytest.raises(SystemExit, match="no all-labels pretrained_vs_tfidf test; rerun finetune"):
        from_summary(tmp_path)


def test_the_study_starts_a_stage_only_after_the_stages_whose_outputs_it_reads():
    import study_stages

    stages = list(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])
    after = stages[stages.index("tokenize") + 1 :]
    needs = study_stages.needs(REPO / "dvc.yaml", after)
    assert needs["pretrain"] == set() and needs["probes"] == set() and needs["variants"] == set()
    assert needs["finetune"] == {"pretrain", "baselines"}
    assert needs["grid_finalists"] == {"grid", "pretrain"}  # a matrix's outputs: its folder
    assert needs["evaluate"] >= {"grid", "grid_finalists", "finetune", "baselines"}
    assert needs["report"] >= {"evaluate", "variants_table", "checks", "complexity", "probes"}


def test_the_study_runs_ready_stages_side_by_side_and_stops_at_the_first_failure(tmp_path, monkeypatch):
    import study_stages

    (tmp_path / "dvc.yaml").write_text(
        yaml.safe_dump(
            {
                "stages": {
                    "a": {"cmd": "x", "outs": ["out/a"]},
                    "b": {"cmd": "x", "outs": ["out/b"]},
                    "c": {"cmd": "x", "deps": ["out/a", "out/b"], "outs": ["out/c"]},
                }
            }
        )
    )
    # each stage's "run" sleeps 0.5 s; c fails
    fake = tmp_path / "pkg" / "tinytf" / "cli"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import sys, time\ntime.sleep(0.5)\nprint('ran', sys.argv[2:])\nsys.exit(3 if sys.argv[2] == 'c' else 0)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(fake.parent.parent))
    monkeypatch.chdir(tmp_path)  # `python -m` looks in the working directory first
    out = tmp_path / "study"
    code = study_stages.main(
        [
            "--out",
            str(out),
            "--jobs",
            "2",
            "--dvc-file",
            str(tmp_path / "dvc.yaml"),
            "a",
            "b",
            "c",
            "--",
            "--set",
            "k=v",
        ]
    )
    assert code == 1
    spans = {
        line.split("\t")[0]: line.split("\t")[1:] for line in (out / "stages.tsv").read_text().splitlines()
    }
    assert float(spans["b"][0]) < float(spans["a"][1])  # a and b at once
    assert float(spans["c"][0]) >= max(float(spans["a"][1]), float(spans["b"][1]))
    assert "ran ['c', '--set', 'k=v']" in (out / "logs" / "c.log").read_text()
    assert (out / "timings.txt").read_text().splitlines()[-1].startswith("stage c: ")
    assert (out / "timings.txt").read_text().splitlines()[-1].endswith(", exit status 3")


def test_a_resumed_study_skips_the_stages_an_earlier_call_finished(tmp_path, monkeypatch):
    import study_stages

    (tmp_path / "dvc.yaml").write_text(
        yaml.safe_dump({"stages": {n: {"cmd": "x", "outs": [f"out/{n}"]} for n in ("a", "b")}})
    )
    fake = tmp_path / "pkg" / "tinytf" / "cli"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("import sys\nprint('ran', sys.argv[2])\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent.parent))
    monkeypatch.chdir(tmp_path)
    out, args = tmp_path / "study", ["--dvc-file", str(tmp_path / "dvc.yaml"), "a", "b"]
    assert study_stages.main(["--out", str(out), *args]) == 0
    assert (out / "done.txt").read_text().split() == ["a", "b"]
    (out / "done.txt").write_text("a\n")  # as if the call's limit ended it during b
    (out / "logs" / "a.log").unlink()
    assert study_stages.main(["--out", str(out), "--resume", *args]) == 0
    assert not (out / "logs" / "a.log").exists() and (out / "done.txt").read_text().split() == ["a", "b"]
    assert study_stages.main(["--out", str(out), *args]) == 0  # without --resume: everything again
    assert (out / "logs" / "a.log").exists()
