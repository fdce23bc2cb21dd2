"""DDP under torchrun: two CPU processes (gloo) train what one process trains.

Each run is a real `torchrun --nproc_per_node=2` (or a plain `python`) process pair running the
real loop; the worker (tests/helpers/ddp_worker.py) writes rank 0's losses. Dropout is 0 in these runs:
each process draws its own masks, so only a deterministic model can be compared step by step.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.lm_fixtures import make_sentiment_dir
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_sentiment_dir(tmp_path_factory.mktemp("ddp"), dropout=0.0)


def launch(tail: list[str], processes: int, torchrun: bool = False, check: bool = True):
    """`python <tail>`, under `torch.distributed.run --nproc_per_node N` when N > 1 or `torchrun`
    (as dvc.yaml runs a stage with a torchrun launcher, 1 process included)."""
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(processes),
        "--master_port",
        "0",
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        "127.0.0.1:0",
    ]
    command = (launcher if processes > 1 or torchrun else [sys.executable]) + tail
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TINYTF_TRACKING": "0"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def run(task, data, state, result, processes, crash=None, check=True):
    tail = ["-m", "tests.helpers.ddp_worker", task, str(data), str(state), str(result)] + (
        [str(crash)] if crash else []
    )
    return launch(tail, processes, check=check)


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    """The result file of `task` run start to end in `processes` processes, run once per module:
    the curve tests and the resume test compare against the same runs."""
    done: dict[tuple[str, int], Path] = {}

    def result(task: str, processes: int) -> Path:
        if (task, processes) not in done:
            folder = tmp_path_factory.mktemp(f"{task}-{processes}")
            run(task, data, folder / "state.pt", folder / "result.json", processes=processes)
            done[task, processes] = folder / "result.json"
        return done[task, processes]

    return result


def losses(result: Path, key: str, field: str) -> list[float]:
    return [row[field] for row in json.loads(result.read_text())[key]]


@pytest.mark.parametrize(
    ("task", "key", "field"),
    [("pretrain", "steps", "train_loss"), ("finetune", "history", "validation_loss")],
)
def test_two_processes_follow_the_one_process_loss_curve(uninterrupted, task, key, field):
    one, two = uninterrupted(task, 1), uninterrupted(task, 2)
    assert [json.loads(p.read_text())["world_size"] for p in (one, two)] == [1, 2]
    single, double = losses(one, key, field), losses(two, key, field)
    assert len(single) == len(double) > 1
    assert double == pytest.approx(single, rel=2e-4)
    # and not trivially: the curve moves
    assert single[0] != pytest.approx(single[-1], rel=1e-2)


def test_finetune_train_figures_count_every_rank(uninterrupted):
    one, two = uninterrupted("finetune", 1), uninterrupted("finetune", 2)
    assert losses(two, "history", "train_accuracy") == pytest.approx(losses(one, "history", "train_accuracy"))
    assert losses(two, "history", "train_loss") == pytest.approx(
        losses(one, "history", "train_loss"), rel=2e-4
    )


def test_a_killed_two_process_run_resumes_to_the_same_curve(data, uninterrupted, tmp_path):
    reference, resumed, state = uninterrupted("pretrain", 2), tmp_path / "resumed.json", tmp_path / "state.pt"
    crashed = run("pretrain", data, state, resumed, processes=2, crash=11, check=False)
    assert crashed.returncode != 0 and state.exists() and not resumed.exists()
    run("pretrain", data, state, resumed, processes=2)
    assert losses(resumed, "steps", "train_loss") == pytest.approx(
        losses(reference, "steps", "train_loss"), rel=1e-5
    )


def run_stage(script: str, args: list[str], overrides: list[str], processes: int) -> None:
    """`stages/<script>` under torchrun with N processes, 1 for the reference."""
    launch(
        [f"stages/{script}", *args] + [arg for item in overrides for arg in ("--set", item)],
        processes,
        torchrun=True,
    )


def test_the_pretrain_stage_under_torchrun_writes_once_what_one_process_writes(data, tmp_path):
    """The stage script itself, as dvc.yaml runs it with `pretrain.launcher` set to torchrun."""
    small = [
        "model.d_model=32",
        "model.n_layer=2",
        "model.n_head=2",
        "model.d_ff=64",
        "model.block_size=16",
        "model.dropout=0",
        "pretrain.batch_size=8",
        "pretrain.epochs=2",
        "pretrain.steps_per_epoch=5",
        "pretrain.eval_batches=2",
        "pretrain.compile=false",
        "pretrain.log_every=1",
    ]
    # 2 processes the way dvc.yaml starts them: `python stages/pretrain.py` with pretrain.launcher
    # set, and the stage starts itself again under torchrun from that list (issue 57)
    launcher = "[torchrun,--nproc_per_node=2,--master_port=0,--rdzv_backend=c10d,--rdzv_endpoint=127.0.0.1:0]"
    outputs = {}
    for processes in (1, 2):
        out = tmp_path / f"n{processes}"
        paths = ["--seed", "1", "--data", str(data), "--data-card", str(out / "none.json")]
        paths += ["--model", str(out / "model.pt")]
        paths += ["--reports", str(out / "reports"), "--state", str(out / "state.pt")]
        paths += ["--snapshots", str(out / "snapshots")]
        if processes == 1:
            run_stage("pretrain.py", paths, small, processes)
        else:
            overrides = [*small, f"pretrain.launcher={launcher}"]
            done = launch(
                ["stages/pretrain.py", *paths] + [a for item in overrides for a in ("--set", item)], 1
            )
            assert "pretrain: starting under torchrun --nproc_per_node=2" in done.stderr
        assert not list(out.rglob("*.tmp")), "a rank left a temporary file"
        outputs[processes] = out
    one, two = (pd.read_csv(outputs[n] / "reports" / "steps.csv")["train_loss"].tolist() for n in (1, 2))
    assert len(one) == len(two) == 10
    assert two == pytest.approx(one, rel=2e-4)
    assert sorted(p.name for p in (outputs[2] / "snapshots").iterdir()) == ["epoch1.json", "epoch1.pt"]


def test_the_finetune_stage_under_torchrun_gives_what_one_process_gives(data, tmp_path):
    """The finetune stage script under torchrun: every start (the linear probe too), the lr search
    and the summary, written once; the same runs as one process."""
    small = [
        "finetune.label_counts=[0]",
        "finetune.seeds=[1,2]",
        "finetune.epochs=2",
        "finetune.min_steps=1",
        "finetune.batch_size=16",
        "finetune.lrs=[0.001,0.003]",
        "finetune.probe_cs=[0.1,1]",
        "finetune.search_labels=0",
        "finetune.snapshot_labels=0",
        "finetune.dropouts=[0]",
        "finetune.precision=fp32",
        "finetune.compile=false",
        "tokenize.max_length=32",
        "pretrain.seeds=[1]",
    ]
    bodies = tmp_path / "bodies"  # one body, where stage pretrain writes it
    bodies.mkdir()
    for suffix in (".pt", ".json"):
        shutil.copy(data / "models" / f"pretrained{suffix}", bodies / f"seed1{suffix}")
    # the comparisons with TF-IDF read the baselines' outputs; none here (no raw texts): none made
    from tinytf.data.predictions import COLUMNS

    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "summary.json").write_text('{"label_curve": {}}')
    pd.DataFrame(columns=list(COLUMNS)).to_parquet(baselines / "predictions.parquet")
    outputs = {}
    for processes in (1, 2):
        out = tmp_path / f"n{processes}"
        (out / "snapshots").mkdir(parents=True)
        run_stage(
            "finetune.py",
            [
                "--data",
                str(data),
                "--pretrained",
                str(bodies),
                "--snapshots",
                str(out / "snapshots"),
                "--reports",
                str(out / "reports"),
                "--baselines",
                str(baselines / "summary.json"),
                "--baseline-predictions",
                str(baselines / "predictions.parquet"),
                "--predictions",
                str(out / "predictions.parquet"),
            ],
            small,
            processes,
        )
        assert not list(out.rglob("*.tmp")), "a rank left a temporary file"
        outputs[processes] = out
    one, two = (pd.read_csv(outputs[n] / "reports" / "runs.csv") for n in (1, 2))
    assert len(one) == len(two) == 8  # 3 starts x 2 seeds, and the lr candidate halving dropped
    columns = ["start", "seed", "lr", "best_epoch", "validation_accuracy", "test_accuracy", "chosen"]
    pd.testing.assert_frame_equal(one[columns], two[columns])
    assert two["test_loss"].tolist() == pytest.approx(one["test_loss"].tolist(), rel=1e-4)
    curves = [pd.read_csv(outputs[n] / "reports" / "curves.csv")["train_loss"].tolist() for n in (1, 2)]
    assert curves[1] == pytest.approx(curves[0], rel=2e-4)
