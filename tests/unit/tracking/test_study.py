"""One repro's runs as the MLflow UI shows them: the study tag, the matrix's parent run (commit,
params, note, best child) and the fine-tuning runs' roles and names."""

import pytest

from tinytf.tracking.connect import project_root
from tinytf.tracking.runs import stage_run
from tinytf.tracking.study import NOTES, report_best, study_id


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("DVC_EXP_NAME", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("grid:\n  lrs: [0.1, 0.01]  # a comment\n")
    return tmp_path


def runs(root):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=["tinytf-test"])


def test_the_study_id_changes_with_the_params_values_and_the_commit_not_with_a_comment(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("a: 1  # one\n")
    first = study_id("c0ffee" * 7, params)
    params.write_text("# the same values\na: 1\n")
    assert study_id("c0ffee" * 7, params) == first and first.endswith("@c0ffeec0ffee")
    params.write_text("a: 2\n")
    assert study_id("c0ffee" * 7, params) != first
    assert (
        study_id("beef" * 10, tmp_path / "params.yaml").split("@")[0] == study_id("c", params).split("@")[0]
    )


def test_a_matrix_parent_holds_its_commit_params_note_and_best_child(store):
    accuracies = {"grid-AdamW": 0.71, "grid-SGD": 0.64, "grid-Adam": 0.71}
    for name, accuracy in accuracies.items():
        with stage_run(
            "grid",
            {"grid": {"cell": name}},
            "tinytf-test",
            run_name=name,
            group_key="k1",
            group_params={"grid": {"lrs": [0.1, 0.01], "seed": 1}},
        ) as tracker:
            tracker.call("report_best", report_best, project_root(), "validation_accuracy", accuracy)
            assert tracker.active, tracker.failure
    frame = runs(store)
    [parent] = frame[frame["tags.tinytf.stage"] == "grid (parent)"].to_dict("records")
    cells = frame[frame["tags.tinytf.stage"] == "grid"]
    assert set(cells["tags.mlflow.parentRunId"]) == {parent["run_id"]}
    assert set(frame["tags.tinytf.study"]) == {study_id("unknown", store / "params.yaml")}
    assert parent["tags.mlflow.source.git.commit"] == "unknown"  # no git repository here
    assert parent["params.grid.lrs"] == "[0.1, 0.01]" and parent["params.grid.seed"] == "1"
    assert parent["tags.mlflow.note.content"] == NOTES["grid"]
    # the first of the best two keeps it: a tie is not better
    assert parent["metrics.best_validation_accuracy"] == 0.71
    assert parent["tags.tinytf.best_child"] == "grid-AdamW"
    assert sorted(cells["metrics.validation_accuracy"]) == [0.64, 0.71, 0.71]


def test_a_lower_is_better_metric_keeps_the_lowest_and_another_study_gets_its_own_parent(store):
    for name, perplexity, params in (
        ("v-a", 40.0, "a: 1\n"),
        ("v-b", 30.0, "a: 1\n"),
        ("v-c", 9.0, "a: 2\n"),
    ):
        (store / "params.yaml").write_text(params)
        with stage_run("variants", {}, "tinytf-test", run_name=name, group_key="k") as tracker:
            tracker.call(
                "report_best", report_best, project_root(), "validation_perplexity", perplexity, False
            )
    frame = runs(store)
    parents = frame[frame["tags.tinytf.stage"] == "variants (parent)"].set_index("tags.tinytf.best_child")
    assert sorted(parents.index) == ["v-b", "v-c"]
    assert parents.loc["v-b", "metrics.best_validation_perplexity"] == 30.0
    assert parents.loc["v-c", "metrics.best_validation_perplexity"] == 9.0


def test_finetune_children_say_their_role_and_choice_and_a_dropped_candidate_shows_no_test(
    store, monkeypatch
):
    import pandas as pd

    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "tinytf-test")  # the children's, as their parent's

    from tinytf.tracking.finetune_runs import FINETUNE_NOTE, FinetuneChildren

    def tags(start, labels, seed, lr, dropout, snapshot="final", body=1):
        keys = ("start", "labels", "seed", "snapshot", "lr", "dropout", "body")
        return dict(zip(keys, (start, labels, seed, snapshot, lr, dropout, body), strict=True))

    held = [  # the search's runs come first, as run_finetune records them
        tags("pretrained", "60", 1, 0.001, 0.1),  # the chosen recipe: a curve run
        tags("pretrained", "60", 1, 0.003, 0.1),  # dropped
        tags("scratch", "all", 2, 0.001, 0.1, body=None),
        tags("probe", "all", 2, None, None, body=2),
        tags("pretrained", "60", 1, 0.001, 0.1, snapshot="epoch1"),
    ]
    accuracy = [0.6, 0.7, 0.8, 0.75, 0.55]  # the dropped one best on validation: its seed was lucky
    n_train = [60, 60, 400, 400, 60]
    rows = pd.DataFrame(held).assign(
        chosen=[True, False, True, True, True], validation_accuracy=accuracy, n_train=n_train
    )
    rows.loc[rows["start"] == "probe", ["lr", "dropout"]] = float("nan")  # as runs.csv reads back
    children = FinetuneChildren()
    with stage_run("finetune", {}) as parent:
        for one, test in zip(held, (0.61, 0.9, 0.79, 0.74, 0.5), strict=True):
            with children(one) as [callback]:
                callback.replay([("on_epoch", 1, {"validation_accuracy": 0.5, "epoch": 1, "step": 4})])
                callback.on_end({"test_accuracy": test, "test_loss": 0.6})
        children.log(rows, parent)
    frame = runs(store)
    kids = frame[frame["tags.mlflow.parentRunId"].notna()].set_index("tags.mlflow.runName")
    assert list(kids.sort_index().index) == [
        "finetune-pretrained-60-seed1-body1",
        "finetune-pretrained-60-seed1-body1-epoch1",
        "finetune-pretrained-60-seed1-lr0.003-dropout0.1",
        "finetune-probe-all-seed2-body2",
        "finetune-scratch-all-seed2",
    ]
    assert kids["tags.tinytf.role"].to_dict() == {
        "finetune-pretrained-60-seed1-body1": "curve",
        "finetune-pretrained-60-seed1-lr0.003-dropout0.1": "recipe_search",
        "finetune-scratch-all-seed2": "curve",
        "finetune-probe-all-seed2-body2": "curve",
        "finetune-pretrained-60-seed1-body1-epoch1": "snapshot",
    }
    dropped = kids.loc["finetune-pretrained-60-seed1-lr0.003-dropout0.1"]
    assert dropped["tags.tinytf.chosen"] == "false" and pd.isna(dropped["metrics.test_accuracy"])
    assert (
        dropped["metrics.validation_accuracy"] == 0.7 and dropped["metrics.epoch_validation_accuracy"] == 0.5
    )
    chosen = kids.drop(index=dropped.name)
    assert set(chosen["tags.tinytf.chosen"]) == {"true"} and chosen["metrics.test_accuracy"].notna().all()
    # the label count is each metric's step: a chart puts it on its x axis
    import mlflow

    history = mlflow.MlflowClient().get_metric_history(
        kids.loc["finetune-scratch-all-seed2", "run_id"], "test_accuracy"
    )
    assert [(m.step, m.value) for m in history] == [(400, 0.79)]
    top = frame[frame["tags.mlflow.parentRunId"].isna()].iloc[0]
    assert top["tags.mlflow.note.content"] == FINETUNE_NOTE
    assert top["tags.tinytf.best_child"] == "finetune-scratch-all-seed2"  # a curve run, not the dropped one
    assert top["metrics.best_validation_accuracy"] == 0.8


def test_a_run_without_a_recipe_is_named_and_nothing_is_logged_while_tracking_is_off(store):
    import pandas as pd

    from tinytf.tracking.finetune_runs import FinetuneChildren, finetune_name
    from tinytf.tracking.runs import Tracker

    tags = {"start": "probe", "labels": "60", "seed": 1, "snapshot": "final", "lr": None, "dropout": None}
    assert finetune_name(tags, "recipe_search") == "finetune-probe-60-seed1-lrnone-dropoutnone"
    children = FinetuneChildren()
    with children(tags) as [callback]:
        callback.on_end({"test_accuracy": 0.5})
    children.log(pd.DataFrame([tags | {"chosen": True}]), Tracker(None, "disabled"))
    assert not (store / "mlflow.db").exists()
