"""Typed params: `params.yaml` is validated once, at the edge, into dataclasses.

Every section of params.yaml has a dataclass here. `load_params` checks the whole file
before any stage does work: unknown keys (with a "did you mean"), wrong types, values out
of range and missing sections all raise `ParamsError` naming the dotted key and the file.
Range limits live in each field's metadata (`ge`, `gt`, `le`, `lt`) so the schema reads as
documentation; checks that involve several fields live in `validate()` methods.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from tinytf.errors import ParamsError


def bounded(default: Any, **limits: float) -> Any:
    """A dataclass field with a default and numeric limits (ge/gt/le/lt) checked on load."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=limits)
    return field(default=default, metadata=limits)


# --------------------------------------------------------------------------- sections


@dataclass
class BaseParams:
    seed: int = bounded(1337, ge=0)
    experiment: str = "tinytf"


@dataclass
class SplitFractions:
    validation: float = bounded(0.1, gt=0, lt=1)
    test: float = bounded(0.1, gt=0, lt=1)

    def validate(self, key: str, file: str) -> None:
        if self.validation + self.test >= 1:
            raise ParamsError(
                f"{file}: {key}: validation + test must be below 1, got {self.validation} + {self.test}"
            )


@dataclass
class FileSplits:
    """Paths of a bring-your-own dataset; a missing validation/test split is carved from train."""

    train: str | None = None
    validation: str | None = None
    test: str | None = None


CorpusSourceName = Literal["ptb", "files"]
SentimentSourceName = Literal["rotten_tomatoes", "sst2", "files"]


@dataclass
class CorpusParams:
    source: CorpusSourceName = "ptb"
    files: FileSplits = field(default_factory=FileSplits)
    text_column: str = "text"
    encoding: str = "utf-8"
    split: SplitFractions = field(default_factory=lambda: SplitFractions(0.05, 0.05))
    # 0 keeps everything; a positive number keeps the first N rows of each split (tiny presets)
    max_rows: int = bounded(0, ge=0)


@dataclass
class SentimentParams:
    source: SentimentSourceName = "rotten_tomatoes"
    files: FileSplits = field(default_factory=FileSplits)
    text_column: str = "text"
    label_column: str = "label"
    # class names in id order; empty means "infer": integers are kept, strings are sorted
    labels: list[str] = bounded([])
    encoding: str = "utf-8"
    split: SplitFractions = field(default_factory=SplitFractions)
    max_rows: int = bounded(0, ge=0)


@dataclass
class PrepareParams:
    corpus: CorpusParams = field(default_factory=CorpusParams)
    sentiment: SentimentParams = field(default_factory=SentimentParams)


@dataclass
class TokenizeParams:
    # bpe: byte-level BPE (GPT-2 style, never produces [UNK]); wordpiece: BERT style
    kind: Literal["bpe", "wordpiece"] = "bpe"
    vocab_size: int = bounded(8000, ge=64, le=1_000_000)
    min_frequency: int = bounded(2, ge=1)
    lowercase: bool = True
    include_sentiment: bool = True
    max_length: int = bounded(64, ge=2)

    def validate(self, key: str, file: str) -> None:
        # byte-level BPE starts from all 256 bytes plus our 5 special tokens; below that there
        # is no room for a single merge and HF tokenizers silently returns a larger vocabulary
        if self.kind == "bpe" and self.vocab_size <= 261:
            raise ParamsError(
                f"{file}: {key}.vocab_size: byte-level BPE needs more than 261 "
                f"(256 bytes + 5 special tokens), got {self.vocab_size}"
            )


@dataclass
class ModelParams:
    """The architecture (tinytf.model.ModelConfig fields); vocab size comes from the tokenizer."""

    arch: Literal["tinytf", "torch_encoder"] = "tinytf"
    d_model: int = bounded(200, ge=1)
    n_layer: int = bounded(4, ge=1)
    n_head: int = bounded(2, ge=1)
    d_ff: int = bounded(200, ge=1)
    dropout: float = bounded(0.1, ge=0, lt=1)
    block_size: int = bounded(128, ge=2)
    pos_encoding: Literal["sinusoidal", "learned", "none"] = "sinusoidal"
    head_merge: Literal["concat", "shuffle", "shift", "reweight"] = "concat"
    norm_first: bool = True
    tie_weights: bool = True
    pooling: Literal["last", "mean", "first"] = "last"
    attn_impl: Literal["manual", "sdpa"] = "sdpa"
    activation: Literal["relu", "gelu"] = "gelu"

    def validate(self, key: str, file: str) -> None:
        if self.d_model % self.n_head:
            raise ParamsError(
                f"{file}: {key}.n_head: {self.n_head} heads do not divide {key}.d_model={self.d_model}"
            )


