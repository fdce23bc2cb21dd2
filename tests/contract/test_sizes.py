"""CONTRIBUTING's size rule, enforced: no Python file under tinytf/ or stages/ over 400 lines (ruff's
PLR0915 holds functions to at most 50 statements)."""

from __future__ import annotations

import pytest

from tests.helpers.paths import REPO

MAX_LINES = 400
FILES = sorted(
    p.relative_to(REPO).as_posix() for folder in ("tinytf", "stages") for p in (REPO / folder).rglob("*.py")
)


@pytest.mark.parametrize("name", FILES)
def test_no_file_over_400_lines(name):
    lines = len((REPO / name).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines, at most {MAX_LINES}: split it along a seam of one job"
