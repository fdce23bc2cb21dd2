import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from tinytf.analysis.evaluation import bootstrap_interval, classification_report, paired_comparison
from tinytf.analysis.grid import best_cell, cell_key, load_cells
from tinytf.data.sentiment import SentimentData
from tinytf.params.config import GridParams
from tinytf.train.classify import ClassifierRecipe, evaluate_test_split, train_classifier
from tinytf.train.loop import Callback
from tinytf.train.runtime import Runtime
from tinytf.train.starts import build_classifier, classifier_config

CPU = Runtime(torch.device("cpu"), "fp32", False)


def train(workdir, start, state=None, callbacks=(), epochs=3, seed=1):
    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    model = build_classifier(start, classifier_config(pretrained, 2), pretrained, seed)
    recipe = ClassifierRecipe(
        start=start, optimizer="AdamW", lr=3e-3, batch_size=16, epochs=epochs, max_length=32, seed=seed
    )
    run = train_classifier(model, data, recipe, CPU, callbacks=list(callbacks), state_path=state)
    return data, run


def test_pretrained_start_loads_the_checkpoint_body(workdir):
    pretrained = workdir / "models" / "pretrained.pt"
    model = build_classifier("pretrained", classifier_config(pretrained, 2), pretrained, seed=1)
    saved = torch.load(pretrained, weights_only=True)
    for name, tensor in model.base.state_dict().items():
        assert torch.equal(tensor, saved[f"base.{name}"]), name
    scratch = build_classifier("scratch", classifier_config(pretrained, 2), pretrained, seed=1)
    assert not torch.equal(scratch.base.tok_emb.weight, model.base.tok_emb.weight)
    assert torch.equal(scratch.cls_head.weight, model.cls_head.weight)  # same seed, same head


def test_frozen_start_trains_only_the_head(workdir):
    pretrained = workdir / "models" / "pretrained.pt"
    before = torch.load(pretrained, weights_only=True)
    _, run = train(workdir, "frozen", epochs=1)
    for name, tensor in run.model.base.state_dict().items():
        assert torch.equal(tensor, before[f"base.{name}"]), name
    assert not torch.equal(run.model.cls_head.weight, before["cls_head.weight"])


def test_classifier_learns_and_reports_each_epoch(workdir):
    data, run = train(workdir, "scratch", epochs=4)
    assert [h["epoch"] for h in run.history] == [1, 2, 3, 4]
    assert run.history[-1]["validation_accuracy"] > 0.8
    assert set(run.history[0]) >= {"train_loss", "train_accuracy", "validation_loss", "validation_accuracy"}
    test = evaluate_test_split(run.model, data, 32, CPU)
    assert test["test_accuracy"] > 0.8 and len(test["predictions"]) == 32


def test_a_validation_pass_in_bf16_gives_the_numbers_of_one_autocast_per_batch(workdir):
    """predict enters autocast once for the pass, so each weight is cast to bf16 once; the
    predictions and the loss are those of the loop that entered it for every batch."""
    from tinytf.data.batching import sentiment_loader
    from tinytf.model.transformer import cls_loss
    from tinytf.train.classify import predict

    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    model = build_classifier("pretrained", classifier_config(pretrained, 2, 0.1), pretrained, seed=1)
    bf16 = Runtime(torch.device("cpu"), "bf16", False)
    split = data.splits["validation"]
    preds, labels, loss, probabilities = predict(model, split, 8, 32, bf16, None)
    model.eval()
    loader = sentiment_loader(split, 8, 32, shuffle=False, seed=0, prefix_id=None, group_by_length=True)
    order = np.asarray([i for batch in loader.batch_sampler for i in batch])
    expected_preds, expected_probabilities, loss_sum = [], [], 0.0
    with torch.no_grad():
        for batch in loader:
            with bf16.autocast():
                logits = model.forward_cls(batch["input_ids"], batch["attention_mask"])
            loss_sum += float(cls_loss(logits, batch["labels"])) * len(batch["labels"])
            expected_preds.append(logits.argmax(-1))
            expected_probabilities.append(torch.softmax(logits.float(), -1).max(-1).values)
    inverse = np.argsort(order)
    assert np.array_equal(preds, torch.cat(expected_preds).numpy()[inverse])
    assert np.array_equal(probabilities, torch.cat(expected_probabilities).numpy()[inverse])
    assert loss == loss_sum / len(labels)  # bit for bit


