"""The study's protocol, read from the `finetune:` params: which label counts the curve runs, where
each start chooses its recipe and from which candidates; the finetune and baselines stages share it.
"""

from __future__ import annotations


def curve_order(count: int) -> float:
    """Sort key of a label count on the curve: increasing, 0 (all labels) last."""
    return float("inf") if count == 0 else count


def curve_plan(params) -> list[tuple[int, list[int]]]:
    """[(label count, seeds)] in curve order, every count with every seed."""
    return [(count, list(params.seeds)) for count in sorted(params.label_counts, key=curve_order)]


def search_counts(params) -> list[int]:
    """The label counts a recipe is chosen at, in curve order (0 = all labels, last)."""
    listed = params.search_labels if isinstance(params.search_labels, list) else [params.search_labels]
    return sorted(listed, key=curve_order)


def recipe_count(params, count: int) -> int:
    """The searched label count whose recipe `count` runs with: itself when searched, else the
    nearest searched count below it, else the smallest searched."""
    order = [c for c, _ in curve_plan(params)]
    searched = search_counts(params)
    below = [c for c in searched if order.index(c) <= order.index(count)] if count in order else []
    return below[-1] if below else searched[0]


def recipes(params, lrs: list[float] | None = None) -> list[tuple[float, float]]:
    """The (lr, dropout) candidates a trained start chooses from; `lrs` for the hf start."""
    return [(lr, dropout) for lr in (lrs or params.lrs) for dropout in params.dropouts]
