"""Successive halving over the grid: round-one ranks, the finalist stage's cell lookup, the winner
on the mean over seeds, its test against the runner-up, and the optimizer verdict."""

import json

import numpy as np
import pytest

from tinytf.analysis.grid import MissingCell, cell_at_rank, cell_key, finalist_key, grid_selection
from tinytf.params.config import GridParams
from tinytf.report.grid import grid_resolution, selection_text

PARAMS = GridParams(
    optimizers=["AdamW", "SGD", "Adagrad"],
    lrs=[0.001],
    batch_sizes=[16, 32],
    epochs=[1],
    seed=1,
    finalists=[1, 2, 3],
    finalist_seeds=[2, 3],
)
TEXTS = 400


def _correct(accuracy: float, shift: int = 0) -> list[int]:
    """`accuracy` of TEXTS right, the wrong ones starting at `shift` (so two runs differ per text)."""
    right = np.ones(TEXTS, dtype=int)
    wrong = round((1 - accuracy) * TEXTS)
    right[(np.arange(wrong) + shift) % TEXTS] = 0
    return right.tolist()


def _write(path, cell: dict, accuracy: float, loss: float, seed: int, shift: int = 0, **extra) -> None:
    result = {
        "cell": cell,
        "seed": seed,
        "history": [],
        "final": {"validation_accuracy": accuracy, "validation_loss": loss},
        "checkpoint": path.name.replace(".result.json", ".pt"),
        "validation_correct": _correct(accuracy, shift),
        **extra,
    }
    path.write_text(json.dumps(result))


def _cell(optimizer: str, batch_size: int) -> dict:
    return {"optimizer": optimizer, "lr": 0.001, "batch_size": batch_size, "epochs": 1}


# round one: (optimizer, batch size) -> (accuracy, loss); AdamW-bs16 and SGD-bs16 tie on accuracy
ROUND_ONE = {
    ("AdamW", 16): (0.80, 0.40),
    ("AdamW", 32): (0.70, 0.50),
    ("SGD", 16): (0.80, 0.45),
    ("SGD", 32): (0.60, 0.60),
    ("Adagrad", 16): (0.78, 0.50),
    ("Adagrad", 32): (0.50, 0.70),
}


@pytest.fixture
def grid_dirs(tmp_path):
    grid, finals = tmp_path / "grid", tmp_path / "grid_finalists"
    grid.mkdir(), finals.mkdir()
    for (optimizer, batch), (accuracy, loss) in ROUND_ONE.items():
        cell = _cell(optimizer, batch)
        _write(grid / f"{cell_key(**cell)}.result.json", cell, accuracy, loss, seed=1)
    return grid, finals


def _write_finalists(finals, by_rank: dict[int, tuple[dict, list[float]]]) -> None:
    for rank, (cell, accuracies) in by_rank.items():
        for seed, accuracy in zip((2, 3), accuracies, strict=True):
            path = finals / f"{finalist_key(rank, seed)}.result.json"
            _write(path, cell, accuracy, 0.5, seed=seed, shift=7 * seed, rank=rank)


def test_round_one_ranks_by_accuracy_then_loss_and_the_finalist_stage_reads_its_cell(grid_dirs):
    grid, _ = grid_dirs
    assert cell_at_rank(PARAMS, grid, 1) == _cell("AdamW", 16)  # ties SGD-bs16, lower loss
    assert cell_at_rank(PARAMS, grid, 2) == _cell("SGD", 16)
    assert cell_at_rank(PARAMS, grid, 3) == _cell("Adagrad", 16)
    with pytest.raises(ValueError, match="rank 7: the grid has 6 cells"):
        cell_at_rank(PARAMS, grid, 7)


def test_the_winner_is_the_best_mean_over_seeds_not_round_ones_best(grid_dirs):
    grid, finals = grid_dirs
    # round one's best (AdamW-bs16, 0.80) falls back on its other seeds; SGD-bs16 holds up
    _write_finalists(
        finals,
        {
            1: (_cell("AdamW", 16), [0.70, 0.71]),
            2: (_cell("SGD", 16), [0.79, 0.81]),
            3: (_cell("Adagrad", 16), [0.60, 0.62]),
        },
    )
    selection = grid_selection(PARAMS, grid, finals)
    assert selection["winner"]["key"] == "SGD-lr0.001-bs16-ep1"
    assert selection["winner"]["seeds"] == [1, 2, 3]
    assert selection["winner"]["validation_accuracy_mean"] == pytest.approx(0.80)
    assert selection["runner_up"]["key"] == "AdamW-lr0.001-bs16-ep1"
    # served: the winner's best seed on validation, from the finalists' folder
    assert selection["served"]["seed"] == 3 and selection["served"]["checkpoint"].endswith("r2-s3.pt")
    test = selection["test"]
    assert test["n"] == 3 and test["items"]["n_items"] == TEXTS
    # 6 points over 400 texts: the texts detect it, the three seeds' t-test (df 2) does not; the
    # outcome rests on the one decisive test, as the label curve's verdicts do: two looks would not
    assert test["items_verdict"] == "higher" and test["verdict"] == "no detectable difference"
    assert test["outcome"] == "tie" and test["decisive_p"] == test["p_value"]
    json.dumps(selection)  # reports/metrics.json carries it as it is


