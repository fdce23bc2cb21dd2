"""`ModelConfig`: every architectural choice of the transformer, the one source of its defaults and
allowed values (`tinytf.params.config.ModelParams` is generated from `PARAM_FIELDS`). It imports no
torch, so validating params stays cheap.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

Arch = Literal["tinytf", "torch_encoder"]
PosEncoding = Literal["sinusoidal", "learned", "none"]
HeadMerge = Literal["concat", "shuffle", "shift", "reweight"]
Pooling = Literal["last", "mean", "first"]
AttnImpl = Literal["manual", "sdpa"]
Activation = Literal["relu", "gelu"]

HEAD_MERGES: tuple[str, ...] = typing.get_args(HeadMerge)


# Upper bounds of the sizes: far above a model this project trains, low enough that a typo in
# params.yaml or a damaged JSON is refused before it allocates (d_model 2^20 asked for terabytes)
MAX_VOCAB, MAX_LENGTH, MAX_WIDTH, MAX_LAYERS, MAX_HEADS = 1_000_000, 32_768, 65_536, 1024, 1024


def _positive(default: int, most: int) -> Any:
    return field(default=default, metadata={"ge": 1, "le": most})


@dataclass
class ModelConfig:
    """Saved as JSON next to each checkpoint. Shapes: D = d_model, H = n_head, V = vocab_size."""

    arch: Arch = "tinytf"
    vocab_size: int = _positive(100, MAX_VOCAB)  # set from the tokenizer, never from params
    # positional table size, longest input
    block_size: int = field(default=128, metadata={"ge": 2, "le": MAX_LENGTH})
    n_layer: int = _positive(4, MAX_LAYERS)
    n_head: int = _positive(4, MAX_HEADS)
    d_model: int = _positive(128, MAX_WIDTH // 4)
    d_ff: int = _positive(256, MAX_WIDTH)
    dropout: float = field(default=0.0, metadata={"ge": 0, "lt": 1})
    pos_encoding: PosEncoding = "sinusoidal"
    head_merge: HeadMerge = "concat"
    causal: bool = True  # False = bidirectional attention, for masked-LM pretraining
    # tied, the LM softmax pushes every token absent from the corpus towards one vector, and
    # sentiment words unseen in PTB lose their identity
    tie_weights: bool = False
    n_classes: int = _positive(2, MAX_VOCAB)
    pooling: Pooling = "mean"  # mean over non-pad, last non-pad token (causal), or first (bidirectional)
    attn_impl: AttnImpl = "sdpa"
    bias: bool = True  # biases in every Linear and LayerNorm, heads included
    pad_id: int = 0  # recorded with the checkpoint; the model never infers a mask from it implicitly
    norm_first: bool = True  # True: pre-LN (GPT-2); False: post-LN like nn.TransformerEncoderLayer
    activation: Activation = "gelu"
    scale_embedding: bool = True  # token embedding * sqrt(D) before adding positions (lab, Vaswani)
    layer_norm_eps: float = 1e-5
    seed: int = 1337  # seeds the per-layer head permutations of head_merge="shuffle"

    def __post_init__(self) -> None:
        for name, hint in typing.get_type_hints(ModelConfig).items():  # a JSON can hold any type
            value = getattr(self, name)
            if typing.get_origin(hint) is Literal and value not in typing.get_args(hint):
                raise ValueError(f"ModelConfig.{name}={value!r}; expected one of {typing.get_args(hint)}")
            if hint in (bool, int, float) and not _is(value, hint):
                raise ValueError(f"ModelConfig.{name} must be {hint.__name__}, got {value!r}")
        for f in dataclasses.fields(self):  # the sizes, before anything is allocated from them
            value, most = getattr(self, f.name), f.metadata.get("le")
            if most is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or not f.metadata["ge"] <= value <= most:
                raise ValueError(
                    f"ModelConfig.{f.name} must be an integer from {f.metadata['ge']} to {most}, got {value!r}"
                )
        if self.d_model % self.n_head:
            raise ValueError(f"ModelConfig: d_model={self.d_model} is not divisible by n_head={self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ModelConfig.dropout must be in [0, 1), got {self.dropout}")
        if self.arch == "torch_encoder":
            # nn.TransformerEncoder can only do what the lab did: concat heads, sinusoidal table, post-LN
            for name, need in TORCH_ENCODER_FIXED.items():
                if getattr(self, name) != need:
                    raise ValueError(f"ModelConfig: arch='torch_encoder' requires {name}={need!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"ModelConfig: unknown keys {sorted(unknown)}")
        return cls(**data)


def _is(value: Any, hint: type) -> bool:
    """`value` is of the JSON type `hint`: bool is no int here, and an int is a float."""
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint) and (hint is bool or not isinstance(value, bool))


# What `arch: torch_encoder` cannot change: nn.TransformerEncoder is the course lab's post-LN model.
TORCH_ENCODER_FIXED = {"head_merge": "concat", "pos_encoding": "sinusoidal", "norm_first": False}

# The fields a user sets in params.yaml's `model:` section; the rest come from the data
# (vocab_size, n_classes), the objective (causal) or the run (seed).
PARAM_FIELDS = (
    "arch",
    "d_model",
    "n_layer",
    "n_head",
    "d_ff",
    "dropout",
    "block_size",
    "pos_encoding",
    "head_merge",
    "norm_first",
    "tie_weights",
    "pooling",
    "attn_impl",
    "activation",
)


def model_config(model: Any, vocab_size: int, objective: str, seed: int, **overrides: Any) -> ModelConfig:
    """The ModelConfig of a `model:` params section, for a tokenizer's vocabulary and an objective."""
    fields = {name: getattr(model, name) for name in PARAM_FIELDS}
    fields.update(vocab_size=vocab_size, causal=objective == "causal", seed=seed)
    if fields["arch"] == "torch_encoder":
        fields.update(TORCH_ENCODER_FIXED, tie_weights=False)
    fields.update(overrides)
    return ModelConfig(**fields)
