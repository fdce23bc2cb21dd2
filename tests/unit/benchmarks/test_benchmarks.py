"""The benchmarks still run against the current params schema, data sources and training code.

They are scripts nobody imports, so a renamed params key or a changed helper breaks them
silently (the classifier benchmark once read `finetune.lr` after it became `finetune.lrs`).
Each runs here for one step on the tiny preset's shapes, in a folder without `data/`, so on
random ids; only that it runs, prints its headline and records the run is checked, never a
timing. Their records go to a temporary folder ($TINYTF_BENCH_RESULTS), never the repository's.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO
from tinytf.cli.presets import preset_values
from tinytf.params.schema import set_dotted


def torch_sees_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def tiny_params(tmp_path_factory) -> Path:
    """params.yaml with presets/tiny.yaml applied, as `tinytf preset tiny` applies it."""
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    for dotted, value in preset_values("tiny", REPO / "presets").items():
        set_dotted(raw, dotted, value)
    path = tmp_path_factory.mktemp("bench") / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.fixture(autouse=True)
def results(tmp_path, monkeypatch) -> Path:
    """Where this test's benchmark runs record themselves: a fresh folder, not benchmarks/results."""
    folder = tmp_path / "results"
    monkeypatch.setenv("TINYTF_BENCH_RESULTS", str(folder))
    return folder


def recorded(script: str) -> list[dict]:
    path = Path(os.environ["TINYTF_BENCH_RESULTS"]) / f"{Path(script).stem}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_benchmark(script: str, args: list[str], cwd: Path, env: dict | None = None) -> str:
    """The script's stdout, after checking it exited 0 and recorded one run with its headline."""
    before = len(recorded(script))
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # a warning in a benchmark's output is one every user who runs it reads (the peers' loops
    # once turned a grad-tracking loss into a float and warned on every run)
    assert not re.search(r"^\S+:\d+: \w*Warning: ", result.stderr, re.M), result.stderr[-3000:]
    runs = recorded(script)
    assert len(runs) == before + 1, result.stderr[-3000:]
    assert runs[-1]["headline"] == result.stdout.strip().splitlines()[-1]
    return result.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("script", ["pretrain_throughput.py", "classifier_throughput.py"])
def test_benchmark_runs_and_ends_with_its_speedup_line(script, tiny_params):
    # two workers whatever this machine's cores: the classifier benchmark's finetune-layout line
    out = run_benchmark(
        script,
        ["--params", str(tiny_params), "--steps", "1", "--rounds", "1"],
        tiny_params.parent,
        {"TINYTF_WORKERS": "2"},
    )
    last = out.splitlines()[-1]
    assert re.match(r"speedup: \d+\.\d\dx tinytf", last), last
    # the figures name what they were measured on: bf16 figures differ by CPU kind (AMX or not)
    from tinytf.system.cpu import cpu_kind

    assert f"on cpu ({cpu_kind()})" in out, out
    if script == "pretrain_throughput.py":
        assert "allocator, both sides: the C library's default" in out, out
    if script == "classifier_throughput.py":
        assert re.search(
            r"^the finetune stage's layout: 2 processes, one thread each, [\d.]+ steps/s", out, re.M
        ), out


@pytest.mark.slow
def test_pretrain_benchmark_gives_both_sides_the_stages_allocator_when_asked(tiny_params):
    # an exported TINYTF_ALLOCATOR=default must not turn the flag off
    out = run_benchmark(
        "pretrain_throughput.py",
        [
            "--params",
            str(tiny_params),
            "--steps",
            "1",
            "--rounds",
            "1",
            "--shapes",
            "default",
            "--allocator",
            "keep",
        ],
        tiny_params.parent,
        {"TINYTF_ALLOCATOR": "default"},
    )
    if platform.libc_ver()[0] != "glibc":
        assert "allocator, both sides: default (no glibc)" in out, out
        assert not out.endswith("keeping freed memory"), out
        return
    assert re.search(r"^allocator, both sides: kept \(glibc: no mmap", out, re.M), out
    assert out.splitlines()[-1].endswith(", both sides keeping freed memory"), out


