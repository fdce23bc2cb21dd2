"""The registered champion as a real MLflow model: a `pyfunc` that takes raw texts and returns one
row per text (`label` and `p_<class>`), also under `mlflow models serve`. It carries its weights,
tokenizer, class names, `max_length` and tinytf's own code (`code_paths`), so it loads where tinytf
is not installed. It imports mlflow: only stages and the CLI import it."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import sqlalchemy.exc

from tinytf.data.texts import shown
from tinytf.errors import DataError
from tinytf.tracking.connect import bound_http

EXAMPLE = ["a gripping, beautifully acted film", "a dull and lifeless mess"]


def requirements(external: bool = False) -> list[str]:
    """Pinned to this environment: MLflow would otherwise import the model in a subprocess to guess.
    An external encoder (`hf`) also needs `transformers` to rebuild its architecture."""
    import importlib.metadata as metadata

    names = ("mlflow", "torch", "tokenizers", "pandas", "numpy") + (("transformers",) if external else ())
    return [f"{name}=={metadata.version(name)}" for name in names]


def log_champion(
    checkpoint: Path,
    tokenizer: Path,
    labels: Path,
    max_length: int,
    name: str,
    alias: str | None,
    tags: dict[str, str] | None = None,
) -> str:
    """Log the model to the active run, register it under `name` with `tags` and point `alias` at
    it (None: register only); returns the version. A version that serves the same bundle (one
    sha256) is reused as it is: a rerun adds no version, and its run logs no model."""
    from tinytf.tracking import champion_model  # the file MLflow logs and runs to load the model

    with tempfile.TemporaryDirectory(prefix="tinytf-champion-") as tmp:
        bundle = Path(tmp) / champion_model.BUNDLE
        bundle.mkdir()
        served = champion_model.write_bundle(checkpoint, tokenizer, labels, bundle, max_length)
        version = version_serving(name, served)
        if version is None:
            hf = "hf" in json.loads(checkpoint.with_suffix(".json").read_text())
            version = str(_log_bundle(bundle, name, max_length, hf).registered_model_version)
            tags = {SERVED_TAG: served, **(tags or {})}
        else:
            tags = {}
            print(
                f"{name} version {version} serves these weights (sha256 {served[:12]}): reused",
                file=sys.stderr,
            )
    client = mlflow.MlflowClient()
    for key, value in (tags or {}).items():
        client.set_model_version_tag(name, version, key, value)
    if alias:
        client.set_registered_model_alias(name, alias, version)
    classes = json.dumps(json.loads(labels.read_text())["classes"])
    # the version this run registered or reused: a run that reused one logged no model
    mlflow.set_tags({"tinytf.classes": classes, "tinytf.registered_version": version})
    return version


SERVED_TAG = "tinytf.served_sha256"  # what a version serves (champion_model.write_bundle's digest)


def version_serving(name: str, served: str) -> str | None:
    """The newest version of `name` whose bundle has the digest `served`, or None."""
    try:
        versions = mlflow.MlflowClient().search_model_versions(f"name = '{name}'")
    except mlflow.exceptions.MlflowException:  # nothing registered under `name` yet
        return None
    same = [int(v.version) for v in versions if (v.tags or {}).get(SERVED_TAG) == served]
    return str(max(same)) if same else None


def _log_bundle(bundle: Path, name: str, max_length: int, external: bool):
    import tinytf
    from tinytf.tracking import champion_model
    from tinytf.tracking.predictor import SentimentPredictor

    example = pd.DataFrame({"text": EXAMPLE})
    files = [bundle / name for name in ("model.pt", "tokenizer.json", "labels.json")]
    predictor = SentimentPredictor.from_files(*files, max_length, load=champion_model.load_classifier)
    output = predictor.predict(EXAMPLE)
    # log_model checks the model by loading it back, with a progress bar over its artifacts:
    # a line of carriage returns in the stage's log (promotion's own loads say the same)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    return mlflow.pyfunc.log_model(
        name="classifier",  # what it is: the served sentiment classifier (no LM head)
        python_model=champion_model.__file__,
        artifacts={champion_model.BUNDLE: str(bundle)},
        model_config={"max_length": max_length},
        code_paths=[str(Path(tinytf.__file__).parent)],
        signature=mlflow.models.infer_signature(example, output),
        input_example=example,
        pip_requirements=requirements(external),
        registered_model_name=name,
    )


def set_alias(name: str, alias: str, version: str) -> None:
    """Point `alias` at `version`: evaluate does this only once its outputs are in place."""
    mlflow.MlflowClient().set_registered_model_alias(name, alias, version)


TEST_TABLE = "champion_test_predictions.json"  # the evaluate run's table of the champion's test predictions


def log_test_table(texts: list[str], classes: list[str], labels, predictions, probabilities) -> None:
    """The champion's test predictions as an MLflow table of the active run (the UI sorts and
    filters it): each text, its true and predicted class and the probability the model gave it."""
    table = pd.DataFrame(
        {
            "text": list(texts),
            "label": [classes[i] for i in labels],
            "prediction": [classes[i] for i in predictions],
            "probability": np.asarray(probabilities, dtype=np.float64),
        }
    )
    mlflow.log_table(data=table, artifact_file=TEST_TABLE)


# MLflow's column for a model version's description (VARCHAR(5000) in its SQL stores)
DESCRIPTION_LIMIT = 5000


def describe(name: str, version: str, card: str) -> None:
    """Set the model card as the version's description (cut to what the store holds: the whole card
    is the run's artifact model_card.md)."""
    if len(card) > DESCRIPTION_LIMIT:
        cut = "\n\n(cut here: the whole card is the run's artifact model_card.md)"
        card = card[: DESCRIPTION_LIMIT - len(cut)] + cut
    mlflow.MlflowClient().update_model_version(name, version, description=card)


