"""Checkpoints: `state_dict`s plus a small JSON config, written atomically, loaded safely.

Two kinds:
- a *model* file (`name.pt` + `name.json`): the weights and the `ModelConfig` that builds them;
  what later stages and `tinytf score` load;
- a *training state* file: weights, optimizer, step, RNG states and the history so far, so a
  killed run resumes to exactly the result of an uninterrupted one. It records a hash of the
  params that produced it and is only resumed by a run with the same hash.

Everything loads with `torch.load(..., weights_only=True)`: a file carrying arbitrary pickled
objects is refused instead of executed.
"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from typing import Any

import torch

from tinytf.errors import DataError
from tinytf.io import atomic_path, write_json
from tinytf.model import hf
from tinytf.model.hf import HFClassifier
from tinytf.model.transformer import ModelConfig, TinyTransformer


def _save(obj: Any, path: str | Path) -> None:
    """torch.save into memory, then an atomic write: saved to a file, the zip inside would be named
    after the randomly named temporary file, and the same weights would give other bytes."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getvalue())


def save_model(path: str | Path, model: TinyTransformer | HFClassifier, extra: dict | None = None) -> None:
    path = Path(path)
    _save(model.state_dict(), path)
    meta = model.meta() if isinstance(model, HFClassifier) else {"model": model.config.to_dict()}
    write_json(path.with_suffix(".json"), {**meta, **(extra or {})})


def safe_load(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: checkpoint not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise DataError(
            f"{path}: refused: the file holds pickled objects other than tensors and plain values, "
            f"which could run code when loaded ({str(exc).splitlines()[0]})"
        ) from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise DataError(f"{path}: not a readable checkpoint ({exc})") from None


def read_config(path: str | Path) -> dict:
    meta = Path(path).with_suffix(".json")
    if not meta.exists():
        raise DataError(f"{meta}: config file missing beside the checkpoint")
    return json.loads(meta.read_text())


def config_differences(saved: dict, expected: dict) -> list[str]:
    keys = sorted(set(saved) | set(expected))
    return [
        f"{k}: checkpoint has {saved.get(k)!r}, expected {expected.get(k)!r}"
        for k in keys
        if saved.get(k) != expected.get(k)
    ]


def load_model(path: str | Path, expect: ModelConfig | None = None) -> TinyTransformer | HFClassifier:
    """Build the model from the JSON beside `path` and load its weights: ours, or a fine-tuned
    external encoder (`hf` in the JSON; tinytf.model.hf).

    With `expect`, a config that differs (other than in fields that do not change the weights'
    shapes or meaning, which there are none of) is refused with the fields named.
    """
    meta = read_config(path)
    if "hf" in meta:
        model = hf.from_meta(meta)
    else:
        config = ModelConfig.from_dict(meta["model"])
        if expect is not None:
            diffs = config_differences(config.to_dict(), expect.to_dict())
            if diffs:
                raise DataError(f"{path}: config does not match the model: " + "; ".join(diffs))
        model = TinyTransformer(config)
    state = safe_load(path)
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise DataError(
            f"{path}: weights do not fit config {Path(path).with_suffix('.json')}: {exc}"
        ) from None
    return model


def save_training_state(path: str | Path, state: dict) -> None:
    _save(state, path)


def load_training_state(path: str | Path, params_hash: str) -> dict | None:
    """The saved state if it exists and was made by the same params; None means start fresh."""
    path = Path(path)
    if not path.exists():
        return None
    state = safe_load(path)
    if state.get("params_hash") != params_hash:
        print(f"note: {path} was made with other params, data or code; starting fresh")
        return None
    return state