@pytest.mark.slow
def test_pretrain_benchmark_times_the_nanogpt_style_peer_in_the_same_rounds(tiny_params):
    out = run_benchmark(
        "pretrain_throughput.py",
        ["--params", str(tiny_params), "--steps", "1", "--rounds", "1", "--shapes", "default", "--nanogpt"],
        tiny_params.parent,
    )
    assert re.search(
        r"^  nanoGPT-style \(device=cpu precision=\w+ compile=o\w+\) +[\d,]+ tokens/s  MFU", out, re.M
    ), out
    assert re.search(r"^  ratio tinytf / nanoGPT-style, default shape: \d+\.\d\dx$", out, re.M), out
    assert re.match(r"speedup: \d+\.\d\dx tinytf over the seed lab", out.splitlines()[-1]), out


def test_pretrain_benchmark_names_an_unknown_shape():
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "pretrain_throughput.py"), "--shapes", "default,6x38"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "unknown shape '6x38'; expected a comma list of: default, seed-lab, 6x384, gpu" in result.stderr


def test_the_gpu_shape_is_the_gpu_presets_read_from_its_file(monkeypatch):
    # written once, in presets/gpu.yaml: the benchmark's gpu shape must follow any change there
    import dataclasses

    from tinytf.params.config import load_params

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import pretrain_throughput

    preset = yaml.safe_load((REPO / "presets" / "gpu.yaml").read_text())
    model_fields, pretrain_fields = pretrain_throughput.SHAPES["gpu"]
    assert model_fields == preset["model"] and pretrain_fields == preset["pretrain"]
    assert pretrain_throughput.SHAPE_VOCAB["gpu"] == preset["tokenize"]["vocab_size"]
    assert pretrain_throughput.shape_list("default,gpu") == ["default", "gpu"]
    params = load_params(REPO / "params.yaml")  # every field is one the params dataclasses have
    model = dataclasses.replace(params.model, **model_fields)
    assert (model.d_model, model.n_layer, model.block_size) == (768, 12, 512)
    assert dataclasses.replace(params.pretrain, **pretrain_fields).batch_size == 64


@pytest.mark.slow
def test_dvc_lockfile_benchmark_reads_the_lock_with_both_parsers():
    out = run_benchmark("dvc_lockfile.py", ["--rounds", "1"], REPO)
    assert re.search(r"^  C \(ruamel.yaml.clib\) +\d+\.\d{3} s", out, re.M), out
    assert re.match(
        r"speedup: \d+\.\d\dx DVC's load of dvc.lock with ruamel.yaml's C parser", out.splitlines()[-1]
    ), out


@pytest.mark.slow
def test_stage_process_benchmark_runs_each_side_with_its_collector_setting():
    out = run_benchmark("stage_process.py", ["--rounds", "1"], REPO)
    for mode in ("default", "pause"):
        assert re.search(
            rf"^  {mode} +TINYTF_GC={mode} +imports +\d+\.\d\d s .* exit +\d+\.\d\d s", out, re.M
        ), out
    assert re.match(
        r"speedup: \d+\.\d\dx a stage process's start and end with the collector paused", out.splitlines()[-1]
    ), out


def test_dvc_reads_yaml_with_the_c_parser():
    """ruamel.yaml.clib is a dependency (pyproject.toml): DVC's safe loads then use the C parser."""
    from ruamel.yaml import YAML
    from ruamel.yaml.main import CParser

    assert CParser is not None, "ruamel.yaml.clib is not installed"
    assert YAML(typ="safe").Parser is CParser


