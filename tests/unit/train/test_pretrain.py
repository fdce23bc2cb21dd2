import json

import pytest
import torch

from tests.helpers.lm_fixtures import make_corpus_dir, tiny_model, tiny_pretrain
from tinytf.data.tokenizer import load_tokenizer
from tinytf.errors import DataError
from tinytf.model.checkpoint import load_model, load_training_state, save_model, save_training_state
from tinytf.train.lm import mask_tokens, score_text
from tinytf.train.loop import Callback, TrainingDiverged
from tinytf.train.pretrain import pretrain, write_outputs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus_dir(tmp_path_factory.mktemp("corpus"))


def run(corpus, state=None, callbacks=(), **overrides):
    return pretrain(
        tiny_model(),
        tiny_pretrain(**overrides),
        seed=3,
        data_dir=corpus,
        state_path=state,
        params_hash="h",
        callbacks=list(callbacks),
        stats_path=corpus / "none.json",
    )


def test_training_lowers_the_loss_and_reports_every_split(corpus):
    result = run(corpus, steps_per_epoch=15, epochs=2)
    first, last = result.history[0], result.history[-1]
    assert [h["epoch"] for h in result.history] == [1, 2]
    assert last["validation_loss"] < first["validation_loss"]
    for split in ("train", "validation", "test"):
        assert last[f"{split}_perplexity"] == pytest.approx(torch.tensor(last[f"{split}_loss"]).exp().item())
    assert [s["name"] for s in result.samples] == ["normal", "weird", "long"]


def test_same_seed_gives_identical_metrics(corpus):
    assert run(corpus).history == run(corpus).history


class Crash(Callback):
    def __init__(self, at):
        self.at = at

    def on_step(self, step, metrics):
        if step == self.at:
            raise RuntimeError("killed")


def test_resume_after_a_crash_matches_an_uninterrupted_run(corpus, tmp_path):
    reference = run(corpus)
    state = tmp_path / "state.pt"
    with pytest.raises(RuntimeError, match="killed"):
        run(corpus, state, [Crash(at=10)])  # last checkpoint: step 8
    assert torch.load(state, weights_only=True)["step"] == 8
    resumed = run(corpus, state)
    assert resumed.history == reference.history
    for name, tensor in reference.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name


def test_state_from_other_params_is_not_resumed(corpus, tmp_path, capsys):
    state = tmp_path / "state.pt"
    run(corpus, state)
    other = pretrain(
        tiny_model(),
        tiny_pretrain(),
        seed=3,
        data_dir=corpus,
        state_path=state,
        params_hash="other",
        stats_path=corpus / "none.json",
    )
    assert capsys.readouterr().out.count("made with other params, data or code; starting fresh") == 1
    assert len(other.history) == 2
    # the pretrain stage asks first whether it resumes (for its MLflow run): that asks quietly,
    # so a stale state is said once, by the loop
    save_training_state(state, {"params_hash": "other"})
    assert load_training_state(state, "a third", say=False) is None
    assert capsys.readouterr().out == ""
    assert load_training_state(state, "a third") is None
    assert "starting fresh" in capsys.readouterr().out


def test_state_from_other_data_is_not_resumed(corpus, tmp_path, capsys):
    state = tmp_path / "state.pt"
    run(corpus, state)
    (tmp_path / "other").mkdir()
    other_corpus = make_corpus_dir(tmp_path / "other", seed=1)  # same params, other tokens
    pretrain(
        tiny_model(),
        tiny_pretrain(),
        seed=3,
        data_dir=other_corpus,
        state_path=state,
        params_hash="h",
        stats_path=corpus / "none.json",
    )
    assert "made with other params, data or code; starting fresh" in capsys.readouterr().out


def test_non_finite_loss_stops_naming_the_step(corpus, tmp_path):
    with pytest.raises(TrainingDiverged, match=r"loss is (nan|inf) at step 2; stopped"):
        run(corpus, tmp_path / "s.pt", lr=1e30, grad_clip=0)  # the second step sees the blown-up weights


def test_masked_lm_masks_about_15_percent_with_80_10_10():
    ids = torch.randint(10, 1000, (64, 128))
    inputs, targets = mask_tokens(ids, 1000, mask_id=3, prob=0.15, generator=torch.Generator().manual_seed(0))
    chosen = targets != -100
    assert chosen.float().mean() == pytest.approx(0.15, abs=0.01)
    assert (inputs[chosen] == 3).float().mean() == pytest.approx(0.8, abs=0.03)
    assert (inputs[chosen] == ids[chosen]).float().mean() == pytest.approx(0.1, abs=0.03)
    assert torch.equal(inputs[~chosen], ids[~chosen])


def test_masked_objective_trains_a_bidirectional_model(corpus, tmp_path):
    result = run(corpus, objective="masked")
    assert result.model.config.causal is False
    assert result.samples == []  # a masked LM does not score text left to right
    assert result.history[-1]["validation_loss"] > 0
    write_outputs(result, tmp_path / "m.pt", tmp_path / "rep", {"params_hash": "h"})
    samples = (
        tmp_path / "rep" / "samples.md"
    ).read_text()  # an output dvc.yaml declares, whatever the objective
    assert samples.startswith("| | train | dev |") and "No sample sentences scored: a masked LM" in samples


def test_outputs_and_score_round_trip(corpus, tmp_path):
    result = run(corpus)
    metrics = write_outputs(result, tmp_path / "m.pt", tmp_path / "rep", {"params_hash": "h"})
    assert json.loads((tmp_path / "rep" / "metrics.json").read_text())["steps"] == metrics["steps"] == 12
    assert "| Perplexity |" in (tmp_path / "rep" / "samples.md").read_text()
    model = load_model(tmp_path / "m.pt", expect=result.model.config)
    tokenizer = load_tokenizer(corpus / "tokenizer.json")
    text = "the cat sat on the mat"
    assert score_text(model, tokenizer, text)["loss"] == pytest.approx(
        score_text(result.model, tokenizer, text)["loss"]
    )


def test_long_text_is_scored_in_windows(corpus):
    result = run(corpus)
    tokenizer = load_tokenizer(corpus / "tokenizer.json")
    text = " ".join(["the big red dog ran under the log"] * 10)  # far beyond block_size 16
    scored = score_text(result.model, tokenizer, text)
    assert scored["tokens"] == len(tokenizer.encode(text, add_special_tokens=False).ids)


def test_checkpoint_safety(corpus, tmp_path):
    result = run(corpus)
    save_model(tmp_path / "m.pt", result.model)
    other = result.model.config.__class__(**{**result.model.config.to_dict(), "d_model": 64})
    with pytest.raises(DataError, match="d_model: checkpoint has 32, expected 64"):
        load_model(tmp_path / "m.pt", expect=other)
    evil = tmp_path / "evil.pt"
    torch.save({"payload": Crash(1)}, evil)
    meta = json.loads((tmp_path / "m.json").read_text())
    (tmp_path / "evil.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="damaged: its sha256 is not the one"):  # the digest first
        load_model(evil)
    meta.pop("sha256")  # a JSON from before digests: the unpickler itself refuses the payload
    (tmp_path / "evil.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match="refused"):
        load_model(evil)


def test_state_from_other_code_is_not_resumed(corpus, tmp_path, capsys, monkeypatch):
    import tinytf.train.pretrain as pretrain_module

    state = tmp_path / "state.pt"
    run(corpus, state)
    monkeypatch.setattr(pretrain_module, "code_fingerprint", lambda: "another-training-step")
    again = run(corpus, state)
    assert "made with other params, data or code; starting fresh" in capsys.readouterr().out
    assert len(again.history) == 2
