"""The champion's model code, logged as a file (MLflow's "models from code", which it recommends over
a pickled `PythonModel`): loading the model runs this file, with tinytf on the path from its
`code_paths`. `tinytf.tracking.champion` logs it; importing it only sets the model MLflow's loader reads."""

from __future__ import annotations

import hashlib
import shutil
from collections import OrderedDict
from pathlib import Path

import mlflow
import pandas as pd
from mlflow.exceptions import MlflowException

BUNDLE = "bundle"  # the artifact folder: model.pt, model.json, tokenizer.json, labels.json
# in the bundle's model.json: its weights are the classifier's, the LM head's left out
NO_LM_HEAD = "lm_head_dropped"


def write_bundle(checkpoint: Path, tokenizer: Path, labels: Path, into: Path, max_length: int) -> str:
    """The files the served model loads, written into `into`; returns one sha256 of the weights,
    tokenizer, class names and `max_length` (the same weights with another tokenizer are another
    model). The LM head, which classifying never reads, is dropped here, at packaging, so training
    and the checkpoints DVC tracks stay as they are; an external encoder (`hf`) has none."""
    from tinytf.io import sha256_file, write_bytes, write_json
    from tinytf.model.checkpoint import load_weights, read_config, serialize

    meta, state = read_config(checkpoint), load_weights(checkpoint)
    if "hf" not in meta:
        kept = OrderedDict((k, v) for k, v in state.items() if not k.startswith("lm_head."))
        kept._metadata = getattr(state, "_metadata", None)  # the modules' versions, as torch saved them
        state, meta = kept, {**meta, NO_LM_HEAD: True}
    data = serialize(state)
    weights = hashlib.sha256(data).hexdigest()
    write_bytes(into / "model.pt", data)
    write_json(into / "model.json", {**meta, "sha256": weights})
    shutil.copy2(tokenizer, into / "tokenizer.json")
    shutil.copy2(labels, into / "labels.json")
    served = [weights, sha256_file(into / "tokenizer.json"), sha256_file(into / "labels.json")]
    return hashlib.sha256(" ".join([*served, str(max_length)]).encode()).hexdigest()


def load_classifier(checkpoint: Path, rebuild: str | None = None):
    """The model of a bundle: without an LM head where `write_bundle` dropped it (a version logged
    before that loads whole), checked as `load_model` checks a checkpoint."""
    from tinytf.errors import DataError
    from tinytf.model.checkpoint import config_of, load_model, load_weights, read_config
    from tinytf.model.transformer import TinyTransformer

    meta = read_config(checkpoint)
    if not meta.get(NO_LM_HEAD):
        return load_model(checkpoint, rebuild=rebuild)
    weights = load_weights(checkpoint, rebuild)  # its sha256 checked before anything is built
    model = TinyTransformer(config_of(meta, checkpoint))
    model.lm_head = None  # no weights for it, and forward_cls never reads it
    try:
        model.load_state_dict(weights)
    except RuntimeError as exc:
        raise DataError(
            f"{checkpoint}: weights do not fit config {checkpoint.with_suffix('.json')}: {exc}"
        ) from None
    return model


class SentimentModel(mlflow.pyfunc.PythonModel):
    """The pyfunc wrapper; the work is done by `tinytf.tracking.predictor.SentimentPredictor`."""

    def load_context(self, context) -> None:
        from tinytf.tracking.predictor import SentimentPredictor

        bundle = Path(context.artifacts[BUNDLE])
        self.predictor = SentimentPredictor.from_files(
            bundle / "model.pt",
            bundle / "tokenizer.json",
            bundle / "labels.json",
            context.model_config["max_length"],
            # the bundle is a copy in the tracking store: evaluate logs and registers it again
            rebuild="register the model again with `dvc repro -f -s evaluate`",
            load=load_classifier,
        )

    def check(self, texts: list, names: list[str]) -> None:
        """Refuse a request the model cannot answer truly or within bounded memory (tinytf.data.texts).
        An `MlflowException` with INVALID_PARAMETER_VALUE is what MLflow's scoring server answers
        with a 400 and this message; any other exception's 400 carries a traceback with its paths."""
        from tinytf.data.texts import check_request_tokens, check_rows, refuse_tokenless
        from tinytf.data.tokenizer import encode
        from tinytf.errors import DataError

        try:
            check_rows(texts, names)  # rows, characters per text and bytes in all, before encoding
            ids = encode(self.predictor.tokenizer, texts, add_special_tokens=False)
            check_request_tokens(ids)
            refuse_tokenless(names, texts, ids, "the model's tokenizer")
        except DataError as exc:
            raise MlflowException.invalid_parameter_value(str(exc)) from None

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        from tinytf.data.texts import row_names

        columns = list(getattr(model_input, "columns", []))
        if "text" not in columns:
            got = columns or type(model_input).__name__
            raise MlflowException.invalid_parameter_value(f"expected a 'text' column, got {got}")
        texts = model_input["text"].tolist()
        self.check(texts, row_names(len(texts)))
        return self.predictor.predict(texts)


mlflow.models.set_model(SentimentModel())
