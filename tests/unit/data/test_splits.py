import numpy as np
import pytest

from tinytf.data.splits import stratified_group_split


def data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 300, n)
    labels = np.where(rng.random(n) < 0.6, "fresh", "rotten")
    return labels, groups


def test_same_seed_same_split_and_other_seed_differs():
    labels, groups = data()
    a = stratified_group_split(labels, groups, 0.1, 0.1, seed=1)
    b = stratified_group_split(labels, groups, 0.1, 0.1, seed=1)
    c = stratified_group_split(labels, groups, 0.1, 0.1, seed=2)
    assert (a == b).all()
    assert (a != c).any()


def test_no_group_in_two_splits():
    labels, groups = data()
    assignment = stratified_group_split(labels, groups, 0.1, 0.1, seed=3)
    for group in np.unique(groups):
        assert len(set(assignment[groups == group])) == 1


@pytest.mark.parametrize("grouped", [True, False])
def test_shares_and_class_balance_are_close_to_targets(grouped):
    labels, groups = data()
    assignment = stratified_group_split(labels, groups if grouped else None, 0.1, 0.1, seed=4)
    tolerance = 0.02 if grouped else 0.002
    for split, share in (("train", 0.8), ("validation", 0.1), ("test", 0.1)):
        part = assignment == split
        assert part.mean() == pytest.approx(share, abs=tolerance)
        assert (labels[part] == "fresh").mean() == pytest.approx((labels == "fresh").mean(), abs=0.03)
