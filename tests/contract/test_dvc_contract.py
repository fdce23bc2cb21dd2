"""dvc.yaml tells the truth: a stage's deps hold every project file its script reaches, and a
stage reads only the params keys it declares (the stage scripts enforce it at run time; the
end-to-end run exercises every stage under that guard)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO
from tinytf.cli.deps import MARKER, closure, differences, is_code, write
from tinytf.params.config import load_params, narrow_params
from tinytf.params.schema import UndeclaredParam
from tinytf.train.protocol import curve_plan

STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


@pytest.mark.parametrize("name", sorted(STAGES))
def test_every_file_a_stage_reaches_is_a_dep_and_no_other_code(name):
    missing, stale = differences(REPO).get(name, ([], []))
    assert not missing, (
        f"stage {name} imports {missing}, which dvc.yaml does not list as deps (tinytf deps --write)"
    )
    assert not stale, f"stage {name} lists {stale} as deps, but its script never imports them"


def test_tinytf_deps_write_adds_an_import_to_the_stage_that_makes_it(tmp_path):
    (tmp_path / "stages").mkdir()
    (tmp_path / "tinytf").mkdir()
    (tmp_path / "tinytf/__init__.py").write_text("")
    (tmp_path / "tinytf/a.py").write_text("")
    (tmp_path / "tinytf/b.py").write_text("")
    (tmp_path / "stages/one.py").write_text("import tinytf.a\n")
    (tmp_path / "stages/two.py").write_text("import tinytf.b\n")
    marker = MARKER + "\n"
    (tmp_path / "dvc.yaml").write_text(
        "# the pipeline\nstages:\n"
        "  one:\n    cmd: python stages/one.py\n    deps:\n      - data/raw  # a data dep stays\n"
        f"{marker}      - stages/one.py\n      - tinytf/__init__.py\n      - tinytf/a.py\n"
        "    outs:\n      - out1\n"
        "  two:\n    cmd: python stages/two.py\n    deps:\n      - tinytf/b.py\n"  # code first: laid out
        "      - stages/two.py\n      - data/two\n      - tinytf/__init__.py\n    outs:\n      - out2\n"
    )
    assert differences(tmp_path) == {} and write(tmp_path) == ["two"]  # the layout alone is fixed
    two = (tmp_path / "dvc.yaml").read_text().split("  two:")[1]
    assert two.startswith(f"\n    cmd: python stages/two.py\n    deps:\n      - data/two\n{marker}")
    before = (tmp_path / "dvc.yaml").read_text()
    assert write(tmp_path) == []
    (tmp_path / "stages/one.py").write_text("import tinytf.a\nfrom tinytf import b\n")  # an added import
    assert differences(tmp_path) == {"one": (["tinytf/b.py"], [])}
    assert write(tmp_path) == ["one"] and differences(tmp_path) == {}
    after = (tmp_path / "dvc.yaml").read_text()
    assert after.startswith("# the pipeline\n") and "      - data/raw  # a data dep stays\n" in after
    assert after.split("  two:")[1] == before.split("  two:")[1]  # the other stage untouched
    assert yaml.safe_load(after)["stages"]["one"]["deps"] == [
        "data/raw",
        "stages/one.py",
        "tinytf/__init__.py",
        "tinytf/a.py",
        "tinytf/b.py",
    ]
    (tmp_path / "stages/one.py").write_text("import tinytf.a\n")  # and a removed one
    assert (
        write(tmp_path) == ["one"]
        and "tinytf/b.py" not in yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]["one"]["deps"]
    )


def test_every_stage_has_a_desc_and_its_data_deps_before_its_code():
    """`dvc stage list` describes each stage, and its deps read data flow first."""
    text = (REPO / "dvc.yaml").read_text(encoding="utf-8")
    for name, stage in STAGES.items():
        assert stage.get("desc"), f"stage {name} has no desc: for dvc stage list"
        deps = stage.get("deps", [])
        code = [is_code(d) for d in deps]
        assert code == sorted(code), f"stage {name}: a data dep comes after its code deps"
    assert text.count(MARKER) == sum(1 for s in STAGES.values() if any(is_code(d) for d in s.get("deps", [])))


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


def test_the_protocol_reads_the_params_through_the_declared_view():
    params = load_params(REPO / "params.yaml")
    keys = [f"finetune.{k}" for k in ("label_counts", "seeds")]
    assert curve_plan(narrow_params(params, keys, "stage 'x'", "params.yaml").finetune) == (
        curve_plan(params.finetune)
    )
    narrower = narrow_params(params, keys[:1], "stage 'x'", "params.yaml")
    with pytest.raises(UndeclaredParam, match="'finetune.seeds'"):
        curve_plan(narrower.finetune)


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
    from tinytf.report.facts import HISTORY, UPSTREAM

    deps = [d for d in STAGES["report"]["deps"] if isinstance(d, str)]
    assert HISTORY in deps  # committed, not a stage's output
    for name, upstream in UPSTREAM.items():
        assert any(upstream.path == d or upstream.path.startswith(d + "/") for d in deps), (
            name,
            upstream.path,
        )
        writer = STAGES[upstream.stage]
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in writer["outs"]]
        outs = [o.replace("${item.seed}", "{seed}") for o in outs]  # pretrain: a matrix over its seeds
        assert any(
            upstream.path == o or upstream.path.startswith(o + "/") or o.startswith(upstream.path + "/")
            for o in outs
        ), f"{upstream.path} is not an output of stage {upstream.stage}"


def test_every_stage_but_the_report_writes_its_run_record_as_an_output():
    """The report's run card reads data/runs/: each stage's record is a declared, cached output
    (restored with the stage's other outputs), named after the stage or its matrix cell."""
    for name, stage in STAGES.items():
        if name == "report":
            continue
        cmd = " ".join(stage["cmd"]) if isinstance(stage["cmd"], list) else stage["cmd"]
        record = re.search(r"--record '?(data/runs/[^' ]+\.json)'?", cmd)
        assert record, f"stage {name}: no --record data/runs/<name>.json"
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]
        assert record.group(1) in outs, f"stage {name}: {record.group(1)} is not in its outs"
        assert record.group(1).startswith(f"data/runs/{name.split('_')[0]}"), record.group(1)


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


