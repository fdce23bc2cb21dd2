"""Raw texts in, a label and class probabilities out: the classifier as a user (or a server) calls it.
Texts are tokenized and truncated exactly as in training, then scored in fp32 in eval mode, in
batches of texts of similar length."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tinytf.data.batching import PadCollate
from tinytf.data.tokenizer import CLS, encode, load_tokenizer
from tinytf.errors import DataError
from tinytf.model.checkpoint import load_model
from tinytf.model.hf import HFClassifier


class SentimentPredictor:
    def __init__(self, model, tokenizer, classes: list[str], max_length: int):
        """`tokenizer` is ours (data/tokenizer.json); an external encoder (`hf`) brings its own,
        which adds its special tokens and truncates to the max_length it was trained with."""
        if model.config.n_classes != len(classes):
            raise DataError(f"the model has {model.config.n_classes} outputs but {len(classes)} class names")
        self.model = model.eval()
        self.classes = list(classes)
        self.external = isinstance(model, HFClassifier)
        if self.external:
            self.tokenizer = model.text_tokenizer()
            self.collate = PadCollate(model.config.max_length, pad_id=model.pad_id)
        else:
            self.tokenizer = tokenizer
            prefix = tokenizer.token_to_id(CLS) if model.config.pooling == "first" else None
            self.collate = PadCollate(max_length, prefix_id=prefix)

    @classmethod
    def from_files(
        cls,
        checkpoint: str | Path,
        tokenizer: str | Path,
        labels: str | Path,
        max_length: int,
        rebuild: str | None = None,
        load=load_model,
    ):
        """`rebuild`: what a damaged file's message tells to do (tinytf.model.checkpoint). Each file is
        checked against the model in one line naming it: one class name per output, the tokenizer's
        ids within the embedding. `load` builds the model (the served bundle's has no LM head)."""
        fix = rebuild or "rebuild it with the stage that wrote it"
        classes = read_classes(labels, fix)
        model = load(checkpoint, rebuild=rebuild)
        if model.config.n_classes != len(classes):
            raise DataError(
                f"{labels}: {len(classes)} class names, but {checkpoint} has {model.config.n_classes} outputs; {fix}"
            )
        text_tokenizer = load_tokenizer(tokenizer)
        if not isinstance(model, HFClassifier) and text_tokenizer.get_vocab_size() > model.config.vocab_size:
            raise DataError(  # its ids would index past the embedding
                f"{tokenizer}: {text_tokenizer.get_vocab_size():,} tokens, but {checkpoint} was trained on "
                f"{model.config.vocab_size:,}: not the tokenizer it was trained with; {fix}"
            )
        return cls(model, text_tokenizer, classes, max_length)

    @torch.no_grad()
    def predict(self, texts: list[str], batch_size: int = 256) -> pd.DataFrame:
        """One row per text, in order: `label` (a class name) and `p_<class>` for every class."""
        if any(not isinstance(text, str) for text in texts):
            raise DataError("every text must be a string")
        ids = encode(self.tokenizer, list(texts), add_special_tokens=self.external)
        order = np.argsort([len(i) for i in ids], kind="stable")  # similar lengths pad little
        probabilities = np.zeros((len(ids), len(self.classes)), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = self.collate([(ids[row], 0) for row in rows])
            logits = self.model.forward_cls(batch["input_ids"], batch["attention_mask"]).float()
            probabilities[rows] = torch.softmax(logits, dim=-1).numpy()
        frame = pd.DataFrame({"label": [self.classes[k] for k in probabilities.argmax(axis=1)]})
        for k, name in enumerate(self.classes):
            frame[f"p_{name}"] = probabilities[:, k].astype(np.float64)
        return frame


def read_classes(labels: str | Path, fix: str) -> list[str]:
    """The class names in `labels` ({"classes": [...]}: at least two distinct strings), else refused."""
    try:
        classes = json.loads(Path(labels).read_text(encoding="utf-8")).get("classes")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        why = getattr(exc, "strerror", None) or " ".join(str(exc).split())[:120]
        raise DataError(f"{labels}: not a readable class list ({why}); {fix}") from None
    if (
        not isinstance(classes, list)
        or len(classes) < 2
        or not all(isinstance(c, str) for c in classes)
        or len(set(classes)) != len(classes)
    ):
        raise DataError(
            f'{labels}: "classes" must list at least two distinct names, got {classes!r:.80}; {fix}'
        )
    return classes


def answer_old_name() -> None:
    """Let a champion registered before serving moved from `tinytf.analysis` load: its model code
    imports `tinytf.analysis.predictor`, and loading runs it against the installed tinytf."""
    sys.modules.setdefault("tinytf.analysis.predictor", sys.modules[__name__])
