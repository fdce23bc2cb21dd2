"""`tinytf exp` (and `tinytf preset`): every -S checked before DVC writes params.yaml, and a
temporary or queued experiment refused when the data it names is not tracked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.repo import GIT
from tinytf.cli import experiments
from tinytf.cli.main import main
from tinytf.params.schema import flatten

FILES = ["-S", "prepare.sentiment.source=files", "-S", "prepare.sentiment.files.train=data/raw/mine.csv"]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository holding the project's params.yaml and presets, as the working directory;
    `dvc exp run` replaced by a recorder."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "params.yaml", root / "params.yaml")
    shutil.copytree(REPO / "presets", root / "presets")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "."], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "params"], cwd=root, check=True)
    (root / ".dvc").mkdir()  # where the workspace lock goes (.dvc/tmp/)
    (root / "data/raw").mkdir(parents=True)
    pd.DataFrame({"text": ["good", "bad"] * 20, "label": [1, 0] * 20}).to_csv(root / "data/raw/mine.csv")
    monkeypatch.chdir(root)
    ran = []
    real = subprocess.run

    def run(command, *args, **kwargs):
        at = command.index("exp") if "exp" in command else -1  # after `dvc`, or tinytf.cli.dvc_quiet
        if at > 0 and command[at + 1] == "run":
            ran.append(command[at + 2 :])
            return subprocess.CompletedProcess(command, 0)
        return real(command, *args, **kwargs)

    monkeypatch.setattr(experiments.subprocess, "run", run)
    return SimpleNamespace(root=root, ran=ran)


@pytest.mark.parametrize(
    "override, said",
    [
        ("tokenize.vocab_size=abc", "tokenize.vocab_size: expected an integer"),
        ("tokenize.vocab_sise=4000", "(did you mean 'tokenize.vocab_size'?)"),
        ("+nothing.here=1", "unknown key 'nothing'"),
        ("finetune.search_labels=[250,500]", "finetune.search_labels: 500 is not one of label_counts"),
    ],
)
def test_a_rejected_override_stops_before_dvc_and_params_yaml_stays(repo, capsys, override, said):
    before = (repo.root / "params.yaml").read_bytes()
    assert main(["exp", "-S", override]) == 2
    err = capsys.readouterr().err
    assert said in err and "(nothing ran; params.yaml is as it was)" in err
    assert repo.ran == [] and (repo.root / "params.yaml").read_bytes() == before


@pytest.mark.parametrize(
    "override, said",
    [
        ("tokenize.vocab_size:4000", "-S 'tokenize.vocab_size:4000': expected KEY=VALUE"),
        ("vocab_size", "-S 'vocab_size': expected KEY=VALUE"),
        ("tokenize.vocab_size=[1,", "-S 'tokenize.vocab_size=[1,': not a value DVC reads (no viable"),
        ("finetune.seeds=[1,2", "-S 'finetune.seeds=[1,2': not a value DVC reads"),
        ("tokenize.vocab_size=4000,8000", "a sweep (one experiment per value) runs only queued: add --queue"),
        ("evaluate.nothing=1", "unknown key 'evaluate.nothing'"),
        ("prepare.sentiment.labels.x=1", "prepare.sentiment.labels"),
    ],
)
def test_a_malformed_override_is_one_line_naming_it_before_dvc(repo, capsys, override, said):
    # once a value DVC cannot read was a 40-line traceback, and `key:value` reached DVC as a
    # params file named `key`: an "unexpected error"
    before = (repo.root / "params.yaml").read_bytes()
    assert main(["exp", "-S", override]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and err.startswith("tinytf: error: "), err
    assert repo.ran == [] and (repo.root / "params.yaml").read_bytes() == before


def test_a_queued_sweep_has_each_of_its_experiments_checked_like_one_set(repo, capsys):
    # DVC's own sweep syntax: one queued experiment per value, or per combination
    sweep = ["--queue", "-S", "tokenize.vocab_size=4000,8000", "-S", "finetune.seeds=[1,2],[3,4]"]
    assert experiments.experiments(sweep) == [
        {"tokenize.vocab_size": v, "finetune.seeds": s} for v in (4000, 8000) for s in ([1, 2], [3, 4])
    ]
    assert main(["exp", *sweep]) == 0 and repo.ran == [sweep]  # DVC expands it again, as given
    capsys.readouterr()
    before = (repo.root / "params.yaml").read_bytes()
    for args, said in [
        (
            ["-S", "tokenize.vocab_size=4000,abc"],
            "experiment tokenize.vocab_size=abc: params.yaml: tokenize.vocab_size:",
        ),
        (["-S", "finetune.search_labels=[250],[250,500]"], "500 is not one of label_counts"),
        (["-S", "model.n_layer=range(0,3)"], "experiment model.n_layer=0: params.yaml: model.n_layer"),
    ]:
        assert main(["exp", "--queue", *args]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1 and "the sweep's experiment" in err, err
    assert main(["exp", "-S", "tokenize.vocab_size=choice(4000,8000)"]) == 2  # not queued
    assert "add --queue" in capsys.readouterr().err
    assert len(repo.ran) == 1 and (repo.root / "params.yaml").read_bytes() == before


def test_a_key_params_yaml_does_not_list_needs_a_plus_as_in_dvc(repo, capsys):
    text = (repo.root / "params.yaml").read_text()
    (repo.root / "params.yaml").write_text(text.replace("  vocab_size: 8000\n", ""))
    assert main(["exp", "-S", "tokenize.vocab_size=4000"]) == 2
    assert "add it with -S '+tokenize.vocab_size=4000'" in capsys.readouterr().err and repo.ran == []
    assert main(["exp", "--temp", "-S", "+tokenize.vocab_size=4000"]) == 0 and len(repo.ran) == 1


def test_accepted_overrides_go_on_to_dvc_exp_run_as_given(repo):
    args = [
        "--temp",
        "-S",
        "tokenize.vocab_size=4000",
        "--set-param=finetune.seeds=[1,2]",
        "-S",
        "~hf",
        "prepare",
    ]
    assert main(["exp", *args]) == 0
    assert repo.ran == [args]


def test_a_copy_refuses_untracked_data_naming_the_file_and_how_to_track_it(repo, capsys):
    assert main(["exp", "--temp", *FILES]) == 2
    err = capsys.readouterr().err
    assert "data/raw/mine.csv: not tracked" in err and "`git add data/raw/mine.csv`" in err
    assert "dvc add data/raw/mine.csv && git add data/raw/mine.csv.dvc" in err and repo.ran == []
    assert main(["exp", *FILES]) == 0  # the workspace sees the file: nothing to refuse
    subprocess.run([*GIT, "add", "data/raw/mine.csv"], cwd=repo.root, check=True)
    assert main(["exp", "--queue", *FILES]) == 0 and len(repo.ran) == 2


def test_a_preset_checks_the_overrides_beside_it(repo, capsys, monkeypatch):
    from tinytf.cli import presets

    monkeypatch.setattr(presets.subprocess, "run", experiments.subprocess.run)
    assert main(["preset", "tiny", "-S", "tokenize.kind=sentencepiece"]) == 2
    assert "tokenize.kind" in capsys.readouterr().err and repo.ran == []
    assert main(["preset", "tiny", *FILES]) == 2  # a temporary experiment: the file must be tracked
    assert "data/raw/mine.csv: not tracked" in capsys.readouterr().err
    assert main(["preset", "tiny", "--workspace", *FILES]) == 0 and len(repo.ran) == 1
    # the preset's cap on the user's own rows is said before the run; -S ...=0 lifts it, unsaid
    assert (
        "keeps the first 2000 rows of each split of your data (data/raw/mine.csv" in capsys.readouterr().err
    )
    lifted = ["-S", "prepare.sentiment.max_rows=0"]
    assert main(["preset", "tiny", "--workspace", *FILES, *lifted]) == 0
    assert "keeps the first" not in capsys.readouterr().err


HOLD = """
import sys, time
from tinytf.cli.workspace import workspace_lock
with workspace_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_run_in_the_workspace_is_refused_in_one_line(repo, capsys):
    # two runs at once each write params.yaml under the other: the second is refused before it writes
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(repo.root)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = (repo.root / "params.yaml").read_bytes()
        for args in (["exp", "-S", "tokenize.vocab_size=4000"], ["preset", "tiny", "--workspace"]):
            assert main(args) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"tinytf exp or preset (pid {holder.pid}) is running" in err, err
            assert ".dvc/tmp/tinytf-exp.lock" in err and "params.yaml is as it was" in err
        assert repo.ran == [] and (repo.root / "params.yaml").read_bytes() == before
    finally:
        holder.kill()
        holder.wait()
    assert main(["exp", "--temp", "-S", "tokenize.vocab_size=4000"]) == 0  # the lock ends with its process
    assert len(repo.ran) == 1


