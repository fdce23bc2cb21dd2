"""A model file proves it is whole (issue 57): its JSON records the weights' sha256, and every
reader refuses a mismatch in one line naming the file and the stage that writes it. Once 5 KB
zeroed inside pretrained.pt still loaded, and `tinytf score` answered with other numbers."""

from __future__ import annotations

import json

import pytest

from tests.helpers.model_fixtures import build
from tinytf.cli.main import main
from tinytf.errors import DataError
from tinytf.model.checkpoint import load_model, load_weights, save_model
from tinytf.train.starts import build_classifier, classifier_config


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "models" / "pretrained.pt"
    save_model(path, build(d_model=64, d_ff=128), {"pretrain_tokens": 10}, stage="pretrain")
    return path


def zero_range(path, start: int = 2000, size: int = 5000) -> None:
    data = bytearray(path.read_bytes())
    assert len(data) > start + size
    data[start : start + size] = bytes(size)
    path.write_bytes(bytes(data))


def test_the_json_records_the_weights_digest_and_the_stage(saved):
    meta = json.loads(saved.with_suffix(".json").read_text())
    assert len(meta["sha256"]) == 64 and meta["stage"] == "pretrain" and meta["pretrain_tokens"] == 10
    assert load_model(saved).config.d_model == 64  # whole: loads


def test_a_zeroed_range_is_refused_by_every_reader_in_one_line(saved):
    zero_range(saved)
    with pytest.raises(DataError) as by_model:
        load_model(saved)
    with pytest.raises(DataError) as by_weights:
        load_weights(saved)
    config = classifier_config(saved, n_classes=2)
    with pytest.raises(DataError) as by_finetune:  # finetune's and grid's pretrained start
        build_classifier("pretrained", config, saved, seed=1)
    for err in (by_model, by_weights, by_finetune):
        message = str(err.value)
        assert message.startswith(f"{saved}: damaged: its sha256") and "\n" not in message
        assert "stage pretrain" in message and "dvc repro -f -s pretrain" in message


def test_the_served_bundle_names_evaluate_as_what_rebuilds_it(saved):
    zero_range(saved, start=100, size=64)
    with pytest.raises(DataError, match=r"dvc repro -f -s evaluate"):
        load_model(saved, rebuild="register the model again with `dvc repro -f -s evaluate`")


def test_score_refuses_a_damaged_model_in_one_line(saved, tmp_path, capsys):
    zero_range(saved)
    tokenizer = tmp_path / "tokenizer.json"  # there, so the model is what the command checks
    tokenizer.write_text("{}")
    code = main(["score", "a sentence", "--model", str(saved), "--tokenizer", str(tokenizer)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "damaged: its sha256" in err, err


def test_a_json_without_a_digest_is_loaded_as_before(saved):
    meta_path = saved.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    del meta["sha256"]
    meta_path.write_text(json.dumps(meta))
    assert load_model(saved).config.d_model == 64


@pytest.mark.parametrize(
    "edit, said",
    [
        ({"d_model": "64"}, "ModelConfig.d_model must be int, got '64'"),
        ({"d_model": 2**20}, "ModelConfig.d_model must be an integer from 1 to 16384, got 1048576"),
        ({"n_layer": 10**12}, "ModelConfig.n_layer must be an integer from 1 to 1024"),
        ({"dropout": "0.1"}, "ModelConfig.dropout must be float, got '0.1'"),
        ({"causal": "yes"}, "ModelConfig.causal must be bool, got 'yes'"),
        ({"pos_encoding": ["learned"]}, "ModelConfig.pos_encoding=['learned']; expected one of"),
        ({"width": 3}, "ModelConfig: unknown keys ['width']"),
    ],
)
def test_a_model_json_of_wrong_types_or_sizes_is_refused_in_one_line(saved, edit, said):
    """Issue 72: such a JSON failed as a traceback, or allocated terabytes before any check."""
    meta_file = saved.with_suffix(".json")
    meta = json.loads(meta_file.read_text())
    meta["model"].update(edit)
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(DataError) as err:
        load_model(saved)
    assert str(err.value).startswith(f"{meta_file}: damaged config beside the checkpoint (") and said in str(
        err.value
    )
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content", [[], {"stage": "pretrain"}, {"model": "tinytf"}])
def test_a_model_json_without_a_model_mapping_is_refused_in_one_line(saved, content):
    saved.with_suffix(".json").write_text(json.dumps(content))
    with pytest.raises(
        DataError, match=r"damaged config beside the checkpoint \((not a JSON object|no `model`)"
    ):
        load_model(saved)


def test_damaged_weights_are_refused_before_anything_is_built(saved, monkeypatch):
    """A JSON's sizes once allocated (terabytes) before the weights' digest was checked."""
    import tinytf.model.checkpoint as checkpoint

    def built(config):
        pytest.fail(f"built {config} before checking the weights")

    monkeypatch.setattr(checkpoint, "TinyTransformer", built)
    zero_range(saved)
    with pytest.raises(DataError, match=r": damaged: its sha256"):
        load_model(saved)


HF_META = {
    "hf": {
        "source": "package:x/model",
        "n_classes": 2,
        "max_length": 128,
        "hf_config": {"model_type": "bert", "hidden_size": 384, "num_hidden_layers": 6, "vocab_size": 30522},
        "pooling": "hf",
    },
    "tokenizer": {"model": {}},
    "pad_id": 0,
}


@pytest.mark.parametrize(
    "edit, said",
    [
        (("hf_config", "hidden_size", 2**20), "hf_config sizes out of bounds: hidden_size=1048576"),
        (("hf_config", "num_hidden_layers", "6"), "hf_config sizes out of bounds: num_hidden_layers='6'"),
        (("hf", "width", 3), "unknown keys in `hf`: ['width']"),
        (("hf", "max_length", 10**9), "n_classes and max_length must be integers up to"),
        (("", "tokenizer", None), "no `tokenizer` mapping or no integer `pad_id`"),
        (("", "hf", []), "no `hf` mapping with an `hf_config`"),
    ],
)
def test_an_external_encoders_json_is_checked_before_transformers_builds_it(saved, edit, said):
    meta = json.loads(json.dumps(HF_META))
    where, key, value = edit
    node = meta if where == "" else meta["hf"] if where == "hf" else meta["hf"]["hf_config"]
    node[key] = value
    meta_file = saved.with_suffix(".json")
    meta_file.write_text(json.dumps(meta))  # no sha256: the weights are not checked
    with pytest.raises(DataError) as err:
        load_model(saved)
    assert str(err.value).startswith(f"{meta_file}: damaged config beside the checkpoint (")
    assert said in str(err.value) and "\n" not in str(err.value)