@dataclass
class SampleText:
    name: str
    text: str


# Seed 004's three samples: the demo sentence, the "weird" one, and a long sentence from Saramago.
SEED_SAMPLES = [
    {"name": "normal", "text": "Thank you so much Liwei and Taylor for all your help with this!"},
    {"name": "weird", "text": "After learning language models model natural language."},
    {
        "name": "long",
        "text": (
            "On offering to help the blind man, the man who then stole his car, had not, at that "
            "precise moment, had any evil intention, quite the contrary, what he did was nothing "
            "more than obey those feelings of generosity and altruism which, as everyone knows, are "
            "the two best traits of human nature and to be found in much more hardened criminals "
            "than this one, a simple car-thief without any hope of advancing in his profession, "
            "exploited by the real owners of this enterprise, for it is they who take advantage of "
            "the needs of the poor."
        ),
    },
]


@dataclass
class PretrainParams:
    objective: Literal["causal", "masked"] = "causal"
    batch_size: int = bounded(32, ge=1)
    grad_accum: int = bounded(1, ge=1)
    # an epoch is one pass over the train tokens unless steps_per_epoch > 0 caps it
    epochs: int = bounded(1, ge=1)
    steps_per_epoch: int = bounded(0, ge=0)
    lr: float = bounded(1e-3, gt=0)
    weight_decay: float = bounded(0.1, ge=0)
    warmup_steps: int = bounded(100, ge=0)
    min_lr_ratio: float = bounded(0.1, ge=0, le=1)
    grad_clip: float = bounded(1.0, ge=0)
    mask_prob: float = bounded(0.15, gt=0, lt=1)
    eval_batches: int = bounded(0, ge=0)  # 0: whole split; >0 caps batches per split (tiny runs)
    log_every: int = bounded(10, ge=1)
    checkpoint_every: int = bounded(200, ge=1)
    resume: bool = True
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    compile: Literal["auto"] | bool = "auto"  # auto: on for runs long enough to repay compiling
    samples: list[SampleText] = field(default_factory=lambda: [SampleText(**s) for s in SEED_SAMPLES])


@dataclass
class VariantsParams:
    """Seed 004's grid: every positional encoding x head merge x seed, one short pretraining each."""

    pos_encodings: list[Literal["sinusoidal", "learned", "none"]] = bounded(["learned", "sinusoidal"])
    head_merges: list[Literal["concat", "shuffle", "shift", "reweight"]] = bounded(
        ["concat", "shuffle", "shift", "reweight"]
    )
    seeds: list[int] = bounded([1, 2], ge=0)
    steps: int = bounded(60, ge=1)  # the same optimizer-step budget for every cell
    batch_size: int = bounded(16, ge=1)
    eval_batches: int = bounded(20, ge=0)  # batches per split for the table; 0 = whole splits

    def validate(self, key: str, file: str) -> None:
        for name in ("pos_encodings", "head_merges", "seeds"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)


InitName = Literal["pretrained", "scratch", "frozen"]


@dataclass
class FinetuneParams:
    """Pretrained vs scratch vs frozen (linear probe): the same classifier, several seeds each."""

    arms: list[InitName] = bounded(["pretrained", "scratch", "frozen"])
    seeds: list[int] = bounded([1, 2, 3], ge=0)
    epochs: int = bounded(3, ge=1)
    batch_size: int = bounded(32, ge=1)
    optimizer: str = "AdamW"
    lr: float = bounded(5e-4, gt=0)
    frozen_lr: float = bounded(5e-3, gt=0)  # a probe moves only the head, which takes bigger steps
    weight_decay: float = bounded(0.01, ge=0)
    warmup_ratio: float = bounded(0.1, ge=0, lt=1)
    dropout: float = bounded(0.1, ge=0, lt=1)
    device: str = "auto"
    precision: Literal["auto", "fp32", "bf16"] = "auto"

    def validate(self, key: str, file: str) -> None:
        _check_optimizers([self.optimizer], f"{key}.optimizer", file)
        for name in ("arms", "seeds"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)
        if "scratch" not in self.arms or not ({"pretrained", "frozen"} & set(self.arms)):
            raise ParamsError(f"{file}: {key}.arms: needs 'scratch' and at least one of pretrained/frozen")


