"""What the tiny run leaves in MLflow: one run per stage and per run of the study, the champion as a
pyfunc model, and the MLflow UI that shows them."""

from __future__ import annotations

import platform

import pytest

from tests.helpers.paths import REPO
from tests.helpers.repo import dvc
from tests.helpers.tiny_run import RUNS

pytestmark = pytest.mark.slow


def test_mlflow_store_holds_one_run_per_stage_and_one_per_run_of_the_study(workspace):
    import mlflow
    import pandas as pd

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    assert runs["tags.tinytf.stage"].value_counts().to_dict() == RUNS
    assert set(runs["status"]) == {"FINISHED"}
    # the whole study in MLflow: a child run for every row of runs.csv, found by its tags
    study = pd.read_csv(workspace / "reports/finetune/runs.csv")
    children = runs[runs["tags.tinytf.stage"] == "finetune"].dropna(subset=["tags.tinytf.start"])
    logged = sorted(
        zip(
            children["tags.tinytf.start"],
            children["tags.tinytf.labels"],
            children["tags.tinytf.seed"],
            children["tags.tinytf.snapshot"],
            strict=True,
        )
    )
    assert logged == sorted(
        zip(
            study["start"],
            study["labels"].astype(str),
            study["seed"].astype(str),
            study["snapshot"],
            strict=True,
        )
    )
    if (
        platform.libc_ver()[0] == "glibc"
    ):  # every stage process keeps freed memory (tinytf/system/allocator.py)
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


def test_every_tag_the_docs_name_is_one_a_run_of_the_tiny_preset_carries(workspace):
    import re

    import mlflow

    docs = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
    named = {m for p in docs for m in re.findall(r"`(tinytf\.[a-z_.]+)`", p.read_text(encoding="utf-8"))}
    # `tinytf.data`, `tinytf.model.hf`: a module, not a tag
    named = {
        t
        for t in named
        if not (REPO / t.replace(".", "/")).exists() and not (REPO / f"{t.replace('.', '/')}.py").exists()
    }
    assert {"tinytf.stage", "tinytf.snapshot", "tinytf.experiment"} <= named
    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tinytf"])
    set_by_runs = {c.removeprefix("tags.") for c in runs.columns if c.startswith("tags.")}
    versions = mlflow.MlflowClient().search_model_versions("name='tinytf-sentiment'")
    # a registered model's tag that lives only while a rollback is under way (test_promotion.py
    # kills rollbacks midway and sees it)
    transient = {"tinytf.rollback"}
    assert named - set_by_runs - {t for v in versions for t in v.tags} - transient == set()
    # baseline fits sit beside the final model's finetune runs under one filter, tinytf.snapshot = final
    baselines = runs[(runs["tags.tinytf.stage"] == "baselines") & runs["tags.tinytf.start"].notna()]
    assert len(baselines) and set(baselines["tags.tinytf.snapshot"]) == {"final"}


def test_the_champion_is_a_pyfunc_model_that_classifies_raw_texts(workspace):
    import json

    import mlflow
    import pandas as pd

    # an applied experiment becomes the champion when evaluate runs in the workspace: its weights
    # are the experiment's, so its version is reused, and is the workspace's now
    dvc(workspace, "repro", "--force", "--single-item", "evaluate")
    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    client = mlflow.MlflowClient()
    champion = client.get_model_version_by_alias("tinytf-sentiment", "champion")
    assert int(champion.version) == 1 and "tinytf.experiment" not in champion.tags
    # a second evaluate with unchanged weights adds no version either, and keeps the champion
    dvc(workspace, "repro", "--force", "--single-item", "evaluate")
    assert len(client.search_model_versions("name='tinytf-sentiment'")) == 1
    assert client.get_registered_model("tinytf-sentiment").aliases == {"champion": 1}
    metrics = json.loads((workspace / "data/reports/metrics.json").read_text())
    assert metrics["promotion"]["reason"] == "kept: version 1 is @champion (the same weights)"
    model = mlflow.pyfunc.load_model("models:/tinytf-sentiment@champion")
    predicted = model.predict(pd.DataFrame({"text": ["a fine, moving film", "a dull mess"]}))
    classes = json.loads((workspace / "data/tokens/sentiment/labels.json").read_text())["classes"]
    assert list(predicted.columns) == ["label"] + [f"p_{name}" for name in classes]
    assert set(predicted["label"]) <= set(classes) and len(predicted) == 2


def test_mlflow_ui_lists_runs_and_renders_a_metric_chart(workspace, tmp_path):
    from tests.helpers.mlflow_ui import browser_available, chromium, mlflow_server, wait_for

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


def test_predict_right_after_the_tiny_preset_names_the_command_that_works(workspace):
    """The preset ran as a temporary experiment: it registered a version and rightly left
    @champion alone. The first `tinytf predict` says which version exists and how to use it."""
    import os
    import re
    import shlex
    import subprocess
    import sys

    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{workspace / 'mlflow.db'}")

    def predict(*args):
        command = [sys.executable, "-m", "tinytf.cli", "predict", *args]
        return subprocess.run(command, cwd=workspace, env=env, capture_output=True, text=True, timeout=300)

    first = predict("a gripping film")
    err = first.stderr.strip()
    assert first.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "no version is @champion yet; the newest is 1 by experiment " in err, err
    assert "dvc exp apply " in err and "dvc repro --single-item evaluate" in err
    command = re.search(r'tinytf predict --model models:/tinytf-sentiment/1 "your text"', err)
    assert command, err
    # the command it names, as named, answers
    words = shlex.split(command.group(0).replace('"your text"', '"a gripping film"'))
    answered = predict(*words[2:])
    assert answered.returncode == 0 and "a gripping film" in answered.stdout, answered.stderr