def connect(store: str, checked: bool = True) -> None:
    """Point MLflow at the tracking `store`; `checked`: refuse a SQLite store that is missing (MLflow
    would create an empty one there, and then report that the model is missing) or damaged."""
    if checked and store.startswith("sqlite:///"):
        from sqlalchemy.engine import make_url  # MLflow's own dependency; it parses ?query strings too

        database = Path(make_url(store).database or "")
        if not database.is_file():
            raise DataError(
                f"{database.resolve()}: no MLflow store here; run this in the repository whose pipeline "
                f"registered the model, or set MLFLOW_TRACKING_URI to its store"
            )
        refuse_damaged_store(database)
    bound_http()
    mlflow.set_tracking_uri(store)


def load_champion(uri: str, store: str):
    """The pyfunc model at `uri` (e.g. models:/tinytf-sentiment@champion) in the tracking `store`."""
    from tinytf.tracking.predictor import answer_old_name

    connect(store, checked=uri.startswith(("models:/", "runs:/")))
    answer_old_name()
    try:
        return mlflow.pyfunc.load_model(uri)
    except mlflow.exceptions.MlflowException as exc:
        if store.startswith(("http://", "https://")) and unreachable(exc.message):
            raise DataError(
                f"{store}: the tracking server does not answer ({first_line(exc.message)}); start it, "
                f"or point MLFLOW_TRACKING_URI at one that runs"
            ) from None
        raise DataError(f"{uri}: cannot load the model ({first_line(exc.message)}); {way_out(uri)}") from None
    except sqlalchemy.exc.DatabaseError as exc:  # damage quick_check did not see, or another database
        raise DataError(f"{store}: cannot read the MLflow store ({exc.orig}); {STORE_FIX}") from None


def way_out(uri: str) -> str:
    """What to run when `uri` names an alias nobody set: use the newest version, or apply its
    experiment and evaluate; with no version at all, the pipeline."""
    name, _, alias = uri.removeprefix("models:/").partition("@")
    try:
        versions = mlflow.MlflowClient().search_model_versions(f"name = '{name}'") if alias else []
    except mlflow.exceptions.MlflowException:
        versions = []
    if not versions:
        return "run the pipeline (evaluate registers it)"
    newest = max(versions, key=lambda v: int(v.version))
    experiment = (newest.tags or {}).get("tinytf.experiment")
    made = apply = ""
    if experiment:
        made = f" by experiment {experiment}"
        apply = f", or make it the workspace's run: dvc exp apply {experiment} && dvc repro --single-item evaluate"
    return (
        f"no version is @{alias} yet; the newest is {newest.version}{made}: "
        f'tinytf predict --model models:/{name}/{newest.version} "your text"{apply}'
    )


def unreachable(message: str) -> bool:
    """MLflow's message for a request that got no answer (refused, timed out, no such host)."""
    signs = ("Max retries exceeded", "Connection refused", "timed out", "Failed to establish")
    return any(sign in message for sign in signs)


def first_line(message: str, width: int = 200) -> str:
    line = " ".join(str(message).split())
    return line if len(line) <= width else line[: width - 3] + "..."


STORE_FIX = (
    "restore it from a backup, or move it aside and run `dvc repro --force --single-item evaluate` "
    "to register the champion in a new store"
)


def refuse_damaged_store(database: Path) -> None:
    """SQLite's own integrity check, before MLflow meets the damage as a hundred-line traceback."""
    import sqlite3

    uri = f"{database.resolve().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=2)) as db:
            verdict = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc):  # a stage writing its run: busy, not damaged; MLflow waits its turn
            return
        verdict = str(exc)
    if verdict != "ok":
        raise DataError(f"{database.resolve()}: the MLflow store is damaged ({verdict}); {STORE_FIX}")


def predict_command(uri: str, names: list[str], texts: list[str], store: str) -> None:
    """Print the class and probabilities of each text (checked by tinytf.data.texts.from_command_line)."""
    model = load_champion(uri, store)
    check = own_check(model)
    try:
        if check is not None:
            check(texts, names)
        predictions = model.predict(pd.DataFrame({"text": texts}))
    except mlflow.exceptions.MlflowException as exc:
        raise DataError(f"{uri}: {exc.message}") from None
    predictions.insert(0, "text", [shown(t) for t in texts])
    print(predictions.to_string(index=False, float_format=lambda p: f"{p:.3f}"))


def own_check(model):
    """The champion's checks, naming texts as the command line does ("text 2"), not by row; None for
    a model logged before they existed, or not by tinytf."""
    try:
        return getattr(model.unwrap_python_model(), "check", None)
    except mlflow.exceptions.MlflowException:  # not a python_function model of our own
        return None
