"""What a command needs that no run has made yet, said in one line with the command that makes it:
before the workspace's first run, the layers below would say what is wrong with a file that is not
there ("config file missing beside the checkpoint"). Also the `--model` arguments and their check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from tinytf.errors import DataError
from tinytf.params.pipeline import DVC_FILE, dvc_stages, writer_of
from tinytf.params.schema import set_dotted

# ${key} or ${key[0]} of params.yaml, as DVC interpolates it in deps (not a matrix's ${item.x})
PARAMS_REF = re.compile(r"\$\{(?!item\.)([\w.]+)(?:\[(\d+)\])?\}")
EXPERIMENTS = "or `dvc exp apply EXP` brings an experiment's (`tinytf compare` lists them)"


def made_by(path: str | Path) -> str:
    """`dvc repro STAGE`, STAGE the one whose outs hold path, or the whole pipeline."""
    stage = writer_of(path) if DVC_FILE.exists() else None
    return f"`dvc repro {stage}`" if stage else "`make repro`"


def refuse_unmade(path: str | Path, what: str) -> None:
    """A file missing: one line naming it and, for one the pipeline writes, the command that makes it."""
    if Path(path).exists():
        return
    if DVC_FILE.exists() and writer_of(path):
        raise DataError(f"{path}: no {what} here yet; {made_by(path)} makes it, {EXPERIMENTS}")
    raise DataError(f"{path}: no such file (the {what})")


def stage_inputs(
    stage: str, params_file: str | Path = "params.yaml", overrides: dict | None = None
) -> list[str]:
    """The deps dvc.yaml gives `stage` with its params (and `overrides`) filled in; a dep that
    names a matrix's cell (${item.x}) differs per cell and is left out."""
    spec = dvc_stages(DVC_FILE).get(stage) or {}
    params = yaml.safe_load(Path(params_file).read_text(encoding="utf-8")) or {}
    for dotted, value in (overrides or {}).items():
        set_dotted(params, dotted, value)

    def value(ref: re.Match) -> str:
        node = params
        for part in ref.group(1).split("."):
            node = node[part]
        return str(node if ref.group(2) is None else node[int(ref.group(2))])

    paths = []
    for dep in spec.get("deps") or []:
        path = next(iter(dep)) if isinstance(dep, dict) else str(dep)
        if "${item." in path:
            continue
        try:
            paths.append(PARAMS_REF.sub(value, path))
        except (KeyError, IndexError, TypeError):
            continue  # a key the params check names better, in the stage itself
    return paths


def refuse_missing_inputs(stage: str, overrides: dict | None = None) -> None:
    """`tinytf run STAGE` before the stages it reads from have run."""
    missing = [
        path
        for path in stage_inputs(stage, overrides=overrides)
        # what a stage writes; check_params's mark only orders DVC's runs (a stage checks its own)
        if not Path(path).exists() and writer_of(path) not in (None, "check_params")
    ]
    if not missing:
        return
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    raise DataError(
        f"{stage} reads {missing[0]}{more}, which no run has made here yet; {made_by(missing[0])} makes "
        f"it, and `dvc repro {stage}` runs {stage} after everything it reads"
    )


def refuse_no_store(model_uri: str, store_uri: str) -> None:
    """`tinytf predict` with the default store (`store_uri`) before any run registered a model there
    (a store that MLFLOW_TRACKING_URI names is checked where it is opened)."""
    if os.environ.get("MLFLOW_TRACKING_URI") or not model_uri.startswith("models:/"):
        return
    store = Path(store_uri.removeprefix("sqlite:///"))
    if store_uri.startswith("sqlite:///") and not store.exists():
        raise DataError(
            f"{store}: no model is registered here yet; `tinytf preset tiny` registers a tiny one (then "
            "`tinytf predict --model models:/tinytf-sentiment/latest TEXT`), `make repro` the @champion"
        )


def add_model_arguments(parser, verb: str) -> None:
    """`--model` (the champion by default) and `--trust-model-code`, as predict and serve take them."""
    parser.add_argument(
        "--model",
        default="models:/tinytf-sentiment@champion",
        help="an MLflow model URI (default: %(default)s); a folder or any URI outside the tracking "
        "store (not models:/ or runs:/) needs --trust-model-code",
    )
    parser.add_argument(
        "--trust-model-code",
        action="store_true",
        help=f"{verb} a --model from outside the tracking store: loading an MLflow model runs its code",
    )


def refuse_untrusted_model(model_uri: str, trusted: bool) -> None:
    """Loading an MLflow model runs its code (its python_model and code_paths): a model from outside
    the tracking store (a folder, file:, s3:, http:) is loaded only when the user says so."""
    if trusted or model_uri.startswith(("models:/", "runs:/")):
        return
    raise DataError(
        f"--model {model_uri}: loading an MLflow model runs its code, and this one is from outside the "
        "tracking store; add --trust-model-code if you trust whoever wrote it"
    )
