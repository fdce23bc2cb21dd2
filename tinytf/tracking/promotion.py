"""The promotion gate: a model `evaluate` registers becomes @champion only when it is at least as good
as the current champion on today's validation split (never test: DESIGN.md's protocol), both scored
through their own pyfunc. The champion it replaces becomes @previous; `tinytf champion rollback`
swaps the two back.

Not `mlflow.validate_evaluation_results`: its `MetricThreshold` refuses a `min_absolute_change` of 0
(our rule is "no worse"), and `mlflow.evaluate`'s classifier evaluator computes plots and artifacts
we do not need for one accuracy. Only stages and the CLI import this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd

from tinytf.data.texts import MAX_REQUEST_BYTES, MAX_REQUEST_TOKENS, MAX_TEXTS
from tinytf.errors import DataError
from tinytf.io import sha256_file
from tinytf.tracking import champion

CHAMPION, PREVIOUS = "champion", "previous"
PROMOTION_TAG = "tinytf.promotion"  # the decision's one line, on every version evaluate registers


@dataclasses.dataclass(frozen=True)
class Decision:
    promoted: bool
    reason: str
    champion_version: str | None  # the version that was @champion when the gate ran
    candidate_version: str | None  # None: nothing registered (tracking off)


def aliases(name: str) -> dict[str, str]:
    """{alias: version} of the registered model `name`; {} when nothing is registered under it."""
    try:
        held = mlflow.MlflowClient().get_registered_model(name).aliases
    except mlflow.exceptions.MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return {}
        raise
    return {alias: str(version) for alias, version in held.items()}  # a SQL store gives ints


def decide(
    name: str, candidate: str, texts: list[str], labels: list[str], tolerance: float = 0.0
) -> Decision:
    """Promote `candidate` (a version of `name`) when its accuracy on `texts` is at most `tolerance`
    below the current @champion's (a tie promotes: the newest run names the served model); without
    comparing when there is no champion, it does not load, or has other classes or tokenizer."""
    current = aliases(name).get(CHAMPION)
    if current is None:
        return Decision(True, "promoted: no version was @champion", None, candidate)
    if current == candidate:  # a rerun with the champion's weights reused its version
        return Decision(True, f"kept: version {current} is @champion (the same weights)", current, candidate)
    with _own_sys_path(), tempfile.TemporaryDirectory(prefix="tinytf-gate-") as tmp:
        ours = _load(name, candidate, Path(tmp) / "candidate")
        try:
            theirs = _load(name, current, Path(tmp) / "champion")
        except (mlflow.exceptions.MlflowException, DataError, OSError) as exc:
            said = champion.first_line(getattr(exc, "message", exc), 120)
            return Decision(True, f"replaced: champion v{current} does not load ({said})", current, candidate)
        other = _incomparable(ours[1], theirs[1], current)
        if other:
            return Decision(True, other, current, candidate)
        new, old = accuracy(ours[0], texts, labels), accuracy(theirs[0], texts, labels)
    margin = f" (tolerance {tolerance:g})" if tolerance else ""
    if new >= old - tolerance:
        said = f"promoted: validation accuracy {new:.4f} >= champion v{current}'s {old:.4f}{margin}"
        return Decision(True, said, current, candidate)
    said = f"not promoted: validation accuracy {new:.4f} < champion v{current}'s {old:.4f}{margin}"
    return Decision(False, said, current, candidate)


def _load(name: str, version: str, into: Path):
    """The pyfunc model of `version`, downloaded into `into`, and the folder of its bundle."""
    from tinytf.tracking.champion_model import BUNDLE
    from tinytf.tracking.predictor import answer_old_name

    answer_old_name()
    into.mkdir()
    # a model is a hundred files (tinytf's code): a progress bar each would fill the stage's log
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    model = mlflow.pyfunc.load_model(f"models:/{name}/{version}", dst_path=str(into))
    return model, into / "artifacts" / BUNDLE


def _incomparable(ours: Path, theirs: Path, version: str) -> str | None:
    """Why the champion's accuracy says nothing about ours, or None: other classes, or another
    tokenizer (another study's champion; the workspace's run is the study asked for now)."""
    classes = [json.loads((b / "labels.json").read_text(encoding="utf-8"))["classes"] for b in (ours, theirs)]
    if classes[0] != classes[1]:
        return f"replaced without comparison: champion v{version} has classes {classes[1]}, ours {classes[0]}"
    digests = [sha256_file(b / "tokenizer.json")[:12] for b in (ours, theirs)]
    if digests[0] != digests[1]:
        return (
            f"replaced without comparison: champion v{version} has another tokenizer "
            f"(tokenizer.json sha256 {digests[1]}, ours {digests[0]})"
        )
    return None


def accuracy(model, texts: list[str], labels: list[str]) -> float:
    """The share of `texts` predicted as their true class name, in requests the model accepts."""
    predicted = []
    for part in requests(texts):
        predicted.extend(model.predict(pd.DataFrame({"text": part}))["label"].tolist())
    return float(np.mean(np.asarray(predicted, dtype=object) == np.asarray(labels, dtype=object)))


def requests(texts: list[str]) -> Iterator[list[str]]:
    """`texts` in parts of at most MAX_TEXTS rows and as many bytes as a request may hold tokens: a
    subword token covers at least one byte, so the token limit holds too."""
    budget = min(MAX_REQUEST_BYTES, MAX_REQUEST_TOKENS)
    part: list[str] = []
    size = 0
    for text in texts:
        length = len(text.encode("utf-8"))
        if part and (len(part) == MAX_TEXTS or size + length > budget):
            yield part
            part, size = [], 0
        part.append(text)
        size += length
    if part:
        yield part


@contextlib.contextmanager
def _own_sys_path() -> Iterator[None]:
    """Loading a model puts its copy of tinytf (`code_paths`) first on sys.path; the stage's later
    imports must find its own."""
    saved = list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = saved


def settle(name: str, decision: Decision) -> None:
    """Once the outputs are in place: move the aliases (@previous first, so a kill in between leaves
    both on the old champion) and tag the candidate with the decision."""
    version = decision.candidate_version
    if decision.promoted:
        if decision.champion_version and decision.champion_version != version:
            champion.set_alias(name, PREVIOUS, decision.champion_version)
        champion.set_alias(name, CHAMPION, version)
    mlflow.MlflowClient().set_model_version_tag(name, version, PROMOTION_TAG, decision.reason)
    print(f"{name} version {version}: {decision.reason}", file=sys.stderr)


EXPERIMENT_TAG = "tinytf.experiment"  # a version a temporary or queued experiment registered


def claim(name: str, version: str) -> None:
    """The workspace's run serves `version`: it no longer names the experiment that registered it."""
    client = mlflow.MlflowClient()
    if EXPERIMENT_TAG in (client.get_model_version(name, version).tags or {}):
        client.delete_model_version_tag(name, version, EXPERIMENT_TAG)