@pytest.mark.slow
def test_attention_benchmark_times_each_case_and_ends_with_its_headline(tiny_params):
    out = run_benchmark(
        "attention_paths.py",
        ["--params", str(tiny_params), "--steps", "1", "--rounds", "1"],
        tiny_params.parent,
    )
    assert len(re.findall(r"(written out|SDPA) chosen, \d+\.\d\dx as fast as the other$", out, re.M)) == 3, (
        out
    )
    assert re.match(r"written out: \d+\.\d\dx SDPA's speed in a fine-tuning step", out.splitlines()[-1]), out


@pytest.mark.slow
def test_prepare_scale_benchmark_prints_its_headline():
    last = run_benchmark("prepare_scale.py", ["--rows", "2000"], REPO).splitlines()[-1]
    assert re.search(r"prepare: [\d,]+ rows/s, peak [\d.]+ GiB; [\d.]+x the time", last), last


def test_budget_shares_add_up_over_the_committed_run():
    out = run_benchmark("budget_shares.py", [], REPO)
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}
    assert list(rows) == ["pretrain", "finetune", "grid", "variants"], out
    assert sum(float(r[-1].rstrip("%")) for r in rows.values()) == pytest.approx(100, abs=0.3), out
    bodies = sorted((REPO / "reports" / "pretrain").glob("seed*/metrics.json"))  # one per pretrain.seeds
    tokens = sum(json.loads(b.read_text())["tokens"] for b in bodies)
    assert int(rows["pretrain"][1]) == len(bodies), out
    assert float(rows["pretrain"][2].rstrip("M")) == pytest.approx(tokens / 1e6, abs=0.005), out
    runs = len(pd.read_csv(REPO / "reports" / "finetune" / "runs.csv"))
    assert int(rows["finetune"][1]) == runs, out
    assert re.match(
        r"pretraining: [\d.]+% of the run's training and evaluation FLOPs; the largest other",
        out.splitlines()[-1],
    )


def test_a_run_appends_one_line_with_its_figures_machine_and_provenance(results):
    results.mkdir()
    (results / "budget_shares.jsonl").write_text('{"an": "earlier run"}\n')
    out = run_benchmark("budget_shares.py", ["--reports", "reports"], REPO)
    earlier, run = (json.loads(line) for line in (results / "budget_shares.jsonl").read_text().splitlines())
    assert earlier == {"an": "earlier run"}
    assert set(run) == {
        "script",
        "date",
        "headline",
        "figures",
        "machine",
        "torch",
        "python",
        "commit",
        "dirty",
        "args",
    }
    assert run["script"] == "budget_shares"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run["date"]), run["date"]
    assert run["headline"] == out.splitlines()[-1]
    share = float(re.match(r"pretraining: ([\d.]+)%", run["headline"]).group(1)) / 100
    assert run["figures"]["pretrain_share"] == pytest.approx(share, abs=0.001)
    assert set(run["figures"]) == {"pretrain_share", "pretrain", "finetune", "grid", "variants"}
    from tinytf.system.cpu import bf16_units, cpu_model

    assert run["machine"]["cpu"] == cpu_model() and run["machine"]["bf16_units"] == bf16_units()
    assert run["machine"]["cores"] >= run["machine"]["usable_cores"] >= 1 and run["machine"]["gpu"] is None
    import torch

    assert run["torch"] == torch.__version__
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    assert run["commit"] == (head.stdout.strip() if head.returncode == 0 else "unknown")
    assert run["args"] == {"params": "params.yaml", "reports": "reports"}


def test_budget_shares_without_reports_names_the_missing_file(tmp_path, results):
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "budget_shares.py"), "--reports", str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.strip()
        == f"budget_shares: {tmp_path / 'tokenize.json'}: not found; run the pipeline first (`make repro`)"
    )
    assert not results.exists()  # a run that failed records nothing


