import subprocess
import sys

from tinytf.cli import main

from .conftest import REPO


def test_help_lists_the_subcommands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    for command in ("prepare", "tokenize", "preset"):
        assert command in out


def test_bad_override_exits_2_naming_the_key(capsys):
    assert main(["tokenize", "--params", str(REPO / "params.yaml"), "--set", "tokenize.vocab_size=-5"]) == 2
    assert "tokenize.vocab_size: must be >= 64, got -5" in capsys.readouterr().err


def test_stage_script_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text((REPO / "params.yaml").read_text().replace("tokenize:", "tokenise:"))
    result = subprocess.run(
        [sys.executable, str(REPO / "stages" / "prepare.py"), "--params", str(bad)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "unknown key 'tokenise' (did you mean 'tokenize'?)" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_preset_merges_and_keeps_comments(tmp_path):
    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    assert main(["preset", "tiny", "--params", str(target), "--presets-dir", str(REPO / "presets")]) == 0
    text = target.read_text()
    assert "vocab_size: 400" in text and "# Every knob of the pipeline" in text
    assert main(["preset", "nope", "--params", str(target), "--presets-dir", str(REPO / "presets")]) == 2


def test_count_params_prints_the_seed_lab_figures(capsys):
    assert main(["count-params", "--seed-lab"]) == 0
    out = capsys.readouterr().out
    for figure in ("988,000", "10,968,200", "402", "20,100", "10,050,201"):
        assert figure in out
    assert "the report equates it with the base's 10,968,200" in out


def test_score_names_a_missing_checkpoint(tmp_path, capsys):
    assert main(["score", "--model", str(tmp_path / "none.pt"), "hello"]) == 2
    assert "config file missing beside the checkpoint" in capsys.readouterr().err
