"""`dvc metrics show` and `dvc plots show` on the tiny run, the plots drawn in Chromium."""

from __future__ import annotations

import pytest

from tests.helpers.repo import dvc

pytestmark = pytest.mark.slow


def test_dvc_compares_a_few_metrics_and_draws_every_plot_in_chromium(workspace, tmp_path):
    import json

    from tests.helpers.mlflow_ui import browser_available, chromium, wait_for
    from tinytf.params.schema import flatten

    shown = json.loads(dvc(workspace, "metrics", "show", "--json").stdout)
    files = next(iter(shown.values()))["data"]  # what `dvc exp show` makes its metric columns of
    assert list(files) == ["reports/headline.json"], list(files)
    headline = files["reports/headline.json"]["data"]
    assert set(headline) == {
        "test",
        "pretrained_minus_scratch",
        "pretrained_minus_tfidf",
        "label_curve",
        "lm",
    }, headline
    assert len(flatten(headline)) <= 30, flatten(headline)
    dvc(workspace, "plots", "show", "-o", str(tmp_path / "plots"))
    html = tmp_path / "plots" / "index.html"
    page = html.read_text()
    expected = page.count("vegaEmbed(")
    # the label curve (every start and baseline), steps (a line per pretraining run), epochs, one
    # line per start, the confusion matrix, the grid
    assert expected == 6
    # .dvc/config's plots.html_template: Vega is inside the page, so it draws offline
    assert "<script src=" not in page and "cdn.jsdelivr" not in page
    if not browser_available():
        pytest.skip("chromium / chromedriver / selenium not installed (.ci/run installs them)")
    from selenium.webdriver.common.by import By

    with chromium(tmp_path / "profile") as driver:
        driver.get(html.as_uri())

        def drawn(d):
            return (
                len(d.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"))
                == expected
            )

        wait_for(driver, drawn, what=f"{expected} drawn vega plots")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        driver.save_screenshot(str(workspace / "dvc-plots.png"))
    assert not errors, errors


def test_dvc_plots_diff_of_two_tiny_experiments_draws_the_label_curve_of_both(workspace, tmp_path):
    """`dvc plots diff A B` overlays two experiments' label curves offline (the pull-request
    report posts this): both revisions' rows are in the plot's data and in the page."""
    import json

    listed = dvc(workspace, "exp", "ls", "--name-only").stdout.splitlines()
    [first] = [line.strip() for line in listed if line.strip() and not line.endswith(":")]
    # the second: other baseline C candidates, so the curve's tfidf_lr line may move
    dvc(workspace, "exp", "run", "--name", "tiny-c1", "-S", "baselines.cs=[1]")
    shown = json.loads(dvc(workspace, "plots", "diff", first, "tiny-c1", "--json").stdout)
    [curve] = shown["data"]["label_curve"]
    rows = curve["content"]["data"]["values"]
    assert {row["rev"] for row in rows} == {first, "tiny-c1"}
    dvc(workspace, "plots", "diff", first, "tiny-c1", "-o", str(tmp_path / "diff"))
    page = (tmp_path / "diff" / "index.html").read_text()
    # one page that draws offline (.dvc/config's template holds Vega), both experiments in it
    assert first in page and "tiny-c1" in page and "<script src=" not in page
