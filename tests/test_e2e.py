"""The real pipeline, end to end, on the tiny preset in a temporary copy of the repository."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.slow
# stage -> MLflow runs it makes on the tiny preset (variants: 1 pos x 2 merges x 2 seeds)
# grid: AdamW and SGD at one lr / batch size / epochs; finetune: 1 stage run + one nested run per
# row of runs.csv (every run of the study: 27 curve, 12 more recipe-search, 3 snapshot runs);
# baselines: 1 + one per fit (3 seeds at 60 and 120 labels, one fit for all labels)
RUNS = {
    "prepare": 1,
    "tokenize": 1,
    "pretrain": 1,
    "variants": 4,
    "variants (parent)": 1,
    "variants_table": 1,
    "finetune": 1 + 42,
    "baselines": 1 + 7,
    "grid": 2,
    "grid (parent)": 1,
    "evaluate": 1,
    "probes": 1,
    "complexity": 1,
    "checks": 1,
    "report": 1,
}
DVC_STAGES = (
    [
        "prepare",
        "tokenize",
        "pretrain",
        "variants_table",
        "finetune",
        "baselines",
        "evaluate",
        "probes",
        "complexity",
        "checks",
        "report",
    ]
    + [f"variants@learned-{merge}-{seed}" for merge in ("concat", "reweight") for seed in (1, 2)]
    + ["grid@AdamW-0.001-16-1", "grid@SGD-0.001-16-1"]
)


def repo_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [f for f in listed if (REPO / f).is_file()]


GIT = ["git", "-c", "user.name=tinytf-test", "-c", "user.email=test@example.invalid"]


def repo_copy(root: Path) -> Path:
    """A copy of the repository's files in `root`, committed to a fresh git repo (DVC experiments
    need a commit to start from)."""
    for name in repo_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    (root / "dvc.lock").unlink(missing_ok=True)  # the committed lock is for the default params
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "copy"], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of the repository with the tiny preset run as a temporary experiment and applied:
    every test of this module starts from it, alone or in any selection."""
    root = repo_copy(tmp_path_factory.mktemp("repo"))
    # the way a user switches configuration: `dvc exp run -S ...` from presets/tiny.yaml
    dvc(root, "preset", "tiny", command=(sys.executable, "-m", "tinytf.cli"))
    # a temporary experiment: the clone is untouched until the experiment is applied
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert status == "", status
    listed = dvc(root, "exp", "ls", "--name-only").stdout.splitlines()
    [experiment] = [line.strip() for line in listed if line.strip() and not line.endswith(":")]  # no baseline
    dvc(root, "exp", "apply", experiment)
    return root


# the longest single command here is the tiny pipeline's first `dvc exp run` (~3 min on 2 cores);
# a command past this fails its test instead of holding the whole suite
COMMAND_TIMEOUT_S = 900