@dataclass
class GridParams:
    """optimizer x lr x batch size x epochs, a DVC matrix: every cell cached on its own."""

    optimizers: list[str] = bounded(["AdamW", "SGD", "Adagrad"])
    lrs: list[float] = bounded([1e-3, 1e-2], gt=0)
    batch_sizes: list[int] = bounded([32, 64], ge=1)
    epochs: list[int] = bounded([2], ge=1)
    init: InitName = "pretrained"
    seed: int = bounded(1, ge=0)
    weight_decay: float = bounded(0.0, ge=0)

    def validate(self, key: str, file: str) -> None:
        _check_optimizers(self.optimizers, f"{key}.optimizers", file)
        for name in ("optimizers", "lrs", "batch_sizes", "epochs"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)


@dataclass
class EvaluateParams:
    bootstrap_resamples: int = bounded(1000, ge=100)
    registry_name: str = "tinytf-sentiment"


@dataclass
class ProbesParams:
    """Seed 004 §1: queries and keys that make attention select or average (closed form)."""

    seed: int = bounded(0, ge=0)
    n: int = bounded(4, ge=2)  # keys and values
    d: int = bounded(3, ge=1)  # their dimension
    scale: float = bounded(1.0, gt=0)  # score scale; the seed uses 1 (no 1/sqrt(d))
    tolerance: float = bounded(1e-3, gt=0, lt=1)


@dataclass
class ComplexityParams:
    """Seed 003: time and memory of attention over lengths and hidden sizes, fitted in log-log."""

    lengths: list[int] = bounded([768, 1024, 1280, 1536], ge=2)
    hidden_sizes: list[int] = bounded([64, 256, 1024], ge=1)
    fixed_length: int = bounded(768, ge=2)  # the other side of cross attention
    batch: int = bounded(2, ge=1)
    heads: int = bounded(8, ge=1)
    repeats: int = bounded(3, ge=1)
    device: str = "cpu"

    def validate(self, key: str, file: str) -> None:
        for name in ("lengths", "hidden_sizes"):
            values = getattr(self, name)
            _check_distinct(values, f"{key}.{name}", file)
            if len(values) < 3:
                raise ParamsError(f"{file}: {key}.{name}: a slope needs at least 3 values, got {values}")
        bad = [h for h in self.hidden_sizes if h % self.heads]
        if bad:
            raise ParamsError(f"{file}: {key}.heads: {self.heads} heads do not divide hidden sizes {bad}")


def _check_distinct(values: list, key: str, file: str) -> None:
    if not values:
        raise ParamsError(f"{file}: {key}: empty; list at least one value")
    if len(set(values)) != len(values):
        raise ParamsError(f"{file}: {key}: repeated values in {values}")


def _check_optimizers(names: list[str], key: str, file: str) -> None:
    import torch.optim

    known = [
        n
        for n in dir(torch.optim)
        if isinstance(getattr(torch.optim, n), type)
        and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
        and n != "Optimizer"
    ]
    for name in names:
        if name not in known:
            by_lower = {k.lower(): k for k in known}  # "adamw" should suggest AdamW, not Adam
            guess = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
            hint = f" (did you mean '{by_lower[guess[0]]}'?)" if guess else ""
            raise ParamsError(f"{file}: {key}: '{name}' is not a torch.optim optimizer{hint}")


@dataclass
class Params:
    base: BaseParams = field(default_factory=BaseParams)
    prepare: PrepareParams = field(default_factory=PrepareParams)
    tokenize: TokenizeParams = field(default_factory=TokenizeParams)
    model: ModelParams = field(default_factory=ModelParams)
    pretrain: PretrainParams = field(default_factory=PretrainParams)
    variants: VariantsParams = field(default_factory=VariantsParams)
    finetune: FinetuneParams = field(default_factory=FinetuneParams)
    grid: GridParams = field(default_factory=GridParams)
    evaluate: EvaluateParams = field(default_factory=EvaluateParams)
    probes: ProbesParams = field(default_factory=ProbesParams)
    complexity: ComplexityParams = field(default_factory=ComplexityParams)


