import subprocess

from tinytf.system import record


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_a_record_names_the_commit_the_changed_code_the_machine_and_the_tools(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "params.yaml").write_text("a: 1\n")
    (tmp_path / "notes.txt").write_text("x\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout
    clean = record.run_record("prepare", 12.34, tmp_path)
    assert clean["commit"] == head.strip() and clean["changed"] == [] and clean["seconds"] == 12.3
    (tmp_path / "params.yaml").write_text("a: 2\n")  # a temporary experiment's params, say
    (tmp_path / "notes.txt").write_text("y\n")  # not code: not named
    assert record.run_record("prepare", 1, tmp_path)["changed"] == ["params.yaml"]
    machine, versions = clean["machine"], clean["versions"]
    assert machine["cores"] >= 1 and machine["cpu"] and machine["gpu"] is None  # no CUDA used here
    assert set(versions) == {"python", "torch", "dvc", "mlflow"} and versions["torch"]
    assert clean["finished"].endswith("Z")


def test_outside_a_git_checkout_the_commit_is_none(tmp_path):
    assert record.code_state(tmp_path) == {"commit": None, "changed": []}
