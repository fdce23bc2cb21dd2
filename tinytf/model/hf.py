"""An external pretrained encoder (a Hugging Face `transformers` checkpoint) as one more start.

`HFClassifier` gives it our classifier's interface (`forward_cls(ids, mask)`, `config.n_classes`,
`config.pooling`); its head is `transformers`' own, newly initialised from the run's seed. A
checkpoint (`hf.checkpoint`) is a local directory, `package:<module>/<folder>` (a folder inside an
installed package) or a hub name. Its own tokenizer encodes the texts (special tokens included in
`max_length`), and a saved model carries it in the JSON beside the weights, so evaluate and the
champion encode as training did. `transformers` is imported only here, only for an `hf` start.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tinytf.errors import DataError

PACKAGE_PREFIX = "package:"


@dataclass
class HFConfig:
    source: str  # the checkpoint the body came from, as named in hf.checkpoint
    n_classes: int
    max_length: int
    hf_config: dict = field(default_factory=dict)  # transformers' own config (config.json)
    pooling: str = "hf"  # the head is the checkpoint's own: no [CLS] prefix of ours to add

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class HFClassifier(nn.Module):
    """The checkpoint's sequence classifier, carrying its tokenizer (tokenizer.json text, pad id)."""

    def __init__(self, model: nn.Module, config: HFConfig, tokenizer_json: str, pad_id: int):
        super().__init__()
        self.model = model
        self.config = config
        self.tokenizer_json, self.pad_id = tokenizer_json, pad_id

    @property
    def base(self) -> nn.Module:
        """The encoder without the classification head."""
        return self.model.base_model

    def forward_cls(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, attention_mask=mask).logits

    def text_tokenizer(self):
        """The checkpoint's tokenizer, truncating to the model's max_length (special tokens included)."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(self.tokenizer_json)
        tokenizer.no_padding()  # batches are padded by the collate, to their longest text
        tokenizer.enable_truncation(self.config.max_length)
        return tokenizer

    def meta(self) -> dict:
        """What the JSON beside a saved model holds: enough to rebuild it without the checkpoint."""
        return {
            "hf": self.config.to_dict(),
            "tokenizer": json.loads(self.tokenizer_json),
            "pad_id": self.pad_id,
        }


def _transformers():
    try:
        import transformers
    except ImportError:
        raise DataError(
            "the `hf` start needs `transformers`: pip install -e '.[hf]' in the clone (or pip install transformers)"
        ) from None
    transformers.logging.set_verbosity_error()  # its load report lists the new head as "MISSING"
    return transformers


def locate(checkpoint: str) -> str:
    """The directory or hub name `from_pretrained` gets for `checkpoint`; clear errors for the rest."""
    if not checkpoint:
        raise DataError(
            "hf.checkpoint: empty; name a local directory, package:<module>/<folder> or a hub name"
        )
    if checkpoint.startswith(PACKAGE_PREFIX):
        module, _, folder = checkpoint[len(PACKAGE_PREFIX) :].partition("/")
        spec = importlib.util.find_spec(module) if module else None
        if spec is None or not spec.submodule_search_locations:
            raise DataError(f"hf.checkpoint {checkpoint}: Python package '{module}' is not installed")
        path = Path(next(iter(spec.submodule_search_locations))) / folder
    elif Path(checkpoint).expanduser().exists() or checkpoint.startswith((".", "/", "~")):
        path = Path(checkpoint).expanduser()
    else:
        return checkpoint  # a hub name
    if not (path / "config.json").is_file():
        raise DataError(f"hf.checkpoint {checkpoint}: {path} holds no config.json (not a checkpoint folder)")
    return str(path)


def _from_pretrained(loader, checkpoint: str, **kwargs):
    where = locate(checkpoint)
    try:
        return loader.from_pretrained(where, **kwargs)
    except OSError as exc:  # what transformers raises for a model it cannot find or fetch
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False")
        why = (
            "HF_HUB_OFFLINE is set and the local Hugging Face cache does not hold it"
            if offline
            else "not a local folder, and the hub did not provide it"
        )
        raise DataError(
            f"hf.checkpoint {checkpoint}: cannot load ({why}): {str(exc).splitlines()[0]}"
        ) from None


# the names transformers' configs give the dropout on hidden states (BERT-like, DistilBERT-like)
DROPOUT_KEYS = ("hidden_dropout_prob", "dropout")


def build(checkpoint: str, n_classes: int, max_length: int, dropout: float | None = None) -> HFClassifier:
    """The pretrained body with a new head (seed the RNG first: the head's init draws from it) and
    the checkpoint's own fast tokenizer; `dropout` replaces the checkpoint's hidden dropout."""
    transformers = _transformers()
    tokenizer = _from_pretrained(transformers.AutoTokenizer, checkpoint)
    if not tokenizer.is_fast:
        raise DataError(f"hf.checkpoint {checkpoint}: no fast (Rust) tokenizer for it")
    config = _from_pretrained(transformers.AutoConfig, checkpoint, num_labels=n_classes)
    if dropout is not None:
        for key in DROPOUT_KEYS:
            if hasattr(config, key):
                setattr(config, key, dropout)
    model = _from_pretrained(transformers.AutoModelForSequenceClassification, checkpoint, config=config)
    config = HFConfig(checkpoint, n_classes, max_length, model.config.to_dict())
    return HFClassifier(model, config, tokenizer.backend_tokenizer.to_str(), tokenizer.pad_token_id)


def from_meta(meta: dict) -> HFClassifier:
    """An untrained model of the saved architecture, with its tokenizer (the caller loads the weights)."""
    transformers = _transformers()
    config = HFConfig(**meta["hf"])
    hf_config = transformers.AutoConfig.for_model(**config.hf_config)
    model = transformers.AutoModelForSequenceClassification.from_config(hf_config)
    return HFClassifier(model, config, json.dumps(meta["tokenizer"]), meta["pad_id"])