# a rollback's aliases before and after ({"from": {alias: version or null}, "to": ...}) while they
# move: a kill between them leaves this registered model's tag, and `tinytf champion` finishes from it
ROLLBACK_TAG = "tinytf.rollback"


def rollback(name: str) -> str:
    """Swap @champion and @previous; what was done, in a line. The intent is recorded (ROLLBACK_TAG)
    before the aliases move: a kill in between leaves a state `repair` finishes."""
    said = repair(name)
    if said:
        return said  # the interrupted rollback was the one asked for
    held = aliases(name)
    if PREVIOUS not in held:
        raise DataError(f"{name}: no version is @{PREVIOUS}; there is nothing to roll back to")
    back, was = held[PREVIOUS], held.get(CHAMPION)
    intent = {"from": {CHAMPION: was, PREVIOUS: back}, "to": {CHAMPION: back, PREVIOUS: was}}
    mlflow.MlflowClient().set_registered_model_tag(name, ROLLBACK_TAG, json.dumps(intent))
    _move(name, intent["to"])
    if was is None:
        return (
            f"{name}: @{CHAMPION} is version {back} (no version was @{CHAMPION}); no version is @{PREVIOUS}"
        )
    return f"{name}: @{CHAMPION} is version {back} (was {was}); @{PREVIOUS} is version {was}"


def _move(name: str, target: dict[str, str | None]) -> None:
    """Point the aliases at `target` (None: no version), then drop the recorded intent."""
    client = mlflow.MlflowClient()
    champion.set_alias(name, CHAMPION, target[CHAMPION])
    if target[PREVIOUS] is not None:
        champion.set_alias(name, PREVIOUS, target[PREVIOUS])
    elif PREVIOUS in aliases(name):
        client.delete_registered_model_alias(name, PREVIOUS)
    client.delete_registered_model_tag(name, ROLLBACK_TAG)


def repair(name: str) -> str | None:
    """Finish a rollback that a kill interrupted; what was done, or None when none was pending.
    Aliases moved since by something else (evaluate) win: the record is dropped, not replayed."""
    try:
        tags = mlflow.MlflowClient().get_registered_model(name).tags or {}
    except mlflow.exceptions.MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise
    if ROLLBACK_TAG not in tags:
        return None
    intent, held = json.loads(tags[ROLLBACK_TAG]), aliases(name)
    if any(held.get(a) not in (intent["from"][a], intent["to"][a]) for a in (CHAMPION, PREVIOUS)):
        mlflow.MlflowClient().delete_registered_model_tag(name, ROLLBACK_TAG)
        return f"{name}: dropped the record of an interrupted rollback: the aliases moved since"
    _move(name, intent["to"])
    target = intent["to"]
    previous = f"version {target[PREVIOUS]}" if target[PREVIOUS] else "no version"
    return (
        f"{name}: finished a rollback that was interrupted: @{CHAMPION} is version {target[CHAMPION]}, "
        f"@{PREVIOUS} is {previous}"
    )


def show(name: str, newest: int = 10) -> str:
    """The `newest` versions, newest first, each with its aliases and its promotion line."""
    versions = mlflow.MlflowClient().search_model_versions(f"name = '{name}'")
    if not versions:
        return f"{name}: no version registered; run the pipeline (evaluate registers one)"
    held: dict[str, list[str]] = {}
    for alias, version in aliases(name).items():  # search results leave aliases out
        held.setdefault(version, []).append(f"@{alias}")
    lines = []
    for version in sorted(versions, key=lambda v: int(v.version), reverse=True)[:newest]:
        said = (version.tags or {}).get(PROMOTION_TAG) or "(no promotion recorded)"
        tags = " ".join(sorted(held.get(str(version.version), [])))
        lines.append(f"{name} version {version.version}{' ' + tags if tags else ''}: {said}")
    return "\n".join(lines)


def champion_command(action: str, name: str, store: str) -> None:
    """`tinytf champion show|rollback`, against the tracking `store`."""
    champion.connect(store)
    try:
        if action == "rollback":
            said = rollback(name)
        else:  # show finishes an interrupted rollback first, and says so above the versions
            said = "\n".join(filter(None, [repair(name), show(name)]))
    except mlflow.exceptions.MlflowException as exc:
        raise DataError(f"{name}: {champion.first_line(exc.message)}") from None
    print(said)