def changed_lines(before: str, after: str) -> list[str]:
    assert len(before.splitlines()) == len(after.splitlines())
    return [b for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]


def test_a_workspace_set_changes_exactly_its_line_atomically(repo, capsys, monkeypatch):
    # DVC's own -S rewrites about a hundred lines of params.yaml (nulls, lists, indents)
    import tinytf.io

    replaced = []
    real_replace = os.replace
    monkeypatch.setattr(
        tinytf.io.os, "replace", lambda a, b: replaced.append(Path(b).name) or real_replace(a, b)
    )
    before = (repo.root / "params.yaml").read_text()
    assert main(["exp", "-S", "tokenize.vocab_size=4000", "prepare"]) == 0
    assert repo.ran == [["prepare"]]  # DVC runs on the file as written, with no -S of its own
    after = (repo.root / "params.yaml").read_text()
    assert changed_lines(before, after) == ["  vocab_size: 4000"] and replaced == ["params.yaml"]
    assert "tinytf: params.yaml: tokenize.vocab_size=4000" in capsys.readouterr().err
    assert not [p.name for p in repo.root.iterdir() if p.name.endswith(".tmp")]
    # a list, a float YAML 1.1 reads as a string unless it has a dot, a string the stages' reader
    # would take for a boolean: each on its line, its comment kept, read back as given
    sets = ["finetune.seeds=[1,2]", "grid.lrs=[0.001,5e-05]", "hf.checkpoint='yes'"]
    assert main(["exp", *(a for s in sets for a in ("-S", s))]) == 0
    lines = changed_lines(after, (repo.root / "params.yaml").read_text())
    assert lines == [
        "  seeds: [1, 2]               # paired: a seed fixes the subset, head init and batch order of every start",
        '  checkpoint: "yes"                               # a folder, package:<module>/<folder>, or a hub name (roberta-base)',
        "  lrs: [0.001, 5.0e-05]",
    ], lines
    grid = yaml.safe_load((repo.root / "params.yaml").read_text())["grid"]
    hf = yaml.safe_load((repo.root / "params.yaml").read_text())["hf"]
    assert grid["lrs"] == [0.001, 5e-05] and hf["checkpoint"] == "yes"


