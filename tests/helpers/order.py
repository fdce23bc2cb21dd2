"""A pytest plugin that runs the collected tests in another order, to check that none leans on
an earlier one: `TEST_ORDER=reverse pytest -p tests.helpers.order`, or `TEST_ORDER=shuffle:7`
(modules shuffled, then the tests inside each, as pytest-randomly does: a module's tests stay
together, so its module-scoped fixtures are built once)."""

from __future__ import annotations

import os
import random


def reorder(items: list, order: str) -> list:
    """`items` (each with a `.module`) in `order`: "" as collected, "reverse", or "shuffle:SEED"."""
    if not order:
        return list(items)
    if order == "reverse":
        return list(reversed(items))
    kind, _, seed = order.partition(":")
    if kind != "shuffle" or not seed.isdigit():
        raise ValueError(f"TEST_ORDER={order!r}: expected reverse or shuffle:SEED")
    rng = random.Random(int(seed))
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.module.__name__, []).append(item)
    groups = list(modules.values())
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    return [item for group in groups for item in group]


def pytest_collection_modifyitems(session, config, items):
    items[:] = reorder(items, os.environ.get("TEST_ORDER", ""))
