"""The durations README.md, CONTRIBUTING.md and docs/ quote are those benchmarks/results/
durations.jsonl records (render_durations.py writes them), and durations.py records a run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import render_durations  # noqa: E402  (a script folder, not a package)


def test_the_docs_quote_the_recorded_durations():
    texts = render_durations.render()
    assert {"README.md", "CONTRIBUTING.md", "docs/performance.md"} <= set(texts)
    differ = [file for file, text in texts.items() if (REPO / file).read_text(encoding="utf-8") != text]
    assert differ == [], "run python benchmarks/render_durations.py"
    assert render_durations.main(["--check"]) == 0


def test_a_figure_typed_by_hand_or_a_reworded_spot_is_caught(tmp_path):
    for file in {file for file, _, _ in render_durations.SPOTS}:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / file, tmp_path / file)
    readme = tmp_path / "README.md"
    text = readme.read_text(encoding="utf-8")
    seconds = render_durations.latest()["make-repro"]
    typed = text.replace(
        f"({render_durations.phrase(seconds)} on a 2-core CPU)", "(about 99 minutes on a 2-core CPU)"
    )
    assert typed != text
    readme.write_text(typed, encoding="utf-8")
    assert render_durations.render(tmp_path)["README.md"] == text
    readme.write_text(text.replace("on a 2-core CPU)", "on two cores)"), encoding="utf-8")
    with pytest.raises(ValueError, match="README.md: no longer has the make-repro duration"):
        render_durations.render(tmp_path)


def test_phrases_round_to_the_minute():
    assert [render_durations.phrase(s) for s in (20, 157, 1620, 1944)] == [
        "about 1 minute",
        "about 3 minutes",
        "about 27 minutes",
        "about 32 minutes",
    ]


def test_durations_records_a_command_that_succeeds_and_not_one_that_fails(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TINYTF_BENCH_RESULTS": str(tmp_path)}
    script = [sys.executable, str(REPO / "benchmarks" / "durations.py"), "make-setup", "--"]
    done = subprocess.run([*script, "true"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [run] = [json.loads(line) for line in (tmp_path / "durations.jsonl").read_text().splitlines()]
    assert run["figures"]["name"] == "make-setup" and run["figures"]["command"] == "true"
    assert run["headline"] == done.stdout.strip().splitlines()[-1] and run["figures"]["seconds"] < 60
    failed = subprocess.run([*script, "false"], env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1 and "nothing recorded" in failed.stderr
    assert len((tmp_path / "durations.jsonl").read_text().splitlines()) == 1
