"""dvc.yaml tells the truth: a stage's deps hold every project file its script reaches, and a
stage reads only the params keys it declares (the stage scripts enforce it at run time; the
end-to-end run exercises every stage under that guard)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.imports import closure
from tests.helpers.paths import REPO
from tinytf.params.config import load_params, narrow_params
from tinytf.params.schema import UndeclaredParam

STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def scripts_of(stage: dict) -> list[Path]:
    """The stage script and every module its commands run (`python -m tinytf.params.check`)."""
    commands = [stage["cmd"]] if isinstance(stage["cmd"], str) else stage["cmd"]
    scripts = []
    for words in (command.split() for command in commands):
        scripts += [Path(w) for w in words if w.startswith("stages/") and w.endswith(".py")]
        scripts += [
            Path(*b.split(".")).with_suffix(".py")
            for a, b in zip(words, words[1:], strict=False)
            if a == "-m"
        ]
    return scripts


def is_code(path: str) -> bool:
    return path.endswith(".py") and path.startswith(("stages/", "tinytf/"))


@pytest.mark.parametrize("name", sorted(STAGES))
def test_every_file_a_stage_reaches_is_a_dep_and_no_other_code(name):
    stage = STAGES[name]
    reached = {str(p) for script in scripts_of(stage) for p in closure(script, REPO)}
    deps = {d for d in stage["deps"] if isinstance(d, str)}
    undeclared = sorted(reached - deps)
    assert not undeclared, f"stage {name} imports {undeclared}, which dvc.yaml does not list as deps"
    unreached = sorted(d for d in deps if is_code(d) and d not in reached)
    assert not unreached, f"stage {name} lists {unreached} as deps, but its script never imports them"


def test_closure_follows_imports_inside_functions(tmp_path):
    (tmp_path / "stages").mkdir()
    (tmp_path / "tinytf" / "train").mkdir(parents=True)
    for f in ("tinytf/__init__.py", "tinytf/train/__init__.py", "tinytf/train/loop.py"):
        (tmp_path / f).write_text("")
    (tmp_path / "tinytf/train/task.py").write_text("def f():\n    from tinytf.train import loop\n")
    (tmp_path / "stages/s.py").write_text("import helper\nfrom tinytf.train.task import f\n")
    (tmp_path / "stages/helper.py").write_text("")
    assert {str(p) for p in closure(Path("stages/s.py"), tmp_path)} == {
        "stages/s.py",
        "stages/helper.py",
        "tinytf/__init__.py",
        "tinytf/train/__init__.py",
        "tinytf/train/task.py",
        "tinytf/train/loop.py",
    }


def test_declared_view_refuses_an_undeclared_key():
    params = load_params(REPO / "params.yaml")
    view = narrow_params(params, ["model", "tokenize.max_length"], "stage 'x'", "params.yaml")
    assert view.model.d_model == params.model.d_model
    assert view.tokenize.max_length == params.tokenize.max_length
    with pytest.raises(UndeclaredParam, match="stage 'x' reads params key 'tokenize.vocab_size'"):
        _ = view.tokenize.vocab_size
    with pytest.raises(UndeclaredParam, match="'base'"):
        _ = view.base
    assert view.as_dict() == {"model": view.as_dict()["model"], "tokenize": {"max_length": 64}}


def test_a_method_of_the_params_reads_through_the_declared_view():
    params = load_params(REPO / "params.yaml")
    keys = [f"finetune.{k}" for k in ("label_counts", "seeds")]
    assert narrow_params(params, keys, "stage 'x'", "params.yaml").finetune.curve_plan() == (
        params.finetune.curve_plan()
    )
    narrower = narrow_params(params, keys[:1], "stage 'x'", "params.yaml")
    with pytest.raises(UndeclaredParam, match="'finetune.seeds'"):
        narrower.finetune.curve_plan()


def test_a_stage_reading_an_undeclared_key_stops_naming_it(tmp_path):
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    dvc["stages"]["probes"]["params"] = ["probes.seed"]  # the script also reads n, d, scale, tolerance
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(dvc))
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "stages/probes.py"),
            "--params",
            str(REPO / "params.yaml"),
            "--reports",
            "out",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"TINYTF_TRACKING": "0", "PATH": ""},
    )
    assert result.returncode == 2, result.stderr
    assert "stage 'probes' reads params key 'probes.n'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_declared_key_that_params_lacks_is_an_error():
    params = load_params(REPO / "params.yaml")
    with pytest.raises(Exception, match="declares params key 'model.widht'"):
        narrow_params(params, ["model.widht"], "stage 'x'", "params.yaml")


def test_every_file_the_report_reads_is_a_dep_of_report():
    from tinytf.report.facts import UPSTREAM

    deps = [d for d in STAGES["report"]["deps"] if isinstance(d, str)]
    for name, upstream in UPSTREAM.items():
        assert any(upstream.path == d or upstream.path.startswith(d + "/") for d in deps), (
            name,
            upstream.path,
        )
        writer = STAGES[upstream.stage]
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in writer["outs"]]
        assert any(
            upstream.path == o or upstream.path.startswith(o + "/") or o.startswith(upstream.path + "/")
            for o in outs
        ), f"{upstream.path} is not an output of stage {upstream.stage}"


def test_declared_view_logs_plain_values():
    params = load_params(REPO / "params.yaml")
    logged = narrow_params(params, ["pretrain.samples", "base.seed"], "stage 'x'", "params.yaml").as_dict()
    assert logged["pretrain"]["samples"][0] == {"name": "normal", "text": params.pretrain.samples[0].text}
    json.dumps(logged)  # what MLflow and the params hash receive


def test_dvc_s_sets_the_bring_your_own_data_keys_without_hydras_plus(tmp_path):
    """`dvc exp run -S key=value` edits only keys params.yaml has (a new one needs Hydra's `+`):
    the keys `source: files` reads are listed there as null, so `-S` reaches them as they are."""
    from dvc.utils.hydra import apply_overrides

    params = tmp_path / "params.yaml"
    params.write_text((REPO / "params.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    sets = {
        "prepare.sentiment.source": "files",
        "prepare.sentiment.files.train": "data/raw/r.csv",
        "prepare.sentiment.text_column": "review",
        "prepare.sentiment.label_column": "stars",
        "prepare.sentiment.encoding": "latin-1",
        "prepare.corpus.source": "files",
        "prepare.corpus.files.train": "data/raw/u.txt",
        "prepare.corpus.text_column": "body",
    }
    apply_overrides(str(params), [f"{key}={value}" for key, value in sets.items()])
    loaded = load_params(params)
    assert loaded.prepare.sentiment.files.train == "data/raw/r.csv"
    assert (loaded.prepare.sentiment.text_column, loaded.prepare.sentiment.label_column) == (
        "review",
        "stars",
    )
    assert loaded.prepare.sentiment.encoding == "latin-1" and loaded.prepare.corpus.text_column == "body"
