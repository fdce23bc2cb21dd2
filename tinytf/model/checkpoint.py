"""Checkpoints: `state_dict`s plus a small JSON config, written atomically, loaded safely.

A *model* file (`name.pt` + `name.json`: the weights, the `ModelConfig`, the weights' sha256 and the
stage that wrote them, checked before loading), or a *training state* (weights, optimizer, step,
RNG, history), resumed only by a run with the same params hash. Everything loads with
`weights_only=True`. `torch.save` to a named file records that name inside the zip (and atomic
writes name it randomly), so files are serialised in memory first: the same params and seed give
a byte-identical file, and DVC sees no change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from tinytf.errors import DataError
from tinytf.io import sha256_file, write_bytes, write_json
from tinytf.model import hf
from tinytf.model.architecture import MAX_HEADS, MAX_LAYERS, MAX_LENGTH, MAX_VOCAB, MAX_WIDTH
from tinytf.model.hf import HFClassifier
from tinytf.model.transformer import ModelConfig, TinyTransformer


def serialize(obj: Any) -> bytes:
    """`torch.save` bytes that depend only on `obj`."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def save_model(
    path: str | Path, model: TinyTransformer | HFClassifier, extra: dict | None = None, stage: str = ""
) -> None:
    """The weights, and beside them the JSON: config, `extra`, the weights' sha256 and `stage`."""
    path = Path(path)
    data = serialize(model.state_dict())
    write_bytes(path, data)
    meta = model.meta() if isinstance(model, HFClassifier) else {"model": model.config.to_dict()}
    digest = {"sha256": hashlib.sha256(data).hexdigest(), "stage": stage}
    write_json(path.with_suffix(".json"), {**meta, **(extra or {}), **digest})


def verify_weights(path: str | Path, meta: dict, rebuild: str | None = None) -> None:
    """Refuse weights whose sha256 is not the one their JSON records (a JSON without one is not
    checked). `rebuild` says how to get them back; by default the writing stage's commands."""
    path = Path(path)
    expected = meta.get("sha256")
    if not expected or not path.is_file():
        return  # a missing file is safe_load's to report
    if sha256_file(path) != expected:
        stage = meta.get("stage")
        rerun = f"rebuild it with `dvc repro -f -s {stage}`" if stage else "rerun the stage that writes it"
        how = rebuild or f"restore it with `dvc checkout {path}` or {rerun}"
        by = f" (written by stage {stage})" if stage else ""
        raise DataError(
            f"{path}: damaged: its sha256 is not the one {path.with_suffix('.json')} records{by}; {how}"
        )


def load_weights(path: str | Path, rebuild: str | None = None) -> Any:
    """A model file's state dict, its digest checked against the JSON beside it."""
    verify_weights(path, read_config(path), rebuild)
    return safe_load(path)


def safe_load(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: checkpoint not found")
    if not zipfile.is_zipfile(path):
        # torch.save has written zip archives since torch 1.6: random bytes, a truncated copy or
        # another format, which torch.load would misreport as unsafe pickled objects
        raise DataError(f"{path}: damaged or not a checkpoint (not the zip archive torch.save writes)")
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
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{meta}: damaged config beside the checkpoint ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{meta}: damaged config beside the checkpoint (not a JSON object)")
    return data


def config_of(meta: dict, path: str | Path) -> ModelConfig:
    """The ModelConfig a model file's JSON records, its types and sizes checked before anything is
    allocated from it."""
    meta_file = Path(path).with_suffix(".json")
    if not isinstance(meta.get("model"), dict):
        raise DataError(f"{meta_file}: damaged config beside the checkpoint (no `model` mapping)")
    try:
        return ModelConfig.from_dict(meta["model"])
    except (TypeError, ValueError) as exc:
        raise DataError(f"{meta_file}: damaged config beside the checkpoint ({exc})") from None


# transformers' names for the sizes an external encoder's config.json sets, and their bounds (ours)
HF_SIZES = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "dim"), MAX_WIDTH // 4),
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers"), MAX_LAYERS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads"), MAX_HEADS),
    **dict.fromkeys(("intermediate_size", "d_ff", "n_inner", "hidden_dim"), MAX_WIDTH),
    **dict.fromkeys(("max_position_embeddings", "n_positions"), 4 * MAX_LENGTH),
    "vocab_size": MAX_VOCAB,
}


def hf_meta_checked(meta: dict, path: str | Path) -> dict:
    """An external encoder's JSON, its types and sizes checked before transformers builds from it."""
    why = _hf_meta_fault(meta)
    if why:
        raise DataError(f"{Path(path).with_suffix('.json')}: damaged config beside the checkpoint ({why})")
    return meta


def _hf_meta_fault(meta: dict) -> str | None:
    saved = meta.get("hf")
    fields = {f.name for f in dataclasses.fields(hf.HFConfig)}
    if not isinstance(saved, dict) or not isinstance(saved.get("hf_config"), dict):
        return "no `hf` mapping with an `hf_config`"
    if set(saved) - fields:
        return f"unknown keys in `hf`: {sorted(set(saved) - fields)}"
    if not isinstance(meta.get("tokenizer"), dict) or not isinstance(meta.get("pad_id"), int):
        return "no `tokenizer` mapping or no integer `pad_id`"
    if not (_within(saved.get("n_classes"), MAX_VOCAB) and _within(saved.get("max_length"), MAX_LENGTH)):
        return f"n_classes and max_length must be integers up to {MAX_VOCAB} and {MAX_LENGTH}"
    sizes = saved["hf_config"]
    # a size left null (GPT-2's n_inner) takes transformers' default from the others
    over = [
        f"{k}={sizes[k]!r}"
        for k, most in HF_SIZES.items()
        if sizes.get(k) is not None and not _within(sizes[k], most)
    ]
    return f"hf_config sizes out of bounds: {', '.join(over)}" if over else None


def _within(value, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def load_model(
    path: str | Path, expect: ModelConfig | None = None, rebuild: str | None = None
) -> TinyTransformer | HFClassifier:
    """Build the model from the JSON beside `path` (ours, or an external encoder's) and load its
    weights; with `expect`, a config that differs is refused with the fields named."""
    meta = read_config(path)
    verify_weights(path, meta, rebuild)  # before anything is built from the JSON beside them
    if "hf" in meta:
        try:
            model = hf.from_meta(hf_meta_checked(meta, path))
        except (KeyError, TypeError, ValueError) as exc:  # transformers' own refusal of its config
            said = " ".join(str(exc).split())[:160]
            raise DataError(
                f"{Path(path).with_suffix('.json')}: damaged config beside the checkpoint ({said})"
            ) from None
    else:
        config = config_of(meta, path)
        if expect is not None:
            saved, expected = config.to_dict(), expect.to_dict()
            diffs = [
                f"{k}: checkpoint has {saved.get(k)!r}, expected {expected.get(k)!r}"
                for k in sorted(set(saved) | set(expected))
                if saved.get(k) != expected.get(k)
            ]
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
    write_bytes(path, serialize(state))


def load_training_state(path: str | Path, params_hash: str, say: bool = True) -> dict | None:
    """The saved state if it exists and was made by the same params; None means start fresh."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = safe_load(path)
    except DataError as exc:
        raise DataError(f"{exc}; it holds only the progress of a run: delete it to start over") from None
    if state.get("params_hash") != params_hash:
        if say:
            print(f"note: {path} was made with other params, data or code; starting fresh")
        return None
    return state