def test_the_ui_link_lands_on_every_stage_filters_the_curve_and_shows_the_card(workspace, tmp_path):
    """What issue 73 asks of a browsing user's first minutes, in headless Chromium: `tinytf ui`'s link
    opens the runs, every stage on the first page; the role filter returns exactly the curve's
    runs; no two runs share a name; the champion's version page shows its card."""
    import mlflow
    import pandas as pd

    from tests.helpers.mlflow_ui import browser_available, chromium, tinytf_ui, wait_for

    store = workspace / "mlflow.db"
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    experiment = mlflow.get_experiment_by_name("tinytf")
    runs = mlflow.search_runs([experiment.experiment_id])
    names = runs["tags.mlflow.runName"]
    assert not names.duplicated().any(), sorted(names[names.duplicated()])
    study = pd.read_csv(workspace / "reports/finetune/runs.csv")
    on_curve = study[study["chosen"] & (study["snapshot"] == "final")]
    curve = runs[runs["tags.tinytf.role"] == "curve"]
    assert len(curve) == len(on_curve) and set(curve["tags.tinytf.chosen"]) == {"true"}
    others = runs[runs["tags.tinytf.role"].isin(["recipe_search", "snapshot"])]
    assert len(curve) + len(others) == len(study)  # every fine-tuning child has a role
    # the curve at step = label count, for a chart's x axis: each curve run, and the stages' means
    client = mlflow.MlflowClient()
    steps = sorted(set(on_curve["n_train"]))
    for stage, key in (("finetune", "scratch_test_accuracy"), ("baselines", "tfidf_lr_test_accuracy")):
        [run_id] = runs[(runs["tags.tinytf.stage"] == stage) & runs["tags.mlflow.parentRunId"].isna()][
            "run_id"
        ]
        assert sorted(m.step for m in client.get_metric_history(run_id, key)) == steps, stage
    one = curve.iloc[0]
    [point] = client.get_metric_history(one["run_id"], "test_accuracy")
    assert point.step in steps and str(point.step) == one["params.finetune.labels"].replace(
        "all", str(max(steps))
    )
    # every parent says what its children are, names its best, and carries the commit and params
    assert runs["tags.tinytf.study"].nunique() == 1 and runs["tags.tinytf.study"].notna().all()
    for stage in ("finetune", "baselines", "grid (parent)", "grid_finalists (parent)", "variants (parent)"):
        [parent] = runs[
            (runs["tags.tinytf.stage"] == stage) & runs["tags.mlflow.parentRunId"].isna()
        ].to_dict("records")
        assert parent["tags.mlflow.note.content"] and parent["tags.tinytf.best_child"] in set(names), stage
        held = [k for k, v in parent.items() if k.startswith("params.") and isinstance(v, str)]
        assert parent["tags.mlflow.source.git.commit"] and held, stage
    top = sorted(runs[runs["tags.mlflow.parentRunId"].isna()]["tags.mlflow.runName"])
    [version] = mlflow.MlflowClient().search_model_versions("name='tinytf-sentiment'")
    card = next(line.lstrip("# ").strip() for line in version.description.splitlines() if line.strip())
    if not browser_available():
        pytest.skip("chromium / chromedriver / selenium not installed (.ci/run installs them)")
    from selenium.webdriver.common.by import By

    def text(d):
        return d.find_element(By.TAG_NAME, "body").text

    with tinytf_ui(store) as (url, link), chromium(tmp_path / "profile") as driver:
        driver.set_window_size(1400, 3000)  # every row drawn: the table draws only what is in view
        assert link == f"{url}/#/experiments/{experiment.experiment_id}/runs?workflowType=machine_learning"
        driver.get(link)
        wait_for(driver, lambda d: all(name in text(d) for name in top), what=f"every stage's run: {top}")
        assert "Load more" not in text(driver)
        driver.save_screenshot(str(workspace / "mlflow-landing.png"))
        wanted, unwanted = set(curve["tags.mlflow.runName"]), set(others["tags.mlflow.runName"])
        driver.find_element(By.CSS_SELECTOR, "input[data-testid='search-box']").send_keys(
            "tags.tinytf.role = 'curve'\n"
        )
        # the matches and their parent, the finetune stage's run, collapsed: opened as a user does
        wait_for(driver, lambda d: f"{len(wanted) + 1} matching runs" in text(d), what="the filter's count")
        expand = "button[data-component-id*='runnamecellrenderer']"
        wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, expand), what="the parent's expander")
        [opener] = driver.find_elements(By.CSS_SELECTOR, expand)  # one parent: the finetune run
        opener.click()

        def filtered(d):
            shown = {n for n in wanted | unwanted if n in text(d)}
            return shown == wanted

        wait_for(driver, filtered, what=f"the {len(wanted)} curve runs and no other fine-tuning run")
        driver.save_screenshot(str(workspace / "mlflow-curve.png"))
        driver.get(f"{url}/#/models/tinytf-sentiment/versions/{version.version}")
        wait_for(driver, lambda d: card in text(d), what=f"the model card ({card!r}) on the version page")
        driver.save_screenshot(str(workspace / "mlflow-version.png"))