# --------------------------------------------------------------------------- loading


def load_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None) -> Params:
    """Read and validate the whole params file; `overrides` maps dotted keys to values."""
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise ParamsError(f"{file}: file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ParamsError(f"{file}: top level must be a mapping of sections, got {type(raw).__name__}")
    for dotted, value in (overrides or {}).items():
        _set_dotted(raw, dotted, value)
    params = parse_section(Params, raw, key="", file=file)  # unknown keys are reported first
    missing = [f.name for f in dataclasses.fields(Params) if f.name not in raw]
    if missing:
        raise ParamsError(f"{file}: missing section '{missing[0]}'")
    return params


def parse_section(cls: type, data: Any, key: str, file: str) -> Any:
    """Build dataclass `cls` from a mapping, checking every key, type and limit."""
    where = key or "top level"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{file}: {where}: expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in data:
        if name not in fields:
            guess = difflib.get_close_matches(str(name), list(fields), n=1)
            hint = f" (did you mean '{_join(key, guess[0])}'?)" if guess else ""
            known = ", ".join(fields)
            raise ParamsError(f"{file}: unknown key '{_join(key, name)}'{hint}; known keys: {known}")
    values = {}
    for name, fld in fields.items():
        if name not in data:
            continue
        dotted = _join(key, name)
        value = _coerce(hints[name], data[name], dotted, file)
        _check_limits(fld.metadata, value, dotted, file)
        values[name] = value
    obj = cls(**values)
    if hasattr(obj, "validate"):
        obj.validate(key, file)
    return obj


def _coerce(hint: Any, value: Any, key: str, file: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return parse_section(hint, value, key, file)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _coerce(option, value, key, file)
            except ParamsError as exc:
                errors.append(str(exc))
        raise ParamsError(errors[0])
    if origin is Literal:
        if value not in args:
            choices = ", ".join(repr(a) for a in args)
            guess = difflib.get_close_matches(str(value), [str(a) for a in args], n=1)
            hint_text = f" (did you mean '{guess[0]}'?)" if guess else ""
            raise ParamsError(f"{file}: {key}: {value!r} is not one of {choices}{hint_text}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ParamsError(f"{file}: {key}: expected a list, got {_describe(value)}")
        return [_coerce(args[0], item, f"{key}[{i}]", file) for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ParamsError(f"{file}: {key}: expected a mapping, got {_describe(value)}")
        return {str(k): _coerce(args[1], v, _join(key, str(k)), file) for k, v in value.items()}
    if hint is bool:
        if not isinstance(value, bool):
            raise ParamsError(f"{file}: {key}: expected true or false, got {_describe(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamsError(f"{file}: {key}: expected an integer, got {_describe(value)}")
        return value
    if hint is float:
        # YAML reads 1e-3 (no dot) as a string; accept it as the number the user meant
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ParamsError(f"{file}: {key}: expected a number, got {_describe(value)}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamsError(f"{file}: {key}: expected a number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ParamsError(f"{file}: {key}: expected a string, got {_describe(value)}")
        return value
    if hint is Any:
        return value
    raise TypeError(f"unsupported schema type {hint!r} for {key}")


def _check_limits(limits: Any, value: Any, key: str, file: str) -> None:
    if not limits:
        return
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, (int, float)) or isinstance(item, bool):
            continue
        for name, bound in limits.items():
            ok = {
                "ge": item >= bound,
                "gt": item > bound,
                "le": item <= bound,
                "lt": item < bound,
            }[name]
            if not ok:
                symbol = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}[name]
                raise ParamsError(f"{file}: {key}: must be {symbol} {bound}, got {item}")


def _set_dotted(raw: dict, dotted: str, value: Any) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ParamsError(f"override {dotted}: '{part}' is not a section")
    node[parts[-1]] = value


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def to_dict(obj: Any) -> Any:
    """Plain-dict view of a params object (for logging and hashing)."""
    return dataclasses.asdict(obj)


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists become their string form (MLflow params are strings)."""
    flat: dict[str, Any] = {}
    for name, value in data.items():
        dotted = _join(prefix, name)
        if isinstance(value, dict):
            flat.update(flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat
