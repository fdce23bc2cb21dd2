"""The multi-bootstrap: runs and test texts (by movie) drawn together, one interval and p."""

from __future__ import annotations

import numpy as np
import pytest

from tinytf.analysis.multiboot import _accuracy, _side, multi_bootstrap


def counts(rng, n: int, drawn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One draw of n with replacement: its indices and their counts as a (1, n) row."""
    index = rng.integers(0, n, n) if drawn is None else drawn
    row = np.zeros((1, n))
    np.add.at(row[0], index, 1)
    return index, row


def test_a_draw_is_the_mean_over_the_drawn_runs_and_every_text_of_the_drawn_movies():
    rng = np.random.default_rng(1)
    side = (rng.random((3, 5, 40)) < 0.7).astype(float)  # 3 bodies x 5 seeds x 40 texts
    movies = np.repeat(np.arange(10), 4)
    sums, sizes = _side(side, movies)
    (m, items), (b, bodies), (s, seeds) = counts(rng, 10), counts(rng, 3), counts(rng, 5)
    texts = np.concatenate([np.flatnonzero(movies == movie) for movie in m])
    by_hand = side[b][:, s][:, :, texts].mean()
    assert _accuracy(sums, sizes, [bodies, seeds], items)[0] == pytest.approx(by_hand)


def test_the_same_side_twice_is_no_difference():
    side = (np.random.default_rng(2).random((5, 60)) < 0.6).astype(float)
    out = multi_bootstrap(side, side, np.repeat(np.arange(20), 3))
    assert out["estimate"] == 0.0 and out["ci95"] == [0.0, 0.0] and out["p_value"] == 1.0
    assert out["sources"] == ["seed", "movie"]


def test_a_clear_gain_is_detected_and_a_one_fit_side_is_not_drawn_over_seeds():
    rng = np.random.default_rng(3)
    better = (rng.random((5, 800)) < 0.85).astype(float)
    one_fit = (rng.random((1, 800)) < 0.70).astype(float)
    out = multi_bootstrap(better, one_fit)
    assert out["ci95"][0] > 0.1 and out["p_value"] < 0.01 and out["sources"] == ["seed", "text"]
    assert multi_bootstrap(one_fit, one_fit)["sources"] == ["text"]  # nothing to draw but texts


def test_texts_of_one_movie_move_together_so_movies_widen_the_interval():
    rng = np.random.default_rng(4)
    movie_effect = np.repeat(rng.random(30) < 0.5, 20)  # 30 movies of 20 texts, right or wrong together
    a = np.tile(movie_effect, (5, 1)).astype(float)
    b = (rng.random((5, 600)) < 0.5).astype(float)
    by_text, by_movie = multi_bootstrap(a, b), multi_bootstrap(a, b, np.repeat(np.arange(30), 20))
    width = [out["ci95"][1] - out["ci95"][0] for out in (by_text, by_movie)]
    assert width[1] > 2 * width[0]


def test_seeds_that_disagree_widen_the_interval_over_what_the_texts_alone_give():
    rng = np.random.default_rng(5)
    texts = rng.random(500) < 0.7
    seeds = np.array([rng.random(500) < p for p in (0.55, 0.65, 0.75, 0.85, 0.95)])
    a = (texts & seeds).astype(float)
    b = np.tile(texts, (5, 1)).astype(float) * 0.0 + (rng.random(500) < 0.5)
    spread = multi_bootstrap(a, b)["ci95"]
    fixed = multi_bootstrap(a[2:3], b[2:3])["ci95"]  # one run a side: texts only
    assert spread[1] - spread[0] > fixed[1] - fixed[0]


def test_sides_that_cannot_be_paired_are_refused():
    with pytest.raises(ValueError, match="the same texts"):
        multi_bootstrap(np.ones((5, 10)), np.ones((5, 11)))
    with pytest.raises(ValueError, match="cannot be paired"):
        multi_bootstrap(np.ones((5, 10)), np.ones((3, 10)))
    with pytest.raises(ValueError, match="one leading axis per source"):
        multi_bootstrap(np.ones((2, 5, 10)), np.ones((2, 5, 10)))
