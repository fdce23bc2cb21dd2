"""The predictions files: every run's per-text predictions on validation and test, one row per
(run, split, text), so that test items can be a unit of a test (tinytf.analysis.items) and a
report can show which texts a model gets wrong. `item` is the text's row in its split's file."""

from __future__ import annotations

import numpy as np
import pandas as pd

RUN_KEYS = ("start", "labels", "seed", "snapshot", "lr", "dropout")  # a run, as runs.csv names it
COLUMNS = (*RUN_KEYS, "split", "item", "label", "prediction", "probability")


def prediction_rows(keys: dict, split: str, labels, predictions, probabilities) -> pd.DataFrame:
    """One run's predictions on one split, in file order; `probability` is the probability the
    model gave its own prediction."""
    n = len(labels)
    frame = pd.DataFrame(
        {
            "split": [split] * n,
            "item": np.arange(n, dtype=np.int32),
            "label": np.asarray(labels, dtype=np.int16),
            "prediction": np.asarray(predictions, dtype=np.int16),
            "probability": np.asarray(probabilities, dtype=np.float32),
        }
    )
    for key in reversed(RUN_KEYS):
        value = keys.get(key)
        if key in ("lr", "dropout"):  # None for the probe and the baselines: NaN, as in runs.csv
            value = np.nan if value is None else float(value)
        frame.insert(0, key, value)
    return frame


def predicted(model, x) -> tuple[np.ndarray, np.ndarray]:
    """(predicted class, the probability given to it) per row, from a fitted scikit-learn classifier."""
    prediction = model.predict(x)
    probabilities = model.predict_proba(x)
    columns = np.searchsorted(np.asarray(model.classes_), prediction)
    return prediction, probabilities[np.arange(len(prediction)), columns]
