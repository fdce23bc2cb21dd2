"""Every figure README.md states about the study is one a committed report file holds: the study
section is a guide to reports/, never a second, hand-typed copy of its numbers."""

import re

from tests.helpers.paths import REPO

NUMBER = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?")  # not the 2 of SST-2


def study_section(readme: str) -> str:
    match = re.search(r"^## What the study shows\n(.*?)(?=^## )", readme, re.S | re.M)
    assert match, "README.md has no '## What the study shows' section"
    return match.group(1)


def report_text() -> str:
    files = [p for p in (REPO / "reports").rglob("*") if p.suffix in (".md", ".json", ".csv") and p.is_file()]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def unbacked(section: str, reports: str) -> list[str]:
    """The numbers of `section` that no report file holds (commas as thousands separators ignored)."""
    plain = reports.replace(",", "")
    return [n for n in NUMBER.findall(section) if n.replace(",", "") not in plain]


def test_every_number_in_readmes_study_section_is_in_a_committed_report():
    section = study_section((REPO / "README.md").read_text(encoding="utf-8"))
    assert unbacked(section, report_text()) == []


def test_a_hand_typed_figure_is_caught():
    reports = '{"test_accuracy": 0.781, "labels": 1000}\n| 78.1 % |'
    assert unbacked("TF-IDF reaches 78.1 % with 1,000 labels.", reports) == []
    assert unbacked("Our model reached 84.9 % on SST-2.", reports) == ["84.9"]
