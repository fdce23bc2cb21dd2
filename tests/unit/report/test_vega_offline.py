"""`dvc plots show` offline: the committed template is what tinytf.report.vega_offline writes,
and .dvc/config points DVC at it."""

from __future__ import annotations

import configparser
import os
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tinytf.report import vega_offline


def test_dvc_config_names_the_offline_template():
    config = configparser.ConfigParser()
    config.read(REPO / ".dvc/config")
    template = config["plots"]["html_template"]  # relative to .dvc/, as DVC reads it
    assert (REPO / ".dvc" / template).resolve() == (REPO / vega_offline.TEMPLATE).resolve()


def test_the_committed_template_is_what_the_generator_writes_from_the_pinned_tarballs():
    cache = Path(os.environ.get("TINYTF_CACHE", Path.home() / ".cache/tinytf")) / "vega"
    try:
        written = vega_offline.template(cache)
    except OSError as exc:  # urllib's errors: the npm registry is out of reach
        pytest.skip(f"vega tarballs not fetched from {vega_offline.REGISTRY}: {exc}")
    committed = (REPO / vega_offline.TEMPLATE).read_text(encoding="utf-8")
    assert committed == written, "rerun `python -m tinytf.report.vega_offline` and commit the template"
    assert "{plot_divs}" in committed and "{scripts}" not in committed  # DVC adds no CDN link
    assert committed.count("<script>") == 3 and "<script src=" not in committed
