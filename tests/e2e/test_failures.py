"""A stage that fails under DVC loses nothing: the last outputs stay whole and usable."""

from __future__ import annotations

import sys

import pytest

from tests.helpers.repo import dvc, file_bytes, unwritable

pytestmark = pytest.mark.slow


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
    outputs = ["data/tokenizer.json", "data/tokens", "data/reports/tokenize.json"]
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
