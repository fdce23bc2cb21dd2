"""The promotion gate (issue 55): a new version becomes @champion only when it is at least as good on
validation, the old champion becomes @previous, and `tinytf champion rollback` swaps them back."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
import torch

from tests.helpers.model_fixtures import classifier
from tinytf.cli.main import main
from tinytf.data.texts import MAX_REQUEST_TOKENS, MAX_TEXTS
from tinytf.data.tokenizer import train_tokenizer
from tinytf.model.checkpoint import save_model
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import TokenizeParams
from tinytf.tracking import promotion
from tinytf.tracking.champion import log_champion

# the validation texts and their classes: a model that always answers "bad" is right on 3 of 4
TEXTS = ["a gripping film", "dull, dull, dull", "an empty one", "a film"]
LABELS = ["bad", "bad", "bad", "good"]


def constant_model(path, vocab_size: int, answer: int, classes: int = 2) -> None:
    """A classifier that gives class `answer` whatever the text: zero head weights, a bias for it."""
    model = TinyTransformer(classifier(vocab_size, n_classes=classes)).eval()
    with torch.no_grad():
        model.cls_head.weight.zero_()
        model.cls_head.bias.fill_(-5.0)
        model.cls_head.bias[answer] = 5.0
    save_model(path, model)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Models that always say bad or good, one with three classes, two tokenizers; and a store."""
    root = tmp_path_factory.mktemp("promotion")
    for name, words, size in (("tokenizer", "gripping dull film", 300), ("other", "empty one", 250)):
        tokenizer = train_tokenizer(
            [f"review {i} {words}" for i in range(200)], TokenizeParams(vocab_size=size)
        )
        tokenizer.save(str(root / f"{name}.json"))
    vocab = json.loads((root / "tokenizer.json").read_text())["model"]["vocab"]
    constant_model(root / "bad.pt", len(vocab), 0)
    constant_model(root / "good.pt", len(vocab), 1)
    constant_model(root / "bad_too.pt", len(vocab), 0)  # answers as bad.pt does, with other weights
    constant_model(root / "three.pt", len(vocab), 0, classes=3)
    (root / "labels.json").write_text(json.dumps({"classes": ["bad", "good"]}))
    (root / "three.json.labels").write_text(json.dumps({"classes": ["bad", "mixed", "good"]}))
    store = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(store)
    mlflow.create_experiment("promotion-test", artifact_location=(root / "artifacts").as_uri())
    return {"root": root, "store": store}


@pytest.fixture
def name(files, request, monkeypatch):
    """A registered model of this test's own in the shared store (versions count from 1)."""
    mlflow.set_tracking_uri(files["store"])
    mlflow.set_experiment("promotion-test")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", files["store"])
    return f"m-{request.node.name}".replace("[", "-").replace("]", "")


def register(
    files, name: str, model: str, tokenizer: str = "tokenizer.json", labels: str = "labels.json"
) -> str:
    root = files["root"]
    with mlflow.start_run():
        return log_champion(root / model, root / tokenizer, root / labels, 16, name, None)


def champion_of(files, name: str, model: str, **kw) -> str:
    """Register `model` and make it @champion, as a first workspace run does."""
    version = register(files, name, model, **kw)
    decision = promotion.decide(name, version, TEXTS, LABELS)
    assert decision.promoted and decision.reason == "promoted: no version was @champion"
    promotion.settle(name, decision)
    return version


def tag(name: str, version: str) -> str:
    return mlflow.MlflowClient().get_model_version(name, version).tags[promotion.PROMOTION_TAG]


def test_a_better_model_is_promoted_and_the_champion_becomes_previous(files, name):
    old = champion_of(files, name, "good.pt")
    new = register(files, name, "bad.pt")
    decision = promotion.decide(name, new, TEXTS, LABELS)
    assert decision == promotion.Decision(
        True, f"promoted: validation accuracy 0.7500 >= champion v{old}'s 0.2500", old, new
    )
    promotion.settle(name, decision)
    assert promotion.aliases(name) == {"champion": new, "previous": old}
    assert tag(name, new) == decision.reason


def test_a_model_within_the_tolerance_is_promoted_and_one_beyond_it_is_not(files, name):
    old = champion_of(files, name, "bad.pt")  # always class 0: 0.75 of LABELS
    new = register(files, name, "good.pt")  # always class 1: 0.25
    within = promotion.decide(name, new, TEXTS, LABELS, tolerance=0.5)
    assert (
        within.reason == f"promoted: validation accuracy 0.2500 >= champion v{old}'s 0.7500 (tolerance 0.5)"
    )
    beyond = promotion.decide(name, new, TEXTS, LABELS, tolerance=0.25)
    assert not beyond.promoted and beyond.reason.endswith("(tolerance 0.25)")


def test_an_equal_model_is_promoted(files, name):
    old = champion_of(files, name, "bad.pt")
    new = register(files, name, "bad_too.pt")
    decision = promotion.decide(name, new, TEXTS, LABELS)
    assert (
        decision.promoted
        and decision.reason == f"promoted: validation accuracy 0.7500 >= champion v{old}'s 0.7500"
    )