def tracked_env(tracking_uri: str | None = None) -> dict[str, str]:
    """This interpreter's environment first on PATH, tracking on: into `tracking_uri` when given,
    else into the copy's own mlflow.db (never the developer's MLFLOW_TRACKING_URI)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["TINYTF_TRACKING"] = "1"
    env.pop("MLFLOW_TRACKING_URI", None)
    if tracking_uri:
        env["MLFLOW_TRACKING_URI"] = tracking_uri
    return env


def dvc(
    root: Path,
    *args: str,
    command: tuple[str, ...] = (),
    tracking_uri: str | None = None,
    log: Path | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run dvc (or `command`) in `root` with tracking on (see tracked_env), failing the test unless
    it exits 0 (`check`). With `log`, its output goes to that file instead of a pipe: a command that
    forks a daemon (`dvc queue start`) hands it its stdout, and a pipe would keep subprocess.run
    waiting until the daemon exits."""
    command = command or (str(Path(sys.executable).parent / "dvc"),)
    with open(log, "w") if log else contextlib.nullcontext() as out:
        output = {"stdout": out, "stderr": subprocess.STDOUT} if log else {"capture_output": True}
        result = subprocess.run([*command, *args], cwd=root, env=tracked_env(tracking_uri), text=True,
                                timeout=COMMAND_TIMEOUT_S, **output)  # fmt: skip
    assert result.returncode == 0 or not check, log.read_text() if log else result.stdout + result.stderr
    return result


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

    metrics = json.loads((workspace / "reports/pretrain/metrics.json").read_text())
    assert metrics["steps"] == 8 and metrics["validation_perplexity"] > 1
    assert set(metrics["samples"]) == {"normal", "weird", "long"}
    assert (workspace / "data/models/pretrained.pt").exists()
    epochs = pd.read_csv(workspace / "reports/pretrain/epochs.csv")
    assert epochs["epoch"].tolist() == [1, 2]
    table = (workspace / "reports/variants/variants.md").read_text()
    assert "| learned" in table and "reweight" in table and " ± " in table
    summary = json.loads((workspace / "reports/finetune/summary.json").read_text())
    assert set(summary["arms"]) == {"pretrained", "scratch", "frozen"}
    assert set(summary["label_curve"]) == {"60", "120", "all"}
    for entry in summary["label_curve"].values():  # the protocol: every label count runs every seed
        assert len(entry["pretrained"]["by_seed"]) == len(entry["scratch"]["by_seed"]) == 3
        assert entry["pretrained"]["n"] == entry["scratch"]["n"] == 3
        test = entry["pretrained_vs_scratch"]  # a tiny test set can give every seed the same difference
        assert test["p_holm"] is None if test["p_value"] is None else test["p_holm"] >= test["p_value"]
    assert summary["trend"]["n"] == 9 and len(summary["trend"]["ci95"]) == 2
    assert [p["start"] for p in summary["snapshot_curve"]] == ["scratch", "epoch1", "final"]
    assert summary["snapshot_curve"][1]["n"] == 3  # the same seeds as every other point
    assert set(summary["recipes"]) == {"pretrained", "scratch"}  # the frozen probe chooses its C in every run
    assert {(r["lr"], r["dropout"]) for r in summary["recipes"].values()} <= {
        (lr, d) for lr in (0.001, 0.003) for d in (0.0, 0.1)}  # fmt: skip
    probes = pd.read_csv(workspace / "reports/finetune/runs.csv").query("arm == 'frozen'")
    assert len(probes) == 3 * 3 and probes["probe_c"].isin([0.1, 1]).all()  # presets/tiny.yaml: probe_cs
    assert (workspace / "data/models/snapshots/epoch1.pt").exists()
    assert (workspace / "reports/finetune/curves.png").stat().st_size > 10_000
    final = json.loads((workspace / "reports/metrics.json").read_text())
    assert 0 <= final["test_accuracy"] <= 1
    assert final["best"]["optimizer"] in {"AdamW", "SGD"}
    assert set(final["pretrained_vs_scratch"]) >= {"pretrained", "scratch"}
    assert 0.3 < final["baselines"]["majority"]["test_accuracy"] < 0.7
    assert set(final["label_curve"]["120"]) == {"pretrained", "scratch", "frozen", "tfidf_lr"}
    readme = (workspace / "reports/README.md").read_text()
    assert f"Test accuracy {final['test_accuracy']:.1%}" in readme
    assert "## Where pretraining helps" in readme
    # every candidate of every trained start: 2 lrs x 2 dropouts
    searched = pd.read_csv(workspace / "reports/tables/recipes.csv")
    assert len(searched) == 8 and searched["chosen"].sum() == 2
    assert (searched["seeds"] == 2).all()  # presets/tiny.yaml: search_seeds 2 of the 3 seeds at 60 labels
    assert readme.index("- Protocol (params.yaml") < readme.index("- 60 labels: pretraining")
    assert "- Trend: " in readme
    assert (
        readme.index("- 60 labels: pretraining")
        < readme.index("- 120 labels:")
        < readme.index("- all labels:")
    )
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


