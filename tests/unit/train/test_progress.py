"""Progress of the stages made of many runs: runs done out of all and the time left, a plain line
every few runs where stderr is piped (a bar in a terminal is tqdm's own)."""

import io
import re
import shutil

from tinytf.params.config import FinetuneParams
from tinytf.train.finetune import run_finetune
from tinytf.train.progress import RunProgress, matrix_line

LINE = re.compile(r"^runs: (\d+)/25 runs done, \d\d:\d\d elapsed, about (\S+) left$")


def test_piped_a_line_every_few_runs_and_one_at_the_last():
    out = io.StringIO()  # not a terminal: no bar, lines instead
    progress = RunProgress(25, "runs", file=out)
    for _ in range(25):
        progress.update(1)
    progress.close()
    lines = out.getvalue().splitlines()
    done = [int(LINE.match(line).group(1)) for line in lines]
    assert done == [3, 6, 9, 12, 15, 18, 21, 24, 25], lines  # every ceil(25 / 10) runs, and the last
    assert LINE.match(lines[-1]).group(2) == "00:00"  # nothing left


def test_runs_kept_from_a_stopped_stage_count_as_done_but_not_in_the_pace():
    out = io.StringIO()
    progress = RunProgress(25, "runs", file=out)
    progress.skip(0)  # nothing kept: no line
    assert out.getvalue() == ""
    progress.skip(10)
    assert LINE.match(out.getvalue().splitlines()[-1]).group(1) == "10"
    assert progress.line().endswith("about ? left")  # no run has finished here yet: no pace


def test_a_matrix_cell_says_how_many_are_done_and_the_time_the_rest_take_at_its_pace():
    assert matrix_line(1, 3, 10.0) == "1/3 done (00:10); the 2 left, about 00:20"
    assert matrix_line(3, 3, 75.0) == "3/3 done (01:15)"


def test_finetune_counts_every_run_it_trains_out_of_all_it_planned(workdir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TINYTF_WORKERS", "1")
    snapshot = tmp_path / "epoch1.pt"  # the snapshot curve's runs are planned too
    shutil.copy(workdir / "models" / "pretrained.pt", snapshot)
    shutil.copy(workdir / "models" / "pretrained.json", snapshot.with_suffix(".json"))
    params = FinetuneParams(
        label_counts=[24, 0], seeds=[1, 2, 3], epochs=1, min_steps=2, batch_size=16, lrs=[1e-3, 3e-3],
        dropouts=[0.0, 0.1], probe_cs=[1.0], search_labels=24, search_seeds=2, snapshot_labels=24,
        device="cpu", precision="fp32", compile=False,
    )  # fmt: skip
    result = run_finetune(params, 32, workdir / "models" / "pretrained.pt", workdir, [snapshot])
    trained = int((result.runs["start"] != "probe").sum())
    # search: 4 + 2 runs a start; curve: 2 counts x 3 seeds a start, the 2 searched ones reused;
    # snapshot curve: 3 seeds
    assert trained == 2 * 6 + 2 * (6 - 2) + 3
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("finetune runs:")]
    counts = [re.match(r"finetune runs: (\d+)/(\d+) runs done", line).groups() for line in lines]
    assert {total for _, total in counts} == {str(trained)}, lines
    assert counts[-1][0] == str(trained) and len(lines) == 8  # every 3rd run (23 / 10, up) and the last