class Crash(Callback):
    def on_step(self, step, metrics):
        if step == 9:
            raise RuntimeError("killed")


def test_classifier_resumes_mid_epoch_to_the_same_result(workdir, tmp_path):
    _, reference = train(workdir, "pretrained")
    with pytest.raises(RuntimeError):
        train(workdir, "pretrained", tmp_path / "s.pt", [Crash()])  # 6 steps/epoch: dies in epoch 2
    _, resumed = train(workdir, "pretrained", tmp_path / "s.pt")
    assert resumed.history == reference.history


def test_classification_report_on_a_known_case():
    labels = np.array([0, 0, 0, 1, 1, 2])
    preds = np.array([0, 0, 1, 1, 1, 0])
    report = classification_report(preds, labels, ["a", "b", "c"], resamples=500)
    assert report["accuracy"] == pytest.approx(4 / 6)
    assert report["confusion_matrix"] == [[2, 1, 0], [0, 2, 0], [1, 0, 0]]
    assert report["per_class"]["a"]["precision"] == pytest.approx(2 / 3)
    assert report["per_class"]["b"]["recall"] == pytest.approx(1.0)
    assert report["per_class"]["c"]["f1"] == 0.0
    low, high = report["accuracy_ci95"]
    assert low <= report["accuracy"] <= high


def test_bootstrap_interval_matches_the_binomial_width_and_is_seeded():
    correct = np.r_[np.ones(800), np.zeros(200)]
    low, high = bootstrap_interval(correct, resamples=2000, seed=3)
    # the normal approximation's 95 % half-width for p = 0.8, n = 1000 is 0.0248
    assert low < 0.8 < high
    assert high - low == pytest.approx(2 * 1.96 * (0.8 * 0.2 / 1000) ** 0.5, rel=0.1)
    assert bootstrap_interval(correct, resamples=2000, seed=3) == (low, high)
    assert bootstrap_interval(np.ones(50)) == (1.0, 1.0)  # every answer right: no spread


def test_paired_comparison_sign_and_p_value():
    result = paired_comparison([0.80, 0.82, 0.81], [0.70, 0.71, 0.72])
    assert result["mean_difference"] == pytest.approx(0.1, abs=1e-9)
    assert result["p_value"] < 0.01
    assert "sign_test_p" not in result  # its smallest p at 3 seeds, 2 / 2^3 = 0.25, cannot reject


def test_paired_comparison_without_spread_leaves_the_decision_to_the_sign_test():
    # SST-2 gave +29 of 1,821 test sentences in every seed: the t-test divides by zero
    same = paired_comparison([0.80] * 6, [0.784] * 6)
    assert same["t"] is None and same["p_value"] is None
    assert same["sign_test_p"] == pytest.approx(2 / 2**6)
    # one tie is not counted: 5 of 6 nonzero differences positive
    mixed = paired_comparison([0.8, 0.8, 0.8, 0.8, 0.8, 0.7, 0.8], [0.7, 0.7, 0.7, 0.8, 0.7, 0.8, 0.7])
    assert mixed["sign_test_p"] == pytest.approx(0.21875)
    assert "sign_test_p" not in paired_comparison([0.8, 0.8], [0.8, 0.8])
    assert "sign_test_p" not in paired_comparison([0.80] * 5, [0.784] * 5)  # 5 seeds: p >= 0.0625