def test_dvc_yaml_s_matrices_name_each_cell_as_its_reader_looks_it_up():
    """Both matrix studies find a cell's result by its cell_key: DVC's expansion of dvc.yaml (the
    grid's `lr${item.lr}` formats the float itself) must write exactly those names."""
    from dvc.repo import Repo

    from tinytf.analysis import grid, variants

    params = load_params(REPO / "params.yaml")
    with Repo(REPO) as repo:
        outs = {str(o.def_path) for s in repo.index.stages for o in s.outs}
    for cell in grid.cells(params.grid):
        assert f"data/grid/{grid.cell_key(**cell)}.result.json" in outs, cell
    v = params.variants
    for pos in v.pos_encodings:
        for merge in v.head_merges:
            for seed in v.seeds:
                assert f"data/variants/{variants.cell_key(pos, merge, seed)}.json" in outs
    for rank in params.grid.finalists:
        for seed in params.grid.finalist_seeds:
            assert f"data/grid_finalists/{grid.finalist_key(rank, seed)}.result.json" in outs


def test_the_dvc_plots_draw_the_starts_params_yaml_runs_in_the_tables_order():
    """DVC's top-level plots name their columns and files, and cannot read them from a list: they
    are the starts finetune.starts runs, in tinytf.params.starts's order (a run that adds one adds
    its column and, if it trains by epochs, its curve file here)."""
    from tinytf.params.starts import present, trained

    plots = {}
    for plot in yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]:
        if isinstance(plot, dict):
            plots.update(plot)
    runs = present(load_params(REPO / "params.yaml").finetune.starts)
    assert plots["label_curve"]["y"]["reports/dvc/label_curve.csv"] == [*runs, "tfidf_lr", "majority"]
    curves = [f"reports/dvc/finetune_{start}.csv" for start in runs if trained(start)]
    assert list(plots["finetune_validation_accuracy"]["y"]) == curves