def test_a_workspace_preset_writes_its_values_one_line_each(repo, monkeypatch):
    from tinytf.cli import presets

    monkeypatch.setattr(presets.subprocess, "run", experiments.subprocess.run)
    before = (repo.root / "params.yaml").read_text()
    tiny = presets.preset_values("tiny")
    assert main(["preset", "tiny", "--workspace", "-S", "tokenize.vocab_size=300"]) == 0
    assert repo.ran == [[]]  # no -S reaches DVC, nor --temp
    after = (repo.root / "params.yaml").read_text()
    read = flatten(yaml.safe_load(after))
    assert {k: read[k] for k in tiny} == {**tiny, "tokenize.vocab_size": 300}
    was = flatten(yaml.safe_load(before))
    differ = [k for k in read if read[k] != was[k]]
    assert len(changed_lines(before, after)) == len(differ)


def test_exp_in_a_clone_without_outputs_says_what_will_run_before_it_starts(repo, capsys):
    shutil.copy(REPO / "dvc.lock", repo.root / "dvc.lock")
    assert main(["exp", "--temp", "-S", "tokenize.vocab_size=4000"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "stage runs dvc.lock records (a matrix's cells each) have no outputs here" in err[0]
    assert err[1].endswith("tinytf preset tiny -S tokenize.vocab_size=4000")
    assert err[2].startswith("tinytf: exp run --temp") and len(repo.ran) == 1