@pytest.mark.slow
def test_classifier_epoch_benchmark_times_each_epoch_from_a_fresh_model(tiny_params, tmp_path):
    from tests.helpers.lm_fixtures import make_sentiment_dir

    (tmp_path / "data").mkdir()
    make_sentiment_dir(tmp_path / "data")
    params = tmp_path / "params.yaml"
    params.write_text(tiny_params.read_text())
    out = run_benchmark("classifier_epoch.py", ["--params", str(params), "--repeats", "2"], tmp_path)
    assert re.match(r"96 train texts, batch \d+: (\d+) steps an epoch; device=cpu", out), out
    steps = re.match(r"96 train texts, batch \d+: (\d+) steps", out).group(1)
    assert (
        len(re.findall(r"^  epoch \d: [\d.]+ s, [\d.]+ ms a step with the validation pass", out, re.M)) == 2
    ), out
    assert re.match(rf"epoch: [\d.]+ s first, then [\d.]+ s, {steps} steps on cpu", out.splitlines()[-1]), out


@pytest.mark.slow
def test_finetune_breakdown_parts_add_up_to_the_run(tiny_params, tmp_path, results):
    from tests.helpers.lm_fixtures import make_sentiment_dir

    (tmp_path / "data").mkdir()
    make_sentiment_dir(tmp_path / "data")
    params = tmp_path / "params.yaml"
    params.write_text(tiny_params.read_text())
    args = ["--params", str(params), "--labels", "0", "--repeats", "1", "--tracking", "--eval-batch", "16"]
    out = run_benchmark("finetune_breakdown.py", args, tmp_path, {"TINYTF_BENCH_RESULTS": str(results)})
    assert "evaluation batch 16" in out, out
    parts = {m[0]: float(m[1]) for m in re.findall(r"^  (\w[\w-]*) +([\d.]+) s +[\d.]+ %", out, re.M)}
    assert set(parts) >= {"data", "build", "training", "validation", "test", "rows", "tracking"}, out
    assert min(parts["training"], parts["validation"], parts["test"], parts["tracking"]) > 0, out
    whole = float(re.search(r"^  whole +([\d.]+) s", out, re.M)[1])
    assert sum(parts.values()) == pytest.approx(whole, abs=0.05), out
    share = float(re.match(r"non-training share: ([\d.]+) %", out.splitlines()[-1])[1])
    assert share == pytest.approx(100 * (1 - parts["training"] / whole), abs=0.2), out
    (entry,) = recorded("finetune_breakdown")
    assert entry["figures"]["inference_batch"] == 16 and entry["figures"]["worker_startup_s"] > 0


def test_classifier_epoch_benchmark_without_tokens_names_the_missing_file(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "classifier_epoch.py"),
            "--params",
            str(REPO / "params.yaml"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "classifier_epoch: data/tokens/sentiment/labels.json: not found; run the prepare and tokenize stages first"
    )


@pytest.mark.skipif(torch_sees_cuda(), reason="this machine has CUDA: the checks would run")
def test_gpu_checks_stop_where_torch_sees_no_cuda(tmp_path):
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_checks.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path / "out")},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"gpu_checks: torch sees no CUDA device ({sys.executable}); on a CPU, run the benchmarks themselves"
    )
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_gpu_checks_name_an_unknown_check_before_anything_runs(tmp_path):
    result = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_checks.sh"), "pretrain_gpu", "pretrain_8x512"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OUT": str(tmp_path / "out")},
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "gpu_checks: no check 'pretrain_8x512'; the checks: pretrain_gpu pretrain_6x384 pretrain classifier "
        "classifier_epoch"
    )
    assert not (tmp_path / "out").exists()


def test_profile_lists_each_sides_top_operators_and_records_nothing(tiny_params, results):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "profile_step.py"),
            "--params",
            str(tiny_params),
            "--shape",
            "default",
            "--steps",
            "1",
            "--rows",
            "5",
        ],
        cwd=tiny_params.parent,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for side in ("tinytf", "nanogpt"):
        assert re.search(rf"^== {side}: [\d.]+ ms of CPU time a step", result.stdout, re.M), result.stdout
    assert "lab" not in re.findall(r"^== (\w+):", result.stdout, re.M)
    assert not results.exists()  # the throughput benchmark is the judge, not the profile
