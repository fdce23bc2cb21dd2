"""The champion's model code, logged as a file: MLflow's "models from code", which it recommends
over a pickled `PythonModel` object. Loading the model runs this file (with tinytf on the path
from the model's `code_paths`) instead of unpickling code, and logging it prints no
deserialisation warning. `tinytf.champion` logs it; importing it there only sets the model
MLflow's loader reads, and makes this file a dep of the stage that logs it.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd

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
        )

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        if "text" not in model_input.columns:
            raise ValueError(f"expected a 'text' column, got {list(model_input.columns)}")
        return self.predictor.predict(model_input["text"].tolist())


mlflow.models.set_model(SentimentModel())
