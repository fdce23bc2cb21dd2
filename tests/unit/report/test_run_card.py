import json

import pytest

from tinytf.errors import DataError
from tinytf.report.run_card import load_records, run_card

MACHINE = {"cpu": "AMD EPYC", "bf16_units": [], "cores": 2, "gpu": None}
VERSIONS = {"python": "3.11.2", "torch": "2.13.0", "dvc": "3.1", "mlflow": "3.2"}


def _record(stage, seconds, finished, commit="a" * 40, changed=(), **machine):
    return {
        "stage": stage,
        "seconds": seconds,
        "finished": finished,
        "commit": commit,
        "changed": list(changed),
        "machine": MACHINE | machine,
        "versions": VERSIONS,
    }


def test_the_card_sums_a_matrix_names_one_commit_and_machine_and_orders_by_finish(tmp_path):
    records = [
        _record("pretrain", 1200, "2026-01-01T00:30:00Z"),
        _record("grid", 30, "2026-01-01T00:31:00Z"),
        _record("prepare", 5, "2026-01-01T00:01:00Z"),
        _record("grid", 45, "2026-01-01T00:32:00Z"),
    ]
    for i, r in enumerate(records):
        (tmp_path / f"{i}.json").write_text(json.dumps(r))
    code, machine, versions, times = run_card(load_records(tmp_path))
    assert code == f"- Code: commit `{'a' * 12}`, code as committed."
    assert machine == "- Machine: AMD EPYC, 2 cores, no bf16 units; no GPU used."
    assert versions == "- Versions: Python 3.11.2, torch 2.13.0, dvc 3.1, mlflow 3.2."
    assert times.startswith(
        "- Wall time per stage, in the order they finished: prepare 5 s, pretrain 20.0 min, "
        "grid (2 cells) 75 s; 21.3 min in all"
    )


def test_stages_made_at_other_commits_or_machines_are_named_each():
    records = [
        _record("prepare", 5, "1"),
        _record("finetune", 600, "2", commit="b" * 40, changed=["params.yaml"], gpu="NVIDIA H100"),
    ]
    code, machine, _, _ = run_card(records)
    assert code == (
        f"- Code: commit `{'a' * 12}`, code as committed (prepare); commit `{'b' * 12}` with uncommitted "
        "changes to params.yaml (finetune)."
    )
    assert "no GPU used (prepare); AMD EPYC, 2 cores, no bf16 units; GPU NVIDIA H100 (finetune)." in machine
    assert run_card([]) == []


def test_a_record_that_is_not_one_is_refused_naming_the_file(tmp_path):
    (tmp_path / "bad.json").write_text('{"stage": "prepare"}')
    with pytest.raises(DataError, match=r"bad.json: not a stage run record \(KeyError"):
        load_records(tmp_path)


def test_the_card_names_the_precision_each_training_stage_ran_in():
    records = [_record("pretrain", 600, "1"), _record("finetune", 900, "2")]
    assert run_card(records, {"pretrain": "bf16", "finetune": "bf16"})[2] == "- Precision: bf16."
    mixed = run_card(records, {"pretrain": "bf16", "finetune": "fp32"})[2]
    assert mixed == "- Precision: bf16 (pretrain); fp32 (finetune)."
    assert len(run_card(records)) == 4  # no training stage's outputs: no line
