"""The champion's model code, logged as a file: MLflow's "models from code", which it recommends
over a pickled `PythonModel` object. Loading the model runs this file (with tinytf on the path
from the model's `code_paths`) instead of unpickling code, and logging it prints no
deserialisation warning. `tinytf.tracking.champion` logs it; importing it there only sets the model
MLflow's loader reads, and makes this file a dep of the stage that logs it.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
from mlflow.exceptions import MlflowException

BUNDLE = "bundle"  # the artifact folder: model.pt, model.json, tokenizer.json, labels.json


class SentimentModel(mlflow.pyfunc.PythonModel):
    """The pyfunc wrapper; the work is done by `tinytf.analysis.predictor.SentimentPredictor`."""

    def load_context(self, context) -> None:
        from tinytf.analysis.predictor import SentimentPredictor

        bundle = Path(context.artifacts[BUNDLE])
        self.predictor = SentimentPredictor.from_files(
            bundle / "model.pt",
            bundle / "tokenizer.json",
            bundle / "labels.json",
            context.model_config["max_length"],
            # the bundle is a copy in the tracking store: evaluate logs and registers it again
            rebuild="register the model again with `dvc repro -f -s evaluate`",
        )

    def check(self, texts: list, names: list[str]) -> None:
        """Refuse a request the model cannot answer truly, or that is too large to answer within
        bounded memory: a null, non-string, blank or over-long text, too many rows, bytes or tokens
        (tinytf.data.texts), or a text that gives no tokens. An `MlflowException` with
        INVALID_PARAMETER_VALUE is what MLflow's scoring server answers with a 400 and this message;
        any other exception becomes a 400 carrying a traceback with the server's paths."""
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