def test_a_close_runner_up_is_called_a_tie(grid_dirs):
    grid, finals = grid_dirs
    _write_finalists(
        finals,
        {
            1: (_cell("AdamW", 16), [0.80, 0.79]),
            2: (_cell("SGD", 16), [0.79, 0.80]),
            3: (_cell("Adagrad", 16), [0.60, 0.62]),
        },
    )
    selection = grid_selection(PARAMS, grid, finals)
    assert selection["test"]["outcome"] == "tie"
    text = selection_text(selection)
    assert (
        "no difference detected" in text
        and "a tie" not in text
        and "the higher mean is served either way" in text
    )


def test_a_finalist_run_for_another_cell_is_stale_and_named(grid_dirs):
    grid, finals = grid_dirs
    _write_finalists(
        finals,
        {
            1: (_cell("AdamW", 16), [0.70, 0.71]),
            2: (_cell("AdamW", 32), [0.79, 0.81]),  # round one ranks SGD-bs16 2nd
            3: (_cell("Adagrad", 16), [0.60, 0.62]),
        },
    )
    with pytest.raises(MissingCell, match="r2-s2; run `dvc repro grid_finalists`"):
        grid_selection(PARAMS, grid, finals)


def test_the_optimizer_verdict_compares_each_optimizers_best_cell_with_holm(grid_dirs):
    grid, finals = grid_dirs
    params = GridParams(**{**PARAMS.__dict__, "finalists": [1, 2]})
    _write_finalists(finals, {1: (_cell("AdamW", 16), [0.70, 0.71]), 2: (_cell("SGD", 16), [0.79, 0.81])})
    verdict = grid_selection(params, grid, finals)["optimizers"]
    best = verdict["best_cells"]
    assert best["SGD"]["chosen_by"].startswith("mean") and best["SGD"]["key"] == "SGD-lr0.001-bs16-ep1"
    # Adagrad has no finalist: its best cell by round one
    assert best["Adagrad"] == {
        "key": "Adagrad-lr0.001-bs16-ep1",
        "validation_accuracy": 0.78,
        "chosen_by": "round one (seed 1)",
    }
    pairs = {(p["a"], p["b"]): p for p in verdict["pairs"]}
    assert set(pairs) == {("AdamW", "SGD"), ("AdamW", "Adagrad"), ("SGD", "Adagrad")}
    for pair in pairs.values():
        assert pair["p_holm"] >= pair["p_value"]
    # round one's seed: AdamW-bs16 and SGD-bs16 both 0.80, the same texts wrong
    assert pairs[("AdamW", "SGD")]["statement"] == "AdamW vs SGD: no detectable difference"
    assert "same validation split" in verdict["caveat"]


def test_the_optimizer_verdict_names_the_better_side(grid_dirs):
    grid, finals = grid_dirs
    cell = _cell("Adagrad", 32)  # 0.50 on seed 1 against AdamW's 0.80, over 400 texts
    params = GridParams(**{**PARAMS.__dict__, "optimizers": ["AdamW", "Adagrad"], "finalists": [1]})
    for optimizer in ("SGD",):
        for batch in (16, 32):
            (grid / f"{cell_key(**_cell(optimizer, batch))}.result.json").unlink()
    (grid / f"{cell_key(**_cell('Adagrad', 16))}.result.json").unlink()
    _write(grid / f"{cell_key(**_cell('Adagrad', 16))}.result.json", _cell("Adagrad", 16), 0.4, 0.9, seed=1)
    _write_finalists(finals, {1: (_cell("AdamW", 16), [0.70, 0.71])})
    verdict = grid_selection(params, grid, finals)["optimizers"]
    assert verdict["best_cells"]["Adagrad"]["key"] == cell_key(**cell)
    (pair,) = verdict["pairs"]
    assert pair["statement"] == "AdamW better than Adagrad" and pair["p_holm"] < 0.05


def test_the_resolution_comes_from_the_finalists_seeds(grid_dirs):
    grid, finals = grid_dirs
    _write_finalists(
        finals,
        {
            1: (_cell("AdamW", 16), [0.70, 0.71]),
            2: (_cell("SGD", 16), [0.79, 0.81]),
            3: (_cell("Adagrad", 16), [0.60, 0.62]),
        },
    )
    finalists = grid_selection(PARAMS, grid, finals)["finalists"]
    text = grid_resolution(None, None, finalists)
    assert "std pooled over the 3 finalists" in text and "two means of 3 seeds" in text
