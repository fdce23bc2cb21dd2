"""The evaluate stage's registry step: register the served model, decide whether it becomes @champion
(tinytf.tracking.promotion) and, once the outputs are in place, move the aliases. mlflow is imported
inside the functions, each run through the tracker's `call`: the stage runs where it is not installed."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from tinytf.tracking.connect import in_temporary_copy


@dataclass(frozen=True)
class Candidate:
    """The served model: its checkpoint, the data folder (tokenizer, labels, validation texts), its
    max_length and its classes in label order."""

    checkpoint: Path
    data_dir: Path
    max_length: int
    classes: list[str]


def register_and_gate(tracker, candidate: Candidate, name: str, tolerance: float) -> tuple[str | None, dict]:
    """The registered version (None where tracking is off) and the promotion decision
    (reports/metrics.json's `promotion`); the aliases move later, in `settle_promotion`."""
    c = candidate
    version = tracker.call("register_model", register_champion, c.checkpoint, c.data_dir, c.max_length, name)
    return version, gate(tracker, name, version, c.data_dir, c.classes, tolerance)


def gate(
    tracker, name: str, version: str | None, data_dir: Path, classes: list[str], tolerance: float
) -> dict:
    """Whether `version` is to become @champion, why, and against which version (`promotion`)."""
    decision = {"promoted": False, "reason": "", "champion_version": None, "candidate_version": version}
    if version is None:
        return {**decision, "reason": f"not registered: {tracker.failure or 'MLflow tracking is off'}"}
    if in_temporary_copy():  # @champion names the workspace's own run
        experiment = os.environ.get("DVC_EXP_NAME") or "?"
        return {**decision, "reason": f"not compared: registered by experiment {experiment}; @champion stays"}
    frame = pd.read_parquet(
        data_dir / "prepared" / "sentiment" / "validation.parquet", columns=["text", "label"]
    )
    # `prepare` numbers the classes in labels.json's order; the pyfunc answers with their names
    labels = [classes[i] for i in frame["label"]]
    texts = frame["text"].tolist()
    decided = tracker.call("promotion_gate", decide_promotion, name, version, texts, labels, tolerance)
    if decided is None:  # the gate failed: tracking is off from here, and the aliases stay
        return {**decision, "reason": f"not compared: {tracker.failure}"}
    return decided


def register_champion(checkpoint: Path, data_dir: Path, max_length: int, name: str) -> str:
    from tinytf.tracking.champion import log_champion

    labels = data_dir / "tokens" / "sentiment" / "labels.json"
    # a temporary or queued experiment's version is tagged with its name: `dvc exp apply` then a
    # workspace run is what makes it a candidate for @champion
    experiment = os.environ.get("DVC_EXP_NAME", "")
    tags = {"tinytf.experiment": experiment} if experiment else {}
    version = log_champion(checkpoint, data_dir / "tokenizer.json", labels, max_length, name, None, tags)
    if not experiment:  # the same weights an experiment registered before are the workspace's now
        from tinytf.tracking.promotion import claim

        claim(name, version)
    print(f"registered {name} version {version}", file=sys.stderr)
    return version


def decide_promotion(name: str, version: str, texts: list[str], labels: list[str], tolerance: float) -> dict:
    from tinytf.tracking.promotion import decide

    return asdict(decide(name, version, texts, labels, tolerance))


def settle_promotion(name: str, promotion: dict) -> None:
    from tinytf.tracking.promotion import Decision, settle

    settle(name, Decision(**promotion))


def describe_version(name: str, version: str, card: str) -> None:
    from tinytf.tracking.champion import describe

    describe(name, version, card)


def log_test_table(data_dir: Path, classes: list[str], test: dict) -> None:
    from tinytf.tracking.champion import log_test_table

    texts = pd.read_parquet(data_dir / "prepared" / "sentiment" / "test.parquet", columns=["text"])["text"]
    log_test_table(texts.tolist(), classes, test["labels"], test["predictions"], test["probabilities"])