def test_the_same_count_difference_is_no_spread_even_where_floats_differ_in_the_last_bit():
    pretrained, scratch = [1382 / 1821, 1417 / 1821, 1399 / 1821], [1353 / 1821, 1388 / 1821, 1370 / 1821]
    # +29 sentences in each seed, yet not three equal floats
    assert len({p - s for p, s in zip(pretrained, scratch, strict=True)}) > 1
    same = paired_comparison(pretrained, scratch)
    assert same["std_difference"] == 0.0 and same["p_value"] is None  # not t = inf, p = 0
    assert "sign_test_p" not in same  # 3 seeds: too few for a sign test to reject


def test_best_cell_breaks_ties_on_validation_loss():
    table = pd.DataFrame(
        [
            {"key": "a", "validation_accuracy": 0.8, "validation_loss": 0.5},
            {"key": "b", "validation_accuracy": 0.8, "validation_loss": 0.4},
            {"key": "c", "validation_accuracy": 0.7, "validation_loss": 0.1},
        ]
    )
    assert best_cell(table)["key"] == "b"


def test_grid_cells_are_found_by_name_and_missing_ones_named(tmp_path):
    params = GridParams(optimizers=["SGD"], lrs=[0.001], batch_sizes=[8], epochs=[1])
    cell = {"optimizer": "SGD", "lr": 0.001, "batch_size": 8, "epochs": 1}
    final = {"validation_accuracy": 0.6, "validation_loss": 0.7}
    (tmp_path / "SGD-lr0.001-bs8-ep1.result.json").write_text(
        json.dumps({"cell": cell, "final": final, "history": [], "checkpoint": "x.pt"})
    )
    stale = {**cell, "lr": 0.5}  # a cell of removed params: ignored
    (tmp_path / "SGD-lr0.5-bs8-ep1.result.json").write_text(
        json.dumps({"cell": stale, "final": final, "history": [], "checkpoint": "y.pt"})
    )
    table = load_cells(params, tmp_path)
    assert table["key"].tolist() == [cell_key(**cell)] and table["checkpoint"].tolist() == ["x.pt"]
    with pytest.raises(FileNotFoundError, match="no result for grid cell SGD-lr0.01-bs8-ep1"):
        load_cells(GridParams(optimizers=["SGD"], lrs=[0.01], batch_sizes=[8], epochs=[1]), tmp_path)


def test_a_cell_key_writes_the_lr_as_dvc_s_matrix_does():
    # what `dvc stage list` prints for lrs [1e-3, 0.01, 1, 2.0e-5] (DVC 3.67), beside the floats
    # our loader makes of them (1e-3 is a YAML 1.1 string it converts; 1 becomes 1.0)
    for loaded, dvc in ((float("1e-3"), "0.001"), (0.01, "0.01"), (1.0, "1"), (2.0e-5, "2e-05")):
        assert cell_key("SGD", loaded, 8, 1) == f"SGD-lr{dvc}-bs8-ep1"


def test_finetune_attention_puts_every_start_under_one_attention(workdir):
    """A masked body fine-tunes bidirectionally by default (its own attention); finetune.attention
    names one for every start, so a masked and a causal run's scratch starts are the same model."""
    pretrained = workdir / "models" / "pretrained.pt"
    own = classifier_config(pretrained, 2)
    assert own.causal  # the fixture's body is a causal LM
    assert not classifier_config(pretrained, 2, attention="bidirectional").causal
    assert classifier_config(pretrained, 2, attention="causal").causal
    data = SentimentData.load(workdir)
    batch = data.splits["validation"].input_ids[0][:8]
    ids = torch.tensor([batch, batch])
    ids[1, -1] = (ids[1, -1] + 1) % own.vocab_size  # change the last token only
    for attention, sees_ahead in (("causal", False), ("bidirectional", True)):
        model = build_classifier(
            "scratch", classifier_config(pretrained, 2, attention=attention), pretrained, 1
        )
        hidden = model.eval().base(ids)
        moved = float((hidden[0, :-1] - hidden[1, :-1]).abs().max())
        assert (moved > 1e-6) == sees_ahead, (attention, moved)


