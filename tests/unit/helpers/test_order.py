"""tests/helpers/order.py: the orders the order-independence runs use."""

from types import SimpleNamespace

import pytest

from tests.helpers.order import reorder


def items():
    return [
        SimpleNamespace(module=SimpleNamespace(__name__=m), name=f"{m}{i}") for m in "abc" for i in range(3)
    ]


def test_reverse_and_the_collected_order():
    names = [i.name for i in items()]
    assert [i.name for i in reorder(items(), "")] == names
    assert [i.name for i in reorder(items(), "reverse")] == names[::-1]


def test_a_shuffle_keeps_each_modules_tests_together_and_repeats_with_its_seed():
    shuffled = [i.name for i in reorder(items(), "shuffle:7")]
    assert sorted(shuffled) == sorted(i.name for i in items())
    modules = [name[0] for name in shuffled]
    assert all(modules[k] == modules[k - 1] for k in range(1, 9) if k % 3)  # runs of one module
    assert shuffled == [i.name for i in reorder(items(), "shuffle:7")]
    assert any(reorder(items(), f"shuffle:{s}")[0].name != shuffled[0] for s in range(1, 10))


def test_an_unknown_order_is_named():
    with pytest.raises(ValueError, match="TEST_ORDER='sideways'"):
        reorder(items(), "sideways")
