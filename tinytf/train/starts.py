"""Every start a classifier can take (course reports 000/002), built in one place (`build_start`).

pretrained  base weights from the pretrained LM, a new classification head, all trained
scratch     the same architecture from a random init
frozen      the pretrained base frozen (and in eval mode, so no dropout), only the head trained
hf          an external encoder (the `hf:` section) with a new head and its own tokenizer
trained     a classifier an earlier stage trained, loaded whole (evaluate's served cell)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tinytf.data.sentiment import SentimentData
from tinytf.errors import DataError
from tinytf.model import hf
from tinytf.model.checkpoint import load_model, load_weights, read_config
from tinytf.model.hf import HFClassifier
from tinytf.model.transformer import ModelConfig, TinyTransformer
from tinytf.params.starts import GRID_STARTS
from tinytf.train.runtime import seed_everything

STARTS = GRID_STARTS  # what params.yaml may name; `trained` is evaluate's own


@dataclass
class Start:
    model: TinyTransformer | HFClassifier
    data: SentimentData  # the splits as this model reads them
    max_length: int  # the length texts are cut to for it


def build_start(
    start: str,
    data: SentimentData,
    data_dir: str | Path,
    checkpoint: str | Path,
    max_length: int,
    seed: int = 0,
    dropout: float | None = None,
    attention: str = "pretraining",
    hf_params=None,
) -> Start:
    """The model `start` names, with the data and length it reads: `checkpoint` is the pretrained
    LM or (`trained`) the classifier; `seed` draws the new head (and scratch's whole model)."""
    if start == "trained":
        model = load_model(checkpoint)
    elif start == "hf":
        model = build_hf_classifier(
            hf_params.checkpoint, len(data.classes), hf_params.max_length, seed, dropout
        )
    else:
        config = classifier_config(checkpoint, len(data.classes), dropout, attention)
        model = build_classifier(start, config, checkpoint, seed)
    if isinstance(model, HFClassifier):  # its own tokenizer, carried in the model
        name = f"{model.config.source}@{model.config.max_length}"
        data = data.encoded_with(data_dir, model.text_tokenizer(), model.pad_id, name)
        max_length = model.config.max_length
    return Start(model, data, max_length)


def classifier_config(
    pretrained_path: str | Path, n_classes: int, dropout: float | None = None, attention: str = "pretraining"
) -> ModelConfig:
    """The pretrained model's architecture with a head for `n_classes`; its attention is the body's
    own (`pretraining`) unless `attention` names one."""
    config = read_config(pretrained_path)["model"]
    config["n_classes"] = n_classes
    if dropout is not None:
        config["dropout"] = dropout
    if attention != "pretraining":
        config["causal"] = attention == "causal"
    return ModelConfig.from_dict(config)


def build_classifier(
    start: str, config: ModelConfig, pretrained_path: str | Path, seed: int
) -> TinyTransformer:
    if start not in STARTS or start == "hf":
        raise DataError(f"unknown start '{start}'; expected one of {STARTS[:3]} (hf: build_hf_classifier)")
    seed_everything(seed)  # the head (and for scratch the whole model) starts from this seed
    model = TinyTransformer(config)
    if start in ("pretrained", "frozen"):
        model.load_base_state_dict(load_weights(pretrained_path))
    if start == "frozen":
        for p in model.base.parameters():
            p.requires_grad_(False)
    return model


def build_hf_classifier(
    checkpoint: str, n_classes: int, max_length: int, seed: int, dropout: float | None = None
) -> HFClassifier:
    """The external encoder with a new head drawn from `seed`."""
    seed_everything(seed)
    return hf.build(checkpoint, n_classes, max_length, dropout)
