import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.report_tree import fake_report_tree, fake_view
from tinytf.cli.main import main
from tinytf.errors import ParamsError
from tinytf.params.pipeline import stage_commands
from tinytf.params.schema import parse_overrides, set_dotted


def test_help_lists_the_subcommands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    for command in ("run", "count-params", "score", "preset", "champion"):
        assert command in out


def stage(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "stages" / script), *args], capture_output=True, text=True, cwd=tmp_path
    )


def test_bad_override_exits_2_naming_the_key(tmp_path):
    result = stage(
        tmp_path,
        "train_tokenizer.py",
        "--params",
        str(REPO / "params.yaml"),
        "--set",
        "tokenize.vocab_size=-5",
        "--prepared",
        "p",
        "--out",
        "o",
        "--report",
        "r.json",
    )
    assert result.returncode == 2
    assert "tokenize.vocab_size: must be >= 64, got -5" in result.stderr


def test_stage_script_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text((REPO / "params.yaml").read_text().replace("tokenize:", "tokenise:"))
    result = stage(
        tmp_path,
        "prepare.py",
        "--params",
        str(bad),
        "--out",
        "data/prepared",
        "--reports",
        "reports",
        "--raw",
        "data/raw",
    )
    assert result.returncode == 2
    assert "unknown key 'tokenise' (did you mean 'tokenize'?)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_every_stage_script_explains_itself(tmp_path):
    for script in sorted((REPO / "stages").glob("*.py")):
        if script.name == "common.py":
            continue
        result = stage(tmp_path, script.name, "--help")
        assert result.returncode == 0, script.name
        # the params it reads come from dvc.yaml, wherever it is run from
        assert (
            "Stage `" in result.stdout
            and "params (dvc.yaml):" in result.stdout
            and "--params" in result.stdout
        )


def test_run_expands_the_finalists_matrix_over_rank_and_seed(tmp_path, monkeypatch):
    """Round two: one command line per finalist rank x seed; the rank's cell is read from data/grid."""
    (tmp_path / "params.yaml").write_text(
        "grid: {finalists: [1, 2], finalist_seeds: [2, 3]}\npretrain: {seeds: [4, 5]}\n"
    )
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    commands = stage_commands("grid_finalists")[1::2]
    outs = [c[c.index("--out") + 1] for c in commands]
    assert outs == [f"data/grid_finalists/r{r}-s{s}" for r in (1, 2) for s in (2, 3)]
    assert all(c[c.index("--grid") + 1] == "data/grid" for c in commands)
    # the first of pretrain.seeds, as DVC reads ${pretrain.seeds[0]}: the body the grid fine-tunes
    assert all(c[c.index("--pretrained") + 1] == "data/models/pretrained/seed4.pt" for c in commands)


def test_run_expands_a_matrix_stage_from_params(tmp_path, monkeypatch):
    (tmp_path / "params.yaml").write_text(
        "grid: {optimizers: [AdamW, SGD], lrs: [0.01], batch_sizes: [8], epochs: [1]}\npretrain: {seeds: [1]}\n"
    )
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    commands = stage_commands("grid")
    # each cell checks params.yaml in a command of its own before the line that carries its values
    check = ["python", "-m", "tinytf.params.check", "params.yaml"]
    assert commands[0::2] == [check, check]
    commands = commands[1::2]
    assert [c[c.index("--optimizer") + 1] for c in commands] == ["AdamW", "SGD"]
    assert commands[0][-4:] == [
        "--out",
        "data/grid/AdamW-lr0.01-bs8-ep1",
        "--record",
        "data/runs/grid-AdamW-lr0.01-bs8-ep1.json",
    ]
    assert stage_commands("prepare") == [
        [
            "python",
            "stages/prepare.py",
            "--out",
            "data/prepared",
            "--reports",
            "data/reports",
            "--raw",
            "data/raw",
        ]
        + ["--record", "data/runs/prepare.json"]
    ]
    # --set picks the cells, as `dvc exp run -S` would: once the cells ignored it and ran AdamW
    # with `--set grid.optimizers=[SGD]` passed to a script that trains the cell it is given
    commands = stage_commands("grid", overrides={"grid.optimizers": ["SGD"], "grid.lrs": [0.1, 0.2]})[1::2]
    assert [c[c.index("--out") + 1] for c in commands] == [
        "data/grid/SGD-lr0.1-bs8-ep1",
        "data/grid/SGD-lr0.2-bs8-ep1",
    ]


