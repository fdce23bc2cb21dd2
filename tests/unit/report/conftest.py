"""The report tests' trees: one fake upstream tree per module, copied per test, and one built report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.report_upstream import make_upstream
from tinytf.io import write_text
from tinytf.params.config import Params
from tinytf.report.build import build_report


@pytest.fixture
def fast_plots(monkeypatch):
    """Stub the matplotlib figures for tests about the text (the plots are checked on the full build)."""
    import tinytf.report.plots

    for name in (
        "plot_pretrain_curves",
        "plot_finetune_curves",
        "plot_optimizer_curves",
        "plot_grid_heatmaps",
        "plot_attention_maps",
    ):
        monkeypatch.setattr(tinytf.report.plots, name, lambda *args: write_text(args[-1], "stub"))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, Params]:
    root = tmp_path_factory.mktemp("template")
    return root, make_upstream(root)


@pytest.fixture
def upstream(template, tmp_path) -> Params:
    """A fresh copy of the fake upstream tree in tmp_path."""
    shutil.copytree(template[0], tmp_path, dirs_exist_ok=True)
    return template[1]


@pytest.fixture(scope="module")
def built(template, tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(template[0], root, dirs_exist_ok=True)
    params = template[1]
    written = build_report(params, root)
    return root, params, written
