"""Class names (the readers' strings) to label ids 0..K-1: inferred from train, or given by
`labels`, and refused when a guess would be needed."""

from __future__ import annotations

import pandas as pd

from tinytf.data.readers import position
from tinytf.errors import DataError

# an inferred label column with more classes than this, and more than a tenth of the train
# rows, is an id or a free-text column chosen by mistake
MAX_INFERRED_CLASSES = 50


def _as_name(value) -> str:
    # 1 and 1.0 and "1" are one class: pandas reads an int column with gaps as floats
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _sort_key(name: str):
    # whole numbers in numeric order, before names in alphabetical order
    try:
        return (0, int(name), "")
    except ValueError:
        return (1, 0, name)


def infer_classes(train: pd.DataFrame, path: str, key: str) -> list[str]:
    """The sorted distinct class names of train, unless they look like a wrong column."""
    names = train["label"].map(_as_name)
    counts = names.value_counts()
    if len(counts) > MAX_INFERRED_CLASSES and len(counts) > len(train) // 10:
        raise DataError(
            f"{path}: the label column has {len(counts)} distinct values in {len(train)} rows: an id or "
            f"a text column, not classes? Set {key}.label_column to the class column, or list the classes "
            f"in {key}.labels to use these"
        )
    return sorted(counts.index, key=_sort_key)


def map_labels(
    splits: dict[str, pd.DataFrame],
    files: dict[str, str],
    classes: list[str] | None = None,
    key: str = "prepare.sentiment",
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Turn class names into ids 0..K-1 and return the class names in id order: `classes`, or the
    sorted distinct labels of train. A label not among them is an error: the model could not
    predict it and its metrics would silently lie."""
    if not classes:
        classes = infer_classes(splits["train"], files.get("train", "train"), key)
        # before the other splits: their second class would read as unknown to a one-class train
        _refuse_one_class("train", splits["train"], files.get("train", "train"), key)
    index = {name: i for i, name in enumerate(classes)}
    mapped = {}
    for split, frame in splits.items():
        names = frame["label"].map(_as_name)
        unknown = ~names.isin(index)
        if unknown.any():
            first = frame.loc[unknown].iloc[0]
            source = files.get(split, split)
            raise DataError(
                f"{source}: {position(source)} {int(first['row'])}: label {first['label']!r} "
                f"is not a known class; classes are {classes}"
            )
        out = frame.copy()
        out["label"] = names.map(index).astype("int64")
        mapped[split] = out
    for split, frame in splits.items():
        _refuse_one_class(split, frame, files.get(split, split), key)
    return mapped, classes


def _refuse_one_class(split: str, frame: pd.DataFrame, source: str, key: str) -> None:
    """A split with one class trains a constant or scores nothing: accuracy is trivial and
    scikit-learn's per-class metrics stop mid-pipeline, so it is refused while the file is at hand.
    An empty split is left to the caller, which says why it is empty."""
    found = frame["label"].map(_as_name).unique()
    if len(found) == 1:
        raise DataError(
            f"{source}: split '{split}' holds only class {found[0]!r} ({len(frame)} rows); "
            f"a classifier needs at least two classes in every split: add rows of another class, "
            f"or check {key}.label_column"
        )