def test_a_clone_pulls_outputs_and_run_cache_from_a_remote_and_repro_runs_nothing(workspace, tmp_path):
    """DVC's remote, as a runner uses it: push outputs and run cache from one clone, pull them
    into a fresh clone, where `dvc repro` then recomputes nothing (a local-directory remote
    here; S3 or GCS take the same commands, README "Running on GPUs and clusters")."""
    remote = tmp_path / "remote"
    dvc(workspace, "remote", "add", "--force", "-d", "storage", str(remote))
    subprocess.run([*GIT, "add", "-A"], cwd=workspace, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "tiny results"], cwd=workspace, check=True, capture_output=True)
    dvc(workspace, "push", "--run-cache")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(workspace), str(clone)], check=True)
    assert not (clone / "data" / "models" / "pretrained.pt").exists()
    dvc(clone, "pull", "--run-cache")
    out = dvc(clone, "repro").stdout
    assert "Running stage" not in out, out
    for stage in DVC_STAGES:
        assert f"Stage '{stage}' didn't change, skipping" in out
    for name in ("reports/headline.json", "data/models/pretrained.pt"):
        assert (clone / name).read_bytes() == (workspace / name).read_bytes(), name


# one module each stage's code reaches (the first five are the examples of edits that
# `dvc status` used to miss); editing it must make `dvc status` list that stage
EDITS = {
    "prepare": "tinytf/data/readers.py",
    "tokenize": "tinytf/data/tokenizer.py",
    "pretrain": "tinytf/data/batching.py",
    "variants": "tinytf/train/runtime.py",
    "variants_table": "tinytf/train/variants.py",
    "finetune": "tinytf/train/finetune.py",
    "baselines": "tinytf/analysis/baselines.py",
    "grid": "tinytf/train/classify.py",
    "evaluate": "tinytf/analysis/evaluation.py",
    "probes": "tinytf/analysis/attention_probes.py",
    "complexity": "tinytf/analysis/complexity.py",
    "checks": "tinytf/analysis/checks.py",
    "report": "tinytf/report/text.py",
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


def test_mlflow_store_holds_one_run_per_stage_and_one_per_run_of_the_study(workspace):
    import mlflow
    import pandas as pd

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    assert runs["tags.tinytf.stage"].value_counts().to_dict() == RUNS
    assert set(runs["status"]) == {"FINISHED"}
    # the whole study in MLflow: a child run for every row of runs.csv, found by its tags
    study = pd.read_csv(workspace / "reports/finetune/runs.csv")
    children = runs[runs["tags.tinytf.stage"] == "finetune"].dropna(subset=["tags.tinytf.arm"])
    logged = sorted(zip(children["tags.tinytf.arm"], children["tags.tinytf.labels"], children["tags.tinytf.seed"],
                        children["tags.tinytf.start"], strict=True))  # fmt: skip
    assert logged == sorted(zip(study["arm"], study["labels"].astype(str), study["seed"].astype(str),
                                study["start"], strict=True))  # fmt: skip
    if (
        platform.libc_ver()[0] == "glibc"
    ):  # every stage process keeps freed memory (tinytf/process/allocator.py)
        ran = runs[~runs["tags.tinytf.stage"].str.endswith("(parent)")]  # a matrix's parent runs nothing
        assert set(ran["tags.tinytf.allocator"]) == {"kept (glibc: no mmap, trim above 1024 MiB)"}
    prepare = runs[runs["tags.tinytf.stage"] == "prepare"].iloc[0]
    assert prepare["params.prepare.corpus.max_rows"] == "2000"
    inputs = mlflow.get_run(prepare["run_id"]).inputs.dataset_inputs
    assert len(inputs) == 6 and all(d.dataset.digest for d in inputs)
    for stage, splits in (
        ("pretrain", 3),
        ("grid", 2),
        ("evaluate", 1),
    ):  # what each trained or was scored on
        run_id = runs[runs["tags.tinytf.stage"] == stage].iloc[0]["run_id"]
        inputs = mlflow.get_run(run_id).inputs.dataset_inputs
        assert len(inputs) == splits and all(len(d.dataset.digest) == 8 for d in inputs), stage
    parent = runs[runs["tags.tinytf.stage"] == "grid (parent)"].iloc[0]["run_id"]
    cells = runs[runs["tags.tinytf.stage"] == "grid"]
    assert set(cells["tags.mlflow.parentRunId"]) == {parent}
    # the preset ran as a temporary experiment: its model is registered, tagged with the
    # experiment's name, and @champion is not moved by it
    client = mlflow.MlflowClient()
    [version] = client.search_model_versions("name='tinytf-sentiment'")
    assert version.run_id == runs[runs["tags.tinytf.stage"] == "evaluate"].iloc[0]["run_id"]
    # search results leave aliases out: read them from the registered model
    assert version.tags["tinytf.experiment"] and client.get_registered_model("tinytf-sentiment").aliases == {}


def test_the_champion_is_a_pyfunc_model_that_classifies_raw_texts(workspace):
    import json

    import mlflow
    import pandas as pd

    # an applied experiment becomes the champion when evaluate runs in the workspace
    dvc(workspace, "repro", "--force", "--single-item", "evaluate")
    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    champion = mlflow.MlflowClient().get_model_version_by_alias("tinytf-sentiment", "champion")
    assert int(champion.version) == 2 and "tinytf.experiment" not in champion.tags
    model = mlflow.pyfunc.load_model("models:/tinytf-sentiment@champion")
    predicted = model.predict(pd.DataFrame({"text": ["a fine, moving film", "a dull mess"]}))
    classes = json.loads((workspace / "data/tokens/sentiment/labels.json").read_text())["classes"]
    assert list(predicted.columns) == ["label"] + [f"p_{name}" for name in classes]
    assert set(predicted["label"]) <= set(classes) and len(predicted) == 2


def test_dvc_compares_a_few_metrics_and_draws_every_plot_in_chromium(workspace, tmp_path):
    import json

    from tinytf.params.schema import flatten

    from .mlflow_ui import browser_available, chromium, local_vega_page, wait_for

    shown = json.loads(dvc(workspace, "metrics", "show", "--json").stdout)
    files = next(iter(shown.values()))["data"]  # what `dvc exp show` makes its metric columns of
    assert list(files) == ["reports/headline.json"], list(files)
    headline = files["reports/headline.json"]["data"]
    assert set(headline) == {"test", "pretrained_minus_scratch", "label_curve", "lm"}, headline
    assert len(flatten(headline)) <= 30, flatten(headline)
    dvc(workspace, "plots", "show", "-o", str(tmp_path / "plots"))
    html = tmp_path / "plots" / "index.html"
    expected = html.read_text().count("vegaEmbed(")
    assert expected == 5  # steps, epochs, one line per start, the confusion matrix, the grid
    if not browser_available():
        pytest.skip("chromium / chromedriver / selenium not installed (.ci/run installs them)")
    from selenium.webdriver.common.by import By

    try:
        page = local_vega_page(
            html, Path(os.environ.get("TINYTF_CACHE", Path.home() / ".cache/tinytf")) / "vega"
        )
    except OSError as exc:  # urllib's errors: the npm registry is out of reach (the plots were built above)
        pytest.skip(f"vega scripts not fetched from registry.npmjs.org: {exc}")
    with chromium(tmp_path / "profile") as driver:
        driver.get(page.as_uri())

        def drawn(d):
            return (
                len(d.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"))
                == expected
            )

        wait_for(driver, drawn, what=f"{expected} drawn vega plots")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        driver.save_screenshot(str(workspace / "dvc-plots.png"))
    assert not errors, errors


def test_mlflow_ui_lists_runs_and_renders_a_metric_chart(workspace, tmp_path):
    from .mlflow_ui import browser_available, chromium, mlflow_server, wait_for

    if not browser_available():
        pytest.skip("chromium / chromedriver / selenium not installed (.ci/run installs them)")
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    experiment = mlflow.get_experiment_by_name("tinytf")
    pretrain = mlflow.search_runs([experiment.experiment_id], "tags.`tinytf.stage` = 'pretrain'").iloc[0]
    from selenium.webdriver.common.by import By

    with mlflow_server(workspace / "mlflow.db") as url, chromium(tmp_path / "profile") as driver:
        driver.get(f"{url}/#/experiments/{experiment.experiment_id}/runs")
        for name in ("prepare", "tokenize", "pretrain", "evaluate"):
            wait_for(
                driver, lambda d, n=name: n in d.find_element(By.TAG_NAME, "body").text, what=f"run '{name}'"
            )
        driver.save_screenshot(str(workspace / "mlflow-runs.png"))
        driver.get(f"{url}/#/experiments/{experiment.experiment_id}/runs/{pretrain['run_id']}/model-metrics")

        def chart(d):
            return d.find_elements(By.CSS_SELECTOR, ".js-plotly-plot, svg.main-svg, canvas")

        wait_for(driver, chart, what="a metric chart on the pretrain run page")
        wait_for(
            driver,
            lambda d: "train_loss" in d.find_element(By.TAG_NAME, "body").text,
            what="train_loss chart",
        )
        driver.save_screenshot(str(workspace / "mlflow-chart.png"))


def run_two_queued_experiments(workspace: Path, tracking_uri: str | None = None) -> None:
    """Queue two experiments that re-run only evaluate and report (so they overlap in time:
    evaluate.bootstrap_resamples 300 and 400, named boot300 / boot400) and run them at once."""
    subprocess.run([*GIT, "add", "-A"], cwd=workspace, check=True, capture_output=True)
    # empty when the tests before left nothing new (the browser tests, which save screenshots
    # here, skip where Chromium is absent): the queue needs a commit, not a change
    subprocess.run([*GIT, "commit", "--allow-empty", "-qm", "tiny pipeline"], cwd=workspace, check=True,
                   capture_output=True)  # fmt: skip
    for resamples in (300, 400):
        dvc(
            workspace,
            "exp",
            "run",
            "--queue",
            "-n",
            f"boot{resamples}",
            "-S",
            f"evaluate.bootstrap_resamples={resamples}",
            tracking_uri=tracking_uri,
        )
    try:
        # DVC forks each worker from this command, and a worker that misses its shutdown message
        # never exits: with a pipe this call once hung the suite past CI's 90 minutes
        dvc(
            workspace,
            "queue",
            "start",
            "-j",
            "2",
            tracking_uri=tracking_uri,
            log=workspace / "queue-start.log",
        )
        deadline = time.monotonic() + 600
        while True:
            status = queue_status(workspace)
            if "Queued" not in status and "Running" not in status:
                break
            assert time.monotonic() < deadline, status + worker_logs(workspace)
            time.sleep(3)
        assert status.count("Success") == 2, status + worker_logs(workspace)
    finally:
        kill_queue_workers(workspace)


def queue_status(workspace: Path) -> str:
    """`dvc queue status`, asked again where it fails on DVC's race: it reads a task's JSON info
    file while the queue is writing it ("unexpected error - Extra data", treeverse/dvc#8014; here
    also "Expecting value: line 1 column 1"). Any other failure fails the test at once."""
    for attempt in range(5):
        result = dvc(workspace, "queue", "status", check=False)
        output = result.stdout + result.stderr
        if result.returncode == 0:
            return result.stdout
        raced = re.search(r"unexpected error - (Expecting value|Extra data)", output)
        assert raced and attempt < 4, output
        time.sleep(1)
    raise AssertionError("unreachable")


CELERY_DIR = ".dvc/tmp/exps/celery"  # where DVC's queue keeps its broker, worker info files and logs


def running_queue_worker_pids(workspace: Path) -> list[int]:
    """The pids of DVC's queue workers that have not exited: dvc_task's ManagedProcess records
    each worker's pid in an info file, and its return code there once it exits."""
    import json

    infos = [json.loads(f.read_text()) for f in (workspace / CELERY_DIR).glob("dvc-exp-worker-*.json")]
    return [info["pid"] for info in infos if info.get("returncode") is None]


def kill_queue_workers(workspace: Path) -> None:
    """Kill every queue worker still running with its process group (each worker runs in a group
    of its own), so no worker outlives its test, whether it missed its shutdown message or hung."""
    import signal

    for pid in running_queue_worker_pids(workspace):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass  # it exited since its info file was read


def worker_logs(workspace: Path) -> str:
    """The queue workers' own logs, for a failure message."""
    logs = sorted((workspace / CELERY_DIR).glob("**/*.out"))
    return "".join(f"\n--- {log.name} ---\n{log.read_text()[-3000:]}" for log in logs)


def test_queued_experiments_run_two_at_once_and_both_reach_mlflow(workspace):
    run_two_queued_experiments(workspace)
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    evaluated = runs[runs["tags.tinytf.stage"] == "evaluate"]
    assert {"boot300", "boot400"} <= set(evaluated["tags.dvc.exp_name"].dropna())
    assert set(evaluated["status"]) == {"FINISHED"}


# the tests below break a stage on purpose and put the workspace back; they come last, after the
# tests that count MLflow runs (a failed report is a FAILED run)


def file_bytes(root: Path, names: list[str]) -> dict[str, bytes]:
    """Every file under each name (a file or a folder), by path: what a failed stage must keep."""
    found = {}
    for name in names:
        path = root / name
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                found[file.relative_to(root).as_posix()] = file.read_bytes()
    return found


@contextlib.contextmanager
def unwritable(folder: Path):
    """chmod 555; for root, whom permissions do not stop, the immutable flag (chattr +i)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("running as root where chattr +i is refused: no way to make a folder unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_report_that_cannot_be_written_leaves_the_last_report_whole(workspace):
    outputs = ["reports/README.md", "reports/headline.json", "reports/tables", "reports/plots", "reports/dvc"]
    before = file_bytes(workspace, outputs)
    params = workspace / "params.yaml"
    original = params.read_text()
    import yaml

    # another variants.steps changes a table the report writes before its plots
    changed = yaml.safe_load(original)
    changed["variants"]["steps"] += 1
    params.write_text(yaml.safe_dump(changed, sort_keys=False))
    try:
        with unwritable(workspace / "reports/plots"):
            result = dvc(workspace, "repro", "-s", "-f", "report", check=False)
    finally:
        params.write_text(original)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "reports/plots: not writable" in output and "Traceback" not in output, output
    assert file_bytes(workspace, outputs) == before
    assert not list(workspace.glob("*.tmp")) and not list((workspace / "reports").glob(".*.tmp"))
    assert "Data and pipelines are up to date" in dvc(workspace, "status", "report").stdout
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"], filter_string="tags.`tinytf.stage` = 'report'")
    assert runs.iloc[0]["status"] == "FAILED"  # the newest


def test_a_refused_params_override_keeps_the_tokenizer_and_the_model_usable(workspace):
    outputs = ["data/tokenizer.json", "data/tokens", "reports/tokenize.json"]
    before = file_bytes(workspace, outputs)
    params = workspace / "params.yaml"
    original = params.read_text()
    try:
        result = dvc(workspace, "exp", "run", "-S", "+tokenize.vocab_sise=4000", check=False)
    finally:
        params.write_text(original)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "tokenize.vocab_sise" in output, output
    assert file_bytes(workspace, outputs) == before
    scored = dvc(workspace, "score", "the market fell", command=(sys.executable, "-m", "tinytf.cli"))
    assert "perplexity" in scored.stdout, scored.stdout + scored.stderr