def test_pretrain_launcher_is_no_part_of_the_command(tmp_path, monkeypatch):
    # pretrain's command once started with ${pretrain.launcher}, shell text DVC ran as given
    # (`python; touch X` ran touch); now the stage starts itself under the checked list
    (tmp_path / "params.yaml").write_text(
        "pretrain: {launcher: [torchrun, --nproc_per_node=2], seeds: [1, 2]}\n"
    )
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    commands = stage_commands("pretrain")[1::2]  # one run per pretrain.seeds, each after the params check
    assert [c[:2] for c in commands] == [["python", "stages/pretrain.py"]] * 2
    assert [c[c.index("--seed") + 1] for c in commands] == ["1", "2"]


def test_run_refuses_a_malformed_set_before_running_anything(tmp_path, monkeypatch, capsys):
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["run", "grid", "--set", "grid.optimizers"]) == 2
    err = capsys.readouterr().err
    assert "--set 'grid.optimizers': expected KEY=VALUE" in err and "+ " not in err
    # a scalar where the matrix needs a list (once a traceback from itertools.product), a misspelt
    # key (once the params.yaml cells, announced before the first one refused it)
    for override, message in (
        ("grid.lrs=0.1", "grid.lrs"),
        ("grid.optimizer=[SGD]", "did you mean 'grid.optimizers'"),
    ):
        assert main(["run", "grid", "--set", override]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and "+ " not in err, err


def test_run_names_an_unknown_stage(tmp_path, monkeypatch, capsys):
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["run", "pretrian"]) == 2
    assert "no stage 'pretrian'" in capsys.readouterr().err