def test_patience_ends_a_run_that_many_validation_passes_after_its_best(workdir, monkeypatch):
    """Protocol v3: a run stops once `patience` passes in a row fail to beat its best (the first
    best on a tie), keeps the best epoch's weights, and trains no step after the stop."""
    import tinytf.train.classify as classify

    def scripted(accuracies):
        scores = iter(accuracies)

        def predict(*args, **kwargs):  # a validation pass of 8 texts with the next accuracy
            right = round(next(scores) * 8)
            return classify.Predictions(
                np.array([1] * right + [0] * (8 - right)), np.ones(8), 0.5, np.ones(8)
            )

        return predict

    passes = [0.5, 0.75, 0.75, 0.625, 0.875, 1.0]  # best at pass 2; passes 3 and 4 no better
    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    recipe = ClassifierRecipe(
        start="pretrained", optimizer="AdamW", lr=3e-3, batch_size=16, epochs=6, max_length=32, seed=1,
        keep_best=True, patience=2,
    )  # fmt: skip
    monkeypatch.setattr(classify, "predict", scripted(passes))
    model = build_classifier("pretrained", classifier_config(pretrained, 2), pretrained, 1)
    run = train_classifier(model, data, recipe, CPU)
    assert [h["data_epochs"] for h in run.history] == [1, 2, 3, 4] and run.best_epoch == 2
    assert run.history[-1]["step"] == 4 * math.ceil(len(data.splits["train"]) / 16)
    monkeypatch.setattr(classify, "predict", scripted(passes))
    model = build_classifier("pretrained", classifier_config(pretrained, 2), pretrained, 1)
    whole = train_classifier(model, data, ClassifierRecipe(**{**recipe.__dict__, "patience": 0}), CPU)
    assert len(whole.history) == 6 and whole.best_epoch == 6


def test_a_run_whose_loss_goes_nan_keeps_its_best_epoch_before_it(workdir, monkeypatch):
    """A candidate lr too high for a start ends its run at the non-finite loss, as patience ends
    one: its best epoch so far is the result. Before any epoch was evaluated, there is none."""
    import tinytf.train.classify as classify
    from tinytf.train.loop import TrainingDiverged

    data = SentimentData.load(workdir)
    per_epoch = math.ceil(len(data.splits["train"]) / 16)
    real = classify.classifier_step_loss

    def nan_after(limit):
        def build(model, runtime):
            step, calls = real(model, runtime), [0]

            def stepped(ids, mask, y):
                loss, logits = step(ids, mask, y)
                calls[0] += 1
                return (loss * float("nan") if calls[0] > limit else loss), logits

            return stepped

        return build

    pretrained = workdir / "models" / "pretrained.pt"
    recipe = ClassifierRecipe(
        start="scratch", optimizer="AdamW", lr=3e-3, batch_size=16, epochs=4, max_length=32, seed=1,
        keep_best=True,
    )  # fmt: skip
    monkeypatch.setattr(classify, "classifier_step_loss", nan_after(per_epoch + 1))
    model = build_classifier("scratch", classifier_config(pretrained, 2), pretrained, 1)
    run = train_classifier(model, data, recipe, CPU)
    assert [h["data_epochs"] for h in run.history] == [1] and run.best_epoch == 1
    assert run.diverged_step == per_epoch + 2 and run.validation is not None
    assert all(torch.isfinite(p).all() for p in model.parameters())  # the best epoch's weights
    monkeypatch.setattr(classify, "classifier_step_loss", nan_after(1))
    model = build_classifier("scratch", classifier_config(pretrained, 2), pretrained, 1)
    with pytest.raises(TrainingDiverged, match="loss is nan at step 2"):
        train_classifier(model, data, recipe, CPU)
