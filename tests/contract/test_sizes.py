"""CONTRIBUTING's size rule, enforced: no Python file under tinytf/ or stages/ over 400 lines (ruff's
PLR0915 holds functions to at most 50 statements)."""

from __future__ import annotations

import pytest

from tests.helpers.paths import REPO

MAX_LINES = 400
# over the limit here while another branch splits it (issue 71); strict: the mark goes when it passes
BEING_SPLIT = {"tinytf/params/config.py"}


def _cases() -> list:
    files = sorted(p for folder in ("tinytf", "stages") for p in (REPO / folder).rglob("*.py"))
    cases = []
    for path in files:
        name = path.relative_to(REPO).as_posix()
        marks = [pytest.mark.xfail(strict=True, reason="being split in a parallel branch")]
        cases.append(pytest.param(name, id=name, marks=marks if name in BEING_SPLIT else ()))
    return cases


@pytest.mark.parametrize("name", _cases())
def test_no_file_over_400_lines(name):
    lines = len((REPO / name).read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines, at most {MAX_LINES}: split it along a seam of one job"
