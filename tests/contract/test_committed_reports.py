"""Committed reports say what today's generator writes: each README is rendered again from the
view it was written from (its folder's readme.json, tinytf.report.render) and must match byte
for byte. A generator change that alters a committed text fails here until the report is rebuilt
(`dvc repro report`) or the preset re-exported."""

from __future__ import annotations

import pytest

from tests.helpers.paths import REPO
from tinytf.cli.presets import preset_readme
from tinytf.report.render import read_view, render

PRESETS = REPO / "reports" / "presets"

# exported before a preset carried its view, so their text cannot be rendered again: each leaves
# this list when its preset is run and exported again (the reason is what that run needs)
WITHOUT_VIEW = {
    "minilm": "the hf start's label curve with its recipe search: a GPU",
}


def test_the_default_report_is_what_its_view_renders():
    text = render(read_view(REPO / "reports" / "readme.json"))
    assert text == (REPO / "reports" / "README.md").read_text(encoding="utf-8")


def test_every_preset_export_has_its_view_but_the_listed_older_ones():
    without = sorted(p.name for p in PRESETS.iterdir() if p.is_dir() and not (p / "readme.json").exists())
    assert without == sorted(WITHOUT_VIEW)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in PRESETS.iterdir() if (p / "readme.json").exists()) or ["(none)"]
)
def test_each_exported_preset_is_what_its_view_renders(name):
    if name == "(none)":
        pytest.skip("no preset export carries its view yet")
    folder = PRESETS / name
    assert preset_readme(folder) == (folder / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("view", [REPO / "reports" / "readme.json", *sorted(PRESETS.glob("*/readme.json"))])
def test_a_view_is_numbers_and_phrases_not_frames(view):
    """A README's view is what its sentences say (tinytf.report.derive), not the frames they were
    derived from: a few tens of kilobytes at most."""
    assert view.stat().st_size < 30_000