def test_a_worse_model_leaves_the_champion_and_says_why(files, name):
    old = champion_of(files, name, "bad.pt")
    new = register(files, name, "good.pt")
    decision = promotion.decide(name, new, TEXTS, LABELS)
    assert not decision.promoted
    promotion.settle(name, decision)
    assert promotion.aliases(name) == {"champion": old}
    assert tag(name, new) == f"not promoted: validation accuracy 0.2500 < champion v{old}'s 0.7500"


@pytest.mark.parametrize(
    "champion, why",
    [
        (
            {"model": "three.pt", "labels": "three.json.labels"},
            "has classes ['bad', 'mixed', 'good'], ours ['bad', 'good']",
        ),
        ({"model": "good.pt", "tokenizer": "other.json"}, "has another tokenizer (tokenizer.json sha256 "),
    ],
)
def test_a_champion_of_other_classes_or_tokenizer_is_replaced_without_comparison(files, name, champion, why):
    old = champion_of(files, name, **champion)
    new = register(files, name, "good.pt")  # worse on accuracy: not compared
    decision = promotion.decide(name, new, TEXTS, LABELS)
    assert decision.promoted and decision.reason.startswith(f"replaced without comparison: champion v{old} ")
    assert why in decision.reason


def test_rollback_swaps_champion_and_previous_and_refuses_without_previous(files, name, capsys):
    old = champion_of(files, name, "good.pt")
    capsys.readouterr()
    assert main(["champion", "rollback", "--name", name]) == 2
    err = capsys.readouterr().err
    assert err == f"tinytf: error: {name}: no version is @previous; there is nothing to roll back to\n"
    new = register(files, name, "bad.pt")
    promotion.settle(name, promotion.decide(name, new, TEXTS, LABELS))
    capsys.readouterr()
    assert main(["champion", "rollback", "--name", name]) == 0
    said = capsys.readouterr().out
    assert said == f"{name}: @champion is version {old} (was {new}); @previous is version {new}\n"
    assert promotion.aliases(name) == {"champion": old, "previous": new}
    assert main(["champion", "show", "--name", name]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown == [
        f"{name} version {new} @previous: promoted: validation accuracy 0.7500 >= champion v{old}'s 0.2500",
        f"{name} version {old} @champion: promoted: no version was @champion",
    ]


def two_versions(name: str, root: Path) -> tuple[str, str]:
    """Versions 1 and 2 of `name` (no model files: aliases are all a rollback moves), 2 @champion."""
    client = mlflow.MlflowClient()
    client.create_registered_model(name)
    old, new = (client.create_model_version(name, (root / "bad.pt").as_uri()).version for _ in range(2))
    client.set_registered_model_alias(name, "previous", old)
    client.set_registered_model_alias(name, "champion", new)
    return str(old), str(new)


class Killed(BaseException):
    """A kill between two alias moves, as SIGKILL would leave it: nothing after it runs."""


@pytest.mark.parametrize("moves_done", [0, 1, 2])  # 2: both aliases moved, the record not yet dropped
@pytest.mark.parametrize("command", ["show", "rollback"])
def test_a_rollback_killed_between_its_alias_moves_is_finished_by_tinytf_champion(
    files, name, monkeypatch, capsys, moves_done, command
):
    old, new = two_versions(name, files["root"])
    real, calls = promotion.champion.set_alias, []

    def set_alias_then_die(*args):
        if len(calls) == moves_done:
            raise Killed
        calls.append(args)
        real(*args)

    def die(*args):
        raise Killed

    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(promotion.champion, "set_alias", set_alias_then_die)
        patch.setattr(mlflow.MlflowClient, "delete_registered_model_tag", die)
        promotion.rollback(name)
    if moves_done == 1:  # the state that once could not be undone: both aliases on one version
        assert promotion.aliases(name) == {"champion": old, "previous": old}
    capsys.readouterr()
    assert main(["champion", command, "--name", name]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == (
        f"{name}: finished a rollback that was interrupted: @champion is version {old}, @previous is version {new}"
    )
    assert promotion.aliases(name) == {"champion": old, "previous": new}
    assert promotion.ROLLBACK_TAG not in mlflow.MlflowClient().get_registered_model(name).tags
    assert main(["champion", "rollback", "--name", name]) == 0  # and a rollback after it swaps again
    assert promotion.aliases(name) == {"champion": new, "previous": old}


def test_aliases_moved_after_an_interrupted_rollback_win_over_its_record(files, name, monkeypatch, capsys):
    old, new = two_versions(name, files["root"])
    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(promotion.champion, "set_alias", lambda *args: (_ for _ in ()).throw(Killed()))
        promotion.rollback(name)
    client = mlflow.MlflowClient()
    newest = client.create_model_version(name, (files["root"] / "good.pt").as_uri()).version
    client.set_registered_model_alias(name, "previous", new)  # evaluate promoting a third version
    client.set_registered_model_alias(name, "champion", newest)
    assert (
        promotion.repair(name)
        == f"{name}: dropped the record of an interrupted rollback: the aliases moved since"
    )
    assert promotion.aliases(name) == {"champion": str(newest), "previous": new}


def test_requests_keep_within_the_models_limits():
    parts = list(promotion.requests(["a"] * (MAX_TEXTS + 1)))
    assert [len(p) for p in parts] == [MAX_TEXTS, 1]
    long = "x" * 100_000
    parts = list(promotion.requests([long] * 6))
    assert all(sum(len(t) for t in p) <= MAX_REQUEST_TOKENS for p in parts) and sum(map(len, parts)) == 6


def test_the_model_card_is_the_versions_description_cut_to_what_the_store_holds(files, name):
    from tinytf.tracking.champion import DESCRIPTION_LIMIT, describe

    version = register(files, name, "bad.pt")
    describe(name, version, "# Model card\n\nA tiny classifier.\n")
    client = mlflow.MlflowClient()
    assert client.get_model_version(name, version).description == "# Model card\n\nA tiny classifier.\n"
    describe(name, version, "x" * (DESCRIPTION_LIMIT + 1))
    described = client.get_model_version(name, version).description
    assert len(described) == DESCRIPTION_LIMIT and described.endswith("the run's artifact model_card.md)")


def test_the_test_predictions_are_a_table_of_the_run(files, name, tmp_path):
    from tinytf.tracking.champion import TEST_TABLE, log_test_table

    with mlflow.start_run() as run:
        log_test_table(["a fine film", "dull"], ["bad", "good"], [1, 0], [1, 1], [0.75, 0.5])
    path = mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path=TEST_TABLE, dst_path=str(tmp_path)
    )
    table = json.loads(Path(path).read_text(encoding="utf-8"))
    assert table["columns"] == ["text", "label", "prediction", "probability"]
    assert table["data"] == [["a fine film", "good", "good", 0.75], ["dull", "bad", "good", 0.5]]


def test_the_same_weights_again_reuse_their_version_and_stay_champion(files, name, capsys):
    old = champion_of(files, name, "bad.pt")
    worse = register(files, name, "good.pt")
    promotion.settle(name, promotion.decide(name, worse, TEXTS, LABELS))  # not promoted
    client = mlflow.MlflowClient()
    client.set_model_version_tag(name, old, promotion.EXPERIMENT_TAG, "lucky-exp")
    capsys.readouterr()
    again = register(files, name, "bad.pt")  # a rerun whose served weights did not change
    assert again == old and "reused" in capsys.readouterr().err
    [rerun] = mlflow.search_runs(order_by=["attributes.start_time DESC"], max_results=1, output_format="list")
    assert rerun.data.tags["tinytf.registered_version"] == old  # the run says which version it reused
    assert len(client.search_model_versions(f"name = '{name}'")) == 2  # no version added
    decision = promotion.decide(name, again, TEXTS, LABELS)
    assert decision == promotion.Decision(
        True, f"kept: version {old} is @champion (the same weights)", old, old
    )
    promotion.settle(name, decision)
    assert promotion.aliases(name) == {"champion": old}  # @previous is not the champion itself
    # the workspace's run claims a version an experiment registered first
    promotion.claim(name, again)
    assert promotion.EXPERIMENT_TAG not in client.get_model_version(name, old).tags
    # the same weights read with another tokenizer are another model
    other = register(files, name, "bad.pt", tokenizer="other.json")
    assert other not in (old, worse)


def test_the_served_model_is_the_classifier_without_the_lm_head_and_answers_as_before(files, name):
    import numpy as np
    import pandas as pd

    from tinytf.model.checkpoint import load_model
    from tinytf.model.param_count import classifier_parameters
    from tinytf.tracking.predictor import SentimentPredictor

    root = files["root"]
    version = register(files, name, "bad_too.pt")
    served = mlflow.pyfunc.load_model(f"models:/{name}/{version}")
    model = served.unwrap_python_model().predictor.model
    trained = load_model(root / "bad_too.pt")
    assert model.lm_head is None and not any(k.startswith("lm_head.") for k in model.state_dict())
    # what the model card counts (evaluate's card_facts) is what is served, all of it
    assert sum(p.numel() for p in model.parameters()) == classifier_parameters(trained)
    assert classifier_parameters(trained) < sum(p.numel() for p in trained.parameters())
    texts = ["a gripping film", "dull, dull, dull", "a film"]
    before = SentimentPredictor.from_files(
        root / "bad_too.pt", root / "tokenizer.json", root / "labels.json", 16
    )
    answered = served.predict(pd.DataFrame({"text": texts}))
    pd.testing.assert_frame_equal(answered, before.predict(texts))
    assert np.array_equal(answered["p_bad"].to_numpy(), before.predict(texts)["p_bad"].to_numpy())
    # the logged model is named for what it is
    [logged] = mlflow.search_logged_models(
        filter_string=f"source_run_id = '{client_run(name, version)}'", output_format="list"
    )
    assert logged.name == "classifier"


def client_run(name: str, version: str) -> str:
    return mlflow.MlflowClient().get_model_version(name, version).run_id
