"""The baselines every transformer accuracy stands next to: majority class and TF-IDF + logistic
regression, fitted on the same train subsets and scored on the same test split.

TF-IDF features are word 1–2-grams plus character 2–5-grams inside word boundaries (the strong
bag-of-words recipe for short reviews), fitted on every train text with labels unread, as the
tokenizer and the language model read them; the logistic regression sees only the subset's
labels, its C chosen on validation, never on test."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tinytf.data.predictions import predicted


@dataclass
class BaselineScores:
    majority: float  # test accuracy of always predicting the subset's most frequent class
    tfidf_lr: float  # test accuracy of TF-IDF + LR with C chosen on validation
    tfidf_lr_validation: float
    tfidf_lr_c: float
    # TF-IDF + LR per split: (predicted class, the probability given to it) per text, in file order
    predictions: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def majority_accuracy(train_labels: np.ndarray, test_labels: np.ndarray) -> float:
    values, counts = np.unique(train_labels, return_counts=True)
    return float(np.mean(np.asarray(test_labels) == values[np.argmax(counts)]))


def tfidf_features(word_ngrams: tuple[int, int], char_ngrams: tuple[int, int]):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion(
        [
            ("word", TfidfVectorizer(ngram_range=word_ngrams, sublinear_tf=True, lowercase=True)),
            ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=char_ngrams, sublinear_tf=True)),
        ]
    )


def fit_baselines(
    train: tuple[list[str], np.ndarray],
    validation: tuple[list[str], np.ndarray],
    test: tuple[list[str], np.ndarray],
    cs: list[float],
    word_ngrams: tuple[int, int] = (1, 2),
    char_ngrams: tuple[int, int] = (2, 5),
    features=None,
) -> BaselineScores:
    """One logistic regression per C on the features of `train`; keep the C with the best
    validation accuracy (the smaller C on a tie: more regularised) and score it on test.
    `features`: a fitted `tfidf_features` (baseline_curve's, fitted on every train text); None
    fits them on `train`'s texts."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    if features is None:
        features = tfidf_features(word_ngrams, char_ngrams).fit(train[0])
    x_train, x_val, x_test = (features.transform(texts) for texts, _ in (train, validation, test))
    best = None
    # one BLAS thread, as the linear probe (tinytf.train.linear_probe says why): faster, same result
    with threadpool_limits(1, user_api="blas"):
        for c in sorted(cs):
            model = LogisticRegression(C=c, max_iter=2000).fit(x_train, train[1])
            accuracy = float(np.mean(model.predict(x_val) == validation[1]))
            if best is None or accuracy > best[0]:
                best = (accuracy, c, model)
    accuracy, c, model = best
    return BaselineScores(
        majority=majority_accuracy(train[1], test[1]),
        tfidf_lr=float(np.mean(model.predict(x_test) == test[1])),
        tfidf_lr_validation=accuracy,
        tfidf_lr_c=c,
        predictions={"validation": predicted(model, x_val), "test": predicted(model, x_test)},
    )


def baseline_curve(
    splits: dict[str, tuple[list[str], np.ndarray]],
    plan: list[tuple[int, list[int]]],
    cs: list[float],
    word_ngrams: tuple[int, int],
    char_ngrams: tuple[int, int],
    progress=None,
):
    """Both baselines on the fine-tuning curve's subsets: (per label count, mean/std/by-seed test
    accuracy; TF-IDF + LR's predictions, one row per (fit, split, text)). All labels are the same
    set for every seed, so that point is fitted once."""
    import pandas as pd

    from tinytf.data.predictions import prediction_rows
    from tinytf.data.subsets import ALL, count_name, label_subset

    texts, labels = splits["train"]
    features = tfidf_features(word_ngrams, char_ngrams).fit(texts)  # labels unread
    curve, predictions = {}, []
    for count, seeds in plan:
        fits = {}
        for seed in seeds[:1] if count == ALL else seeds:
            rows = label_subset(labels, count, seed)
            subset = ([texts[i] for i in rows], labels[rows])
            fits[seed] = fit_baselines(
                subset, splits["validation"], splits["test"], cs, word_ngrams, char_ngrams, features
            )
            keys = {"start": "tfidf_lr", "labels": count_name(count), "seed": seed}
            for split, (predicted_class, probability) in fits[seed].predictions.items():
                predictions.append(
                    prediction_rows(keys, split, splits[split][1], predicted_class, probability)
                )
            if progress:
                progress(count, seed, fits[seed])
        curve[count_name(count)] = {
            "n_train": int(len(labels) if count == ALL else min(count, len(labels))),
            "majority": _spread({s: f.majority for s, f in fits.items()}),
            "tfidf_lr": {
                **_spread({s: f.tfidf_lr for s, f in fits.items()}),
                "validation": _spread({s: f.tfidf_lr_validation for s, f in fits.items()})["mean"],
                "c_by_seed": {str(s): f.tfidf_lr_c for s, f in fits.items()},
            },
        }
    return curve, pd.concat(predictions, ignore_index=True)


def _spread(by_seed: dict[int, float]) -> dict:
    values = list(by_seed.values())
    return {
        "mean": float(np.mean(values)),
        "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0,
        "by_seed": {str(s): float(v) for s, v in by_seed.items()},
    }