def test_preset_is_dvc_exp_run_arguments_checked_first_and_never_edits_params(tmp_path, capsys):
    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    before = target.read_text()
    presets = ["--params", str(target), "--presets-dir", str(REPO / "presets")]
    assert main(["preset", "tiny", "--print", *presets]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "model.d_model=32" in printed and 'variants.head_merges=["concat"]' in printed
    assert target.read_text() == before
    assert main(["preset", "nope", *presets]) == 2
    bad = tmp_path / "presets"
    bad.mkdir()
    (bad / "typo.yaml").write_text("model: {d_modle: 8}\n")
    capsys.readouterr()
    assert main(["preset", "typo", "--params", str(target), "--presets-dir", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"preset {bad / 'typo.yaml'}:" in err and "unknown key 'model.d_modle'" in err, err


def test_preset_export_copies_the_report_only_when_params_hold_the_presets_values(tmp_path, capsys):
    import json

    import yaml

    reports = tmp_path / "reports"
    fake_report_tree(reports)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    target = tmp_path / "params.yaml"
    target.write_text(yaml.safe_dump(params))
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "small.yaml").write_text("model: {d_model: 64}\nfinetune: {seeds: [1, 2]}\n")
    export = ["preset", "small", "--export", "--params", str(target), "--presets-dir", str(presets)]
    from tinytf.cli import presets as preset_module

    def call():
        return preset_module.export_report("small", target, presets, reports)

    with pytest.raises(
        ParamsError, match=r"model.d_model is 128, preset 'small' sets 64: apply the preset's run"
    ):
        call()
    assert not (reports / "presets").exists() or not any((reports / "presets").iterdir())
    params["model"]["d_model"], params["finetune"]["seeds"] = 64, [1, 2]
    target.write_text(yaml.safe_dump(params))
    out = call()
    # written from the exported view; the stages' own files are not exported: their links become
    # text, so none is broken
    readme = (out / "README.md").read_text()
    assert readme == preset_module.preset_readme(out) and (out / "readme.json").exists()
    assert "- [tables/a.md](tables/a.md): the table a" in readme
    assert "Written by the stages themselves: `reports/data.md`." in readme
    assert out == reports / "presets" / "small"
    assert (out / "summary.json").read_text() == "finetune/summary.json" and (out / "tables/a.md").exists()
    assert (out / "variants.json").read_text() == "variants/summary.json"
    assert json.loads((out / "preset.json").read_text()) == {"model.d_model": 64, "finetune.seeds": [1, 2]}
    fake_view(reports, notes=("again",))
    call()  # a second export replaces the first whole
    assert "\n- again\n" in (out / "README.md").read_text()
    assert sorted(p.name for p in (reports / "presets").iterdir()) == ["small"]
    assert main(export[:3] + ["--params", str(tmp_path / "none.yaml"), "--presets-dir", str(presets)]) == 2


def test_preset_export_from_a_gpu_study_folder_checks_the_params_it_ran_with(tmp_path, monkeypatch, capsys):
    """A GPU machine without DVC: gpu_study.sh's report/ and params.yaml stand for the workspace's."""
    study = tmp_path / "study"
    fake_report_tree(study / "report")
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "small.yaml").write_text("model: {d_model: 64}\n")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    (study / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    export = ["preset", "small", "--export", "--from", str(study), "--presets-dir", str(presets)]
    assert main(export) == 2  # the study ran with the default d_model, not the preset's
    assert "model.d_model is 128, preset 'small' sets 64" in capsys.readouterr().err
    params["model"]["d_model"] = 64
    (study / "params.yaml").write_text(yaml.safe_dump(params))
    assert main(export) == 0  # the workspace's own params.yaml is not read
    out = tmp_path / "reports" / "presets" / "small"
    assert capsys.readouterr().out.strip() == str(Path("reports/presets/small"))
    assert (out / "summary.json").read_text() == "finetune/summary.json" and (out / "README.md").exists()
    assert not (study / "report" / "presets").exists()
    assert (
        main(["preset", "small", "--export", "--from", str(tmp_path / "none"), "--presets-dir", str(presets)])
        == 2
    )
    assert "not a folder gpu_study.sh wrote" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["preset", "small", "--from", str(study)])
    assert "--from FOLDER goes with --export" in capsys.readouterr().err


def test_count_params_prints_the_course_lab_figures(capsys):
    assert main(["count-params", "--course-lab"]) == 0
    out = capsys.readouterr().out
    for figure in ("988,000", "10,968,200", "402", "20,100", "10,050,201"):
        assert figure in out
    assert "the report equates it with the base's 10,968,200" in out
    assert main(["count-params", "--seed-lab"]) == 0  # the option's earlier name
    assert capsys.readouterr().out == out


def test_score_names_a_missing_checkpoint(tmp_path, capsys):
    assert main(["score", "--model", str(tmp_path / "none.pt"), "hello"]) == 2
    assert f"{tmp_path / 'none.pt'}: no such file (the pretrained model)" in capsys.readouterr().err


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch):
    """A workspace before any run: dvc.yaml and params.yaml, no data/ and no mlflow.db."""
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_TRACKING_URI", "DVC_ROOT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_score_before_any_run_names_the_stage_that_makes_its_model(fresh_clone, capsys):
    assert main(["score", "the market fell"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("tinytf: error: data/models/pretrained/seed1.pt: no pretrained model here yet; ")
    assert "`dvc repro pretrain` makes it" in line and "`dvc exp apply EXP`" in line
    (fresh_clone / "data/models/pretrained").mkdir(parents=True)
    (fresh_clone / "data/models/pretrained/seed1.pt").write_bytes(b"")
    assert main(["score", "the market fell"]) == 2
    assert (
        "data/tokenizer.json: no tokenizer here yet; `dvc repro tokenize` makes it" in capsys.readouterr().err
    )


def test_run_before_the_stages_it_reads_names_the_one_to_run(fresh_clone, monkeypatch, capsys):
    from tinytf.cli.inputs import refuse_missing_inputs

    monkeypatch.setattr(subprocess, "call", lambda argv: pytest.fail(f"ran {argv}"))
    assert main(["run", "grid"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "grid reads data/models/pretrained/seed1.pt (and " in line
    assert "`dvc repro pretrain` makes it, and `dvc repro grid` runs grid after everything it reads" in line
    # a stage that reads nothing made (check_params's mark only orders DVC's runs) is not refused
    refuse_missing_inputs("probes")
    refuse_missing_inputs("prepare")


def test_predict_before_anything_was_registered_names_the_commands_that_register(fresh_clone, capsys):
    assert main(["predict", "a gripping film"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert (
        f"{fresh_clone / 'mlflow.db'}: no model is registered here yet; `tinytf preset tiny` registers"
        in line
    )
    assert "`make repro` the @champion" in line and not (fresh_clone / "mlflow.db").exists()


def _show_entry(rev, name, params, accuracy):
    """One revision as `dvc exp show --json` gives it."""
    metrics = {
        "test": {"accuracy": accuracy},
        "pretrained_minus_scratch": {
            "estimate": 0.02,
            "ci95_low": -0.01,
            "ci95_high": 0.05,
            "p_value": 0.0412,
            "p_holm": 0.128,
            "sources": "pretraining run, seed, movie",
            "verdict": "no detectable difference",
        },
        "pretrained_minus_tfidf": {"estimate": -0.03, "p_value": 0.001, "p_holm": 0.004, "verdict": "lower"},
        "label_curve": {"all": {"pretrained": 0.7, "scratch": 0.68, "tfidf_lr": 0.71}},
        "lm": {"validation_perplexity": 123.4},
    }
    return {
        "rev": rev,
        "name": name,
        "data": {
            "params": {"params.yaml": {"data": params}},
            "metrics": {"reports/headline.json": {"data": metrics}},
        },
    }


def _default_and_two_experiments():
    """The committed params.yaml, the tiny preset's values over it, and a sweep of grid.lrs."""
    import copy

    from tinytf.cli.presets import set_args

    default = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    tiny = copy.deepcopy(default)
    pairs = set_args("tiny", REPO / "params.yaml", REPO / "presets")[1::2]
    for dotted, value in parse_overrides(pairs).items():
        set_dotted(tiny, dotted, value)
    sweep = copy.deepcopy(default)
    sweep["grid"]["lrs"] = [0.001, 0.01, 0.003]
    head = _show_entry("workspace", None, default, 0.75)
    head["experiments"] = [
        {"revs": [_show_entry("a" * 40, "tiny-preset-run", tiny, 0.61)]},
        {"revs": [_show_entry("c" * 40, "lrs-sweep", sweep, 0.76)]},
    ]
    return [head, _show_entry("b" * 40, "main", default, 0.75)]


def test_compare_fits_120_characters_with_the_headline_and_the_params_that_differ():
    from tinytf.cli.compare import WIDTH, format_table, rows_from_show, table

    rows = rows_from_show(_default_and_two_experiments())
    columns, left_out, shared = table(rows, stale=set())
    text = format_table(columns, left_out, shared, set())
    assert max(map(len, text.splitlines())) <= WIDTH == 120
    headers = [c[0] for c in columns]
    assert headers[:6] == ["experiment", "test_acc", "gain", "p_holm", "tfidf_lr", "lm_ppl"]
    assert columns[3][1] == "0.128"  # the Holm p the report's verdict rests on, not the raw 0.0412
    assert [c[1:] for c in columns[:2]] == [
        ["workspace", "tiny-preset-run", "lrs-sweep", "main"],
        ["0.75", "0.61", "0.76", "0.75"],
    ]
    # params named by their full key (as -S takes it), and only those that differ
    assert "grid.lrs" in headers + left_out and "model.d_model" in headers + left_out
    assert all("." in h for h in headers[6:]) and "model.arch" not in headers + left_out
    assert "more params differ (tinytf compare --wide shows them): " in text and left_out
    # each experiment's first change is shown: the sweep's one key beside the preset's thirty
    assert {"grid.lrs", "prepare.corpus.max_rows"} <= set(headers)
    wide, none_left, _ = table(rows, stale=set(), wide=True)
    assert none_left == [] and {"pretrained", "scratch", *left_out} <= {c[0] for c in wide}
    assert {"ci_low", "ci_high", "p", "verdict", "vs_tfidf"} <= {c[0] for c in wide}


def test_compare_cuts_a_long_name_and_value_but_not_with_wide():
    from tinytf.cli.compare import CELL_WIDTH, NAME_WIDTH, rows_from_show, table

    show = _default_and_two_experiments()
    show[0]["experiments"][1]["revs"][0]["name"] = "a-sweep-of-three-learning-rates"
    rows = rows_from_show(show)
    columns, _, _ = table(rows, stale=set())
    assert columns[0][3] == "a-sweep-of-three-…" and len(columns[0][3]) == NAME_WIDTH
    lrs = next(c for c in columns if c[0] == "grid.lrs")
    assert lrs[3] == "[0.001,0.01,0…" and len(lrs[3]) == CELL_WIDTH
    wide, _, _ = table(rows, stale=set(), wide=True)
    assert wide[0][3] == "a-sweep-of-three-learning-rates"
    assert next(c for c in wide if c[0] == "grid.lrs")[3] == "[0.001,0.01,0.003]"


def test_compare_shows_no_metrics_for_a_run_whose_stages_did_not_all_run():
    from tinytf.cli.compare import format_table, rows_from_show, table

    rows = rows_from_show(_default_and_two_experiments())
    columns, left_out, shared = table(rows, stale={"tiny-preset-run"})
    assert [c[2] for c in columns[1:6]] == ["-"] * 5 and columns[1][1] == "0.75"
    text = format_table(columns, left_out, shared, {"tiny-preset-run"})
    assert "no metrics (a stage did not run with these params): tiny-preset-run" in text


def _tiny_experiments(changes: list[tuple[str, object]]):
    """`dvc exp show --json` as DVC 3 gives it: the workspace, then main with one experiment per
    change, each the tiny preset over the committed params.yaml plus its own `key=value`."""
    import copy

    from tinytf.cli.presets import set_args

    default = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    tiny = copy.deepcopy(default)
    pairs = set_args("tiny", REPO / "params.yaml", REPO / "presets")[1::2]
    for dotted, value in parse_overrides(pairs).items():
        set_dotted(tiny, dotted, value)
    main_entry = _show_entry("b" * 40, "main", default, 0.75)
    main_entry["experiments"] = []
    for number, (key, value) in enumerate(changes):
        params = copy.deepcopy(tiny)
        set_dotted(params, key, value)
        rev = _show_entry(f"{number}" * 40, f"tiny-{number}", params, 0.6 + number / 100)
        main_entry["experiments"].append({"revs": [rev], "name": f"tiny-{number}"})
    return [_show_entry("workspace", None, default, 0.75), main_entry]


def test_compare_ranks_what_tells_five_tiny_experiments_apart_and_names_what_they_share():
    from tinytf.cli.compare import WIDTH, format_table, rows_from_show, table

    lrs = [[0.001], [0.003], [0.01], [0.03], [0.1]]
    show = _tiny_experiments([("grid.lrs", lr) for lr in lrs[:4]] + [("grid.batch_sizes", [8])])
    rows = rows_from_show(show)
    assert [row["experiment"] for row in rows] == [False, False, True, True, True, True, True]
    columns, left_out, shared = table(rows, stale=set())
    headers = [c[0] for c in columns]
    # the swept key first (four values among the experiments), then the one other change
    assert headers[6:8] == ["grid.lrs", "grid.batch_sizes"] and left_out == []
    assert columns[6][3:] == ["[0.001]", "[0.003]", "[0.01]", "[0.03]", "[0.01]"]  # the last: the preset's
    # the tiny preset's keys, alike in every experiment, are named below, not columns
    assert {"model.d_model", "prepare.sentiment.max_rows", "tokenize.vocab_size"} <= set(shared)
    assert not set(shared) & set(headers)
    text = format_table(columns, left_out, shared, set())
    assert f"set alike in every experiment, not in every row: {len(shared)} params of prepare, " in text
    assert max(map(len, text.splitlines())) <= WIDTH
    wide, _, none_shared = table(rows, stale=set(), wide=True)
    assert none_shared == [] and set(shared) <= {c[0] for c in wide}


def test_compare_shows_the_one_grid_key_two_experiments_differ_in():
    from tinytf.cli.compare import rows_from_show, table

    rows = rows_from_show(_tiny_experiments([("grid.batch_sizes", [8]), ("grid.batch_sizes", [32])]))
    columns, _, shared = table(rows, stale=set())
    assert columns[6][0] == "grid.batch_sizes" and "model.d_model" in shared


def test_compare_a_b_puts_two_experiments_side_by_side(monkeypatch, capsys):
    from tinytf.cli import compare, dvc_quiet

    show = _tiny_experiments([("grid.batch_sizes", [8]), ("grid.lrs", [0.003])])
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=json.dumps(show), stderr="")

    monkeypatch.setattr(compare.subprocess, "run", run)
    monkeypatch.setattr(dvc_quiet, "dvc_executable", lambda: "dvc")
    monkeypatch.setattr(compare, "is_stale", lambda rev, reader: False)
    assert main(["compare", "tiny-0", "--rev", "HEAD", "1111"]) == 0
    assert calls == [["dvc", "exp", "show", "--json", "--rev", "HEAD"]]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["tiny-0", "tiny-1"]
    assert lines[1].split() == ["test_acc", "0.6", "0.61"]
    params = {
        line.split()[0]: line.split()[1:]
        for line in lines[1 + len(compare.HEADLINE) + len(compare.WIDE_HEADLINE) :]
        if not line.startswith(("metrics", " "))
    }
    assert params == {"grid.lrs": ["[0.01]", "[0.003]"], "grid.batch_sizes": ["[8]", "[16]"]}
    assert main(["compare", "tiny-0", "nothing-such"]) == 2
    err = capsys.readouterr().err
    assert "no experiment 'nothing-such'" in err and "tiny-1" in err and len(err.splitlines()) == 1
    assert main(["compare", "tiny-0"]) == 2
    assert "compare takes two experiments, A B, or none" in capsys.readouterr().err


def test_a_lock_that_disagrees_with_its_params_or_itself_is_stale():
    from tinytf.cli.freshness import defined_stages, is_stale, stale_stages

    dvc_file = {
        "stages": {
            "prepare": {"cmd": "p"},
            "grid": {"matrix": {"lr": "${grid.lrs}", "bs": [32]}, "cmd": "g"},
        }
    }
    params = {"prepare": {"max_rows": 0}, "grid": {"lrs": [0.001, 0.01]}}
    assert defined_stages(dvc_file, params) == ["prepare", "grid@0.001-32", "grid@0.01-32"]
    out = {"path": "data/prepared", "md5": "a.dir"}

    def lock(max_rows="0", read="a.dir", cells=("0.001", "0.01")):
        stages = {"prepare": {"params": {"params.yaml": {"prepare.max_rows": max_rows}}, "outs": [out]}}
        for lr in cells:  # DVC writes 1e-3 as a number, YAML 1.1 would read it as a string
            stages[f"grid@{lr}-32"] = {
                "params": {"params.yaml": {"grid": {"lrs": ["1e-3", 0.01]}}},
                "deps": [{"path": "data/prepared", "md5": read}],
            }
        return {"stages": stages}

    defined = defined_stages(dvc_file, params)
    assert stale_stages(lock(max_rows=0), params, defined) == []
    assert stale_stages(lock(max_rows=300), params, defined) == ["prepare"]
    assert stale_stages(lock(read="b.dir"), params, defined) == ["grid@0.001-32", "grid@0.01-32"]
    assert stale_stages(lock(cells=("0.001",)), params, defined) == ["grid@0.01-32"]
    files = {"dvc.lock": yaml.safe_dump(lock()), "params.yaml": yaml.safe_dump(params)}
    files["dvc.yaml"] = yaml.safe_dump(dvc_file, sort_keys=False)
    assert not is_stale("abc", lambda rev, path: files[path])
    assert is_stale("abc", lambda rev, path: None if path == "dvc.lock" else files[path])


@pytest.fixture(scope="module")
def lm_files(tmp_path_factory):
    """A tiny causal LM and a WordPiece tokenizer (its normalizer drops control characters)."""
    from tests.helpers.model_fixtures import build
    from tinytf.data.tokenizer import train_tokenizer
    from tinytf.model.checkpoint import save_model
    from tinytf.params.config import TokenizeParams

    root = tmp_path_factory.mktemp("score")
    tokenizer = train_tokenizer(
        ["the cat sat on the mat"] * 50, TokenizeParams(kind="wordpiece", vocab_size=64)
    )
    tokenizer.save(str(root / "tokenizer.json"))
    save_model(root / "model.pt", build(vocab_size=tokenizer.get_vocab_size(), causal=True))
    return ["--model", str(root / "model.pt"), "--tokenizer", str(root / "tokenizer.json")]


def test_score_reads_texts_and_files(lm_files, tmp_path, capsys):
    (tmp_path / "long.txt").write_text("the cat sat\non the mat\n" * 50, encoding="utf-8")
    assert main(["score", *lm_files, "the cat", "--file", str(tmp_path / "long.txt")]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.endswith("(2 tokens)  the cat") and "(300 tokens)  the cat sat on the mat the cat" in second


def test_score_refuses_a_text_with_nothing_to_score(lm_files, tmp_path, capsys):
    # each once printed `perplexity 1.00 (0 tokens)`, or a traceback
    (tmp_path / "latin1.txt").write_bytes("na\xefve".encode("latin-1"))
    (tmp_path / "nul.txt").write_bytes(b"\x00\x00\n")
    for args, message in (
        ([""], "text 1 is empty"),
        (["the cat", "  \n "], "text 2 is only whitespace"),
        (["the cat", "\u0301"], "text 2 ('\u0301') gives no tokens under"),  # a lone accent, stripped
        # only invisible characters (issue 72): not blank to str.strip(), nothing to a reader
        (["the cat", "\x01\x02"], "text 2 is only invisible characters (U+0001, U+0002)"),
        (["\u200b\u200d"], "text 1 is only invisible characters (U+200B, U+200D)"),
        (["--file", str(tmp_path / "nul.txt")], "nul.txt is only invisible characters (U+0000)"),
        (["--file", str(tmp_path / "latin1.txt")], "latin1.txt: byte 0xef at offset 2 is not valid UTF-8"),
        (["\udcff"], "text 1: byte 0xff is not valid UTF-8"),
        ([], "no text given"),
    ):
        assert main(["score", *lm_files, *args]) == 2, args
        out, err = capsys.readouterr()
        assert message in err and len(err.splitlines()) == 1 and not out, (args, err)


def test_score_refuses_bytes_that_are_not_utf8_through_the_console_script(lm_files):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "tinytf.cli", "score", *lm_files, b"\xff"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "text 1: byte 0xff is not valid UTF-8" in result.stderr and len(result.stderr.splitlines()) == 1


def test_score_names_a_damaged_checkpoint(lm_files, tmp_path, capsys):
    import json
    import shutil
    from pathlib import Path

    model = Path(lm_files[1])
    shutil.copy(model.with_suffix(".json"), tmp_path / "model.json")
    (tmp_path / "model.pt").write_bytes(model.read_bytes()[:1000])  # a copy cut short
    assert main(["score", "--model", str(tmp_path / "model.pt"), *lm_files[2:], "the cat"]) == 2
    err = capsys.readouterr().err
    # the digest its JSON records refuses it first (issue 57); without one, the zip check does
    assert (
        f"{tmp_path / 'model.pt'}: damaged: its sha256 is not the one" in err and len(err.splitlines()) == 1
    )
    meta = json.loads((tmp_path / "model.json").read_text())
    (tmp_path / "model.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "sha256"}))
    assert main(["score", "--model", str(tmp_path / "model.pt"), *lm_files[2:], "the cat"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'model.pt'}: damaged or not a checkpoint" in err and len(err.splitlines()) == 1


def test_preset_values_reach_dvc_as_the_numbers_they_are():
    import yaml

    from tinytf.cli.presets import set_args, yaml_value

    # YAML 1.1, as DVC reads -S values, takes 5e-05 for a string; 5.0e-05 is the number
    for value in (5e-05, [5e-05, 0.001], 1e-4, 3, "x", True, ["concat", "reweight"], 2.5e-07):
        assert yaml.safe_load(yaml_value(value)) == value, value
    args = set_args("minilm", REPO / "params.yaml", REPO / "presets")
    assert "grid.lrs=[2.0e-05, 5.0e-05, 0.0001]" in args


@pytest.mark.parametrize("name", sorted(p.stem for p in (REPO / "presets").glob("*.yaml")))
def test_every_committed_preset_validates_against_params(name):
    from tinytf.cli.presets import set_args

    args = set_args(name, REPO / "params.yaml", REPO / "presets")  # a bad key or value raises, naming it
    assert args and args[::2] == ["-S"] * (len(args) // 2)


@pytest.mark.parametrize(
    "text, refused",
    [
        ("\u200b", True),
        ("\u200b \u200c\u200d\u2060\ufeff", True),
        ("\x00\t", True),
        ("\u3164\u115f", True),  # Hangul fillers draw nothing
        ("\u2800", True),  # the blank Braille pattern
        ("\ufe0f", True),  # a variation selector with nothing to vary
        ("a\u200bb", False),
        ("\U0001f469\u200d\U0001f4bb", False),  # an emoji joined by a ZWJ is visible
        ("\u0301", False),  # a lone accent shows; the tokenizer's check decides
        ("", False),  # empty: refuse_blank's words, not these
    ],
)
def test_a_text_of_only_invisible_characters_is_refused(text, refused):
    from tinytf.cli.texts import refuse_invisible
    from tinytf.errors import DataError

    if refused:
        with pytest.raises(DataError, match="text 1 is only"):
            refuse_invisible("text 1", text)
    else:
        refuse_invisible("text 1", text)


@pytest.mark.parametrize(
    "link",
    [
        "report/tables/secret.md",  # a file in a folder the export copies whole
        "report/metrics.json",  # a file the export copies by name
        "report/plots",  # a whole folder
        "params.yaml",  # read, and its text could reach a message
    ],
)
def test_preset_export_from_a_folder_refuses_a_link_out_of_it(tmp_path, monkeypatch, capsys, link):
    """Issue 72: a link to a 0600 file outside --from DIR put its text into reports/presets/NAME/."""
    study = tmp_path / "study"
    fake_report_tree(study / "report")
    (study / "report" / "plots").mkdir(exist_ok=True)
    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "small.yaml").write_text("model: {d_model: 64}\n")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["model"]["d_model"] = 64
    (study / "params.yaml").write_text(yaml.safe_dump(params))
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("model: {d_model: 64}\n# a password\n")
    (secret / "key").chmod(0o600)
    path = study / link
    if path.is_dir():
        shutil.rmtree(path)
    path.unlink(missing_ok=True)
    path.symlink_to(secret if link == "report/plots" else secret / "key")
    # and a link that stays inside the folder is copied as before
    (study / "report" / "tables" / "inside.md").symlink_to(study / "report" / "readme.json")
    monkeypatch.chdir(tmp_path)
    export = ["preset", "small", "--export", "--from", str(study), "--presets-dir", str(presets)]
    assert main(export) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"tinytf: error: {path}: a symbolic link that leads out of {study}; the export copies only what is "
        "inside it: put the file itself there"
    ]
    assert "secret" not in err.replace(str(path), "") and not (tmp_path / "reports").exists()
    path.unlink()
    if link == "report/plots":
        path.mkdir()
    elif link == "params.yaml":
        path.write_text(yaml.safe_dump(params))
    else:
        shutil.copy(study / "report" / "readme.json", path)
    assert main(export) == 0, capsys.readouterr().err
    assert (tmp_path / "reports/presets/small/tables/inside.md").exists()


def test_a_password_in_the_tracking_uri_is_never_printed(monkeypatch, capsys):
    """Issue 72: `tinytf predict` printed MLFLOW_TRACKING_URI whole, password and all."""
    import socket

    with socket.socket() as free:  # a port nothing listens on: the server "does not answer"
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://bob:s3cr%40et@127.0.0.1:{port}")
    for command in (["predict", "a gripping film"], ["champion", "show"], ["serve", "--port", "0"]):
        assert main(command) == 2, command
        out, err = capsys.readouterr()
        assert "s3cr" not in out + err, (command, err)
        assert f"http://bob:***@127.0.0.1:{port}: the tracking server does not answer" in err, err


@pytest.mark.parametrize(
    "text, shown",
    [
        ("https://user:pw@host:5000/x", "https://user:***@host:5000/x"),
        ("http://u:p@ss@host/x", "http://u:***@host/x"),  # an unencoded @ in the password
        ("postgresql+psycopg://me:pw@db/mlflow", "postgresql+psycopg://me:***@db/mlflow"),
        ("https://TOKEN@host", "https://***@host"),  # a user alone is often a token
        ("sqlite:////home/me/mlflow.db", "sqlite:////home/me/mlflow.db"),
        ("https://host/a@b and mail@example.org", "https://host/a@b and mail@example.org"),
    ],
)
def test_uris_are_redacted(text, shown):
    from tinytf.cli.urls import redacted

    assert redacted(text) == shown
