"""Course report 004 §1 probes: every construction meets its tolerance, deterministically."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from tinytf.course.attention_probes import (
    attend,
    average_query,
    identity_queries,
    make_kv,
    probes_markdown,
    replace_key_to_average,
    run_probes,
    select_query,
    unit_key_to_select,
)

TOL = 1e-3


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scale", [1.0, 3**-0.5])
def test_every_exercise_passes_on_course_shapes(seed, scale):
    df = run_probes(seed=seed, n=4, d=3, scale=scale, tol=TOL)
    assert len(df) == 6
    assert df["pass"].all(), df.to_string()
    assert (df["weight_err"] <= TOL).all()


@pytest.mark.parametrize(("n", "d"), [(3, 2), (3, 5), (5, 4), (6, 8)])
def test_other_shapes_pass(n, d):
    df = run_probes(seed=1, n=n, d=d)
    assert len(df) == 6 and df["pass"].all(), df.to_string()


def test_same_seed_same_table_and_different_seed_differs():
    a, b = run_probes(seed=3), run_probes(seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(run_probes(seed=4))


@pytest.mark.parametrize("seed", range(5))
def test_identity_queries_map_values_to_values(seed):
    K, V = make_kv(seed, 4, 3)
    p = identity_queries(K, V, tol=TOL)
    assert p.query.shape == (4, 3)
    w, out = attend(p.query, K, V)
    assert torch.allclose(w, torch.eye(4, dtype=w.dtype), atol=TOL)
    assert (out - V).abs().max() <= 2 * TOL * V.abs().max()


def test_constructions_return_what_they_claim():
    K, V = make_kv(0, 4, 3)
    sel = select_query(K, V, 0, TOL)
    assert sel.weights.argmax() == 0 and sel.weights[0] >= 1 - TOL
    avg = average_query(K, V, [0, 1], TOL)
    s = avg.query @ K.T
    assert torch.isclose(s[0], s[1])  # equal scores, not merely close weights
    assert (s[0] - s[2:]).min() >= math.log(4 / TOL) - 1e-9  # the promised gap
    new = replace_key_to_average(K, V, avg.query, TOL)
    assert torch.isclose(avg.query @ new.key, avg.query @ K[0])
    unit = unit_key_to_select(K, V, avg.query, TOL)
    assert torch.isclose(unit.key.norm(), torch.tensor(1.0, dtype=unit.key.dtype))
    assert unit.passed and unit.weights.argmax() == 2
    assert "cannot lead" in unit.method  # seed 0: k0, k1 project past |q| along q, so q must turn


def test_unit_key_keeps_the_query_direction_when_it_can():
    # keys short along q: q/|q| leads, so the answer is the same query, only longer (or unchanged)
    K = torch.tensor([[0.3, 0.0], [0.0, 0.3], [2.0, 2.0], [-0.3, 0.0]], dtype=torch.float64)
    V = torch.eye(4, 2, dtype=torch.float64)
    q = torch.tensor([1.0, 1.0], dtype=torch.float64)
    p = unit_key_to_select(K, V, q, TOL)
    assert p.passed and "lengthened" in p.method
    cos = (p.query @ q) / (p.query.norm() * q.norm())
    assert cos > 1 - 1e-12 and p.query.norm() > q.norm()


def test_unselectable_key_is_reported_not_faked():
    # k0 is the mean of the other keys: inside their hull, so no query can select it
    others = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [2.0, 1.0]], dtype=torch.float64)
    K = torch.cat([others.mean(0, keepdim=True), others])
    V = torch.randn(5, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    p = select_query(K, V, 0, TOL)
    assert not p.passed and p.query is None and "infeasible" in p.method
    assert select_query(K, V, 1, TOL).passed  # a hull vertex still works (through the LP)


def test_markdown_has_one_line_per_exercise():
    md = probes_markdown(run_probes())
    assert md.count("\n") == 7 and "identity Q" in md


def test_unit_key_reports_when_long_keys_surround_it():
    # the other keys are long and surround the origin: no unit key can out-score all of them
    K = torch.tensor([[3.0, 0.0], [-3.0, 2.0], [0.0, 0.0], [-1.0, -3.0]], dtype=torch.float64)
    V = torch.eye(4, 2, dtype=torch.float64)
    p = unit_key_to_select(K, V, torch.tensor([1.0, 0.0], dtype=torch.float64), TOL)
    assert not p.passed and p.query is None and "not constructed" in p.method
