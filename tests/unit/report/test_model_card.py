"""The champion's model card: every section there, every figure from the facts it was given."""

from __future__ import annotations

from tests.helpers.model_fixtures import classifier
from tinytf.report.model_card import CardFacts, model_card


def facts(**changed) -> CardFacts:
    splits = {
        s: {"rows": n, "labels": {"bad": n // 2, "good": n - n // 2}}
        for s, n in (("train", 1000), ("validation", 200), ("test", 201))
    }
    values = dict(
        meta={"model": classifier(500, n_layer=2, d_model=32, d_ff=64).to_dict()},
        parameters=51234,
        start="pretrained",
        max_length=64,
        data={"source": "sst2", "splits": splits, "files": {"train": "stsa.binary.train"}},
        best={
            "key": "AdamW-lr0.001-bs32-ep1",
            "optimizer": "AdamW",
            "lr": 0.001,
            "batch_size": 32,
            "epochs": 1,
            "validation_accuracy": 0.75,
        },
        cells=12,
        seed=1,
        report={
            "classes": ["bad", "good"],
            "accuracy": 0.7263,
            "accuracy_ci95": [0.702, 0.7529],
            "macro_f1": 0.7091,
            "n": 201,
            "per_class": {
                c: {"precision": 0.7, "recall": 0.6, "f1": 0.65, "support": 100} for c in ("good", "bad")
            },
        },
        metrics={
            "baselines": {"majority": {"test_accuracy": 0.578}, "tfidf_lr": {"test_accuracy": 0.7812}},
            "pretrained_vs_scratch": {  # keys sorted, as metrics.json keeps them
                "paired_test": {"p_value": 0.01},
                "pretrained": {"mean": 0.749, "std": 0.0023},
                "probe": {"mean": 0.671, "std": 0.0081},
                "scratch": {"mean": 0.728, "std": 0.0144},
            },
            "promotion": {"reason": "promoted: validation accuracy 0.7500 >= champion v3's 0.7401"},
        },
        registered="tinytf-sentiment version 4",
    )
    return CardFacts(**{**values, **changed})


def test_the_card_says_what_the_model_is_how_it_was_chosen_and_where_it_stops():
    card = model_card(facts())
    for heading in (
        "# Model card",
        "## Data",
        "## How it was selected",
        "## Results on test",
        "## Known limits",
    ):
        assert heading in card, heading
    assert "Registered as tinytf-sentiment version 4" in card
    assert "a 2-layer causal transformer (d_model 32, 2 heads" in card and "51,234 parameters" in card
    assert "| validation | 200 | 100 | 100 |" in card
    assert (
        "Successive halving over 12 grid cells" in card
        and "`AdamW-lr0.001-bs32-ep1`" in card
        and "1 epoch)" in card
    )
    assert "champion v3's 0.7401" in card
    assert "Accuracy 0.7263 (bootstrap 95 % interval [0.7020, 0.7529], 201 texts)" in card
    assert card.index("| bad |") < card.index("| good |")  # in the classes' order
    assert "TF-IDF + LR 0.7812" in card and "pretrained 0.7490 ± 0.0023" in card and "paired_test" not in card
    assert (
        "pretrained 0.7490 ± 0.0023, scratch 0.7280 ± 0.0144, probe 0.6710" in card
    )  # the starts table's order
    assert "This model is its seed 1 run" in card and "English movie-review sentences (SST-2)" in card
    assert "first 64 tokens" in card


def test_an_external_encoder_and_data_of_ones_own_are_named_by_their_sources():
    meta = {"hf": {"source": "package:minilm/all-MiniLM-L6-v2", "n_classes": 2, "max_length": 128}}
    data = {
        **facts().data,
        "source": "files",
        "files": {"train": "reviews/train.csv", "test": "reviews/test.csv"},
    }
    card = model_card(
        facts(meta=meta, data=data, metrics={**facts().metrics, "promotion": None}, registered=None)
    )
    assert "an external encoder (package:minilm/all-MiniLM-L6-v2)" in card
    assert "the texts of reviews/test.csv, reviews/train.csv only" in card
    assert card.count("Not registered in MLflow.") == 1 and "validation accuracy): not registered." in card
