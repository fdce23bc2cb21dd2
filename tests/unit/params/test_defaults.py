"""params.yaml is the one source of defaults: every dataclass default equals its value there."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from tinytf.params.config import Params

PARAMS_YAML = Path(__file__).resolve().parents[3] / "params.yaml"

# keys the code knows and params.yaml does not list; params.yaml cannot gain keys without making
# the committed run's stage hashes stale (DVC hashes each stage's params sections), so they stay
# code defaults until the next run that changes params.yaml anyway
KNOWN_ONLY_IN_CODE = {
    "prepare.corpus.split",  # read only with corpus.source: files (ptb has its own splits)
    "pretrain.mask_prob",  # read only with pretrain.objective: masked (BERT's 15%)
}


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _plain(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _walk(cls: type, data: dict, prefix: str, disagree: list, only_code: list) -> None:
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in data:
            only_code.append(key)
            continue
        default, value = _default(f), data[f.name]
        if default is dataclasses.MISSING:
            disagree.append(f"{key}: no default")
        elif dataclasses.is_dataclass(default):
            _walk(type(default), value or {}, key, disagree, only_code)
        # null in params.yaml means "the field's default" (prepare's file keys): no disagreement
        elif value is not None and _plain(default) != value:
            disagree.append(f"{key}: code {default!r}, params.yaml {value!r}")


def test_every_dataclass_default_is_the_value_in_params_yaml():
    disagree: list[str] = []
    only_code: list[str] = []
    _walk(Params, yaml.safe_load(PARAMS_YAML.read_text(encoding="utf-8")), "", disagree, only_code)
    assert disagree == []
    assert sorted(only_code) == sorted(KNOWN_ONLY_IN_CODE)


def test_the_comparison_sees_a_disagreement():
    raw = yaml.safe_load(PARAMS_YAML.read_text(encoding="utf-8"))
    raw["pretrain"]["lr"] = 0.5
    raw["model"].pop("pooling")
    disagree: list[str] = []
    only_code: list[str] = []
    _walk(Params, raw, "", disagree, only_code)
    assert disagree == ["pretrain.lr: code 0.004, params.yaml 0.5"]
    assert "model.pooling" in only_code
