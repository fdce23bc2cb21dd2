"""Parameter counts (course lab question 3): read off a built model (`count_parameters`), derived in
closed form (`analytic_counts`), and the course reports' own numbers re-computed (`COURSE_CLAIMS`).

Closed form, with D = d_model, F = d_ff, V = vocab_size, C = n_classes, N = n_layer, b = 1 if bias:
    embedding     V*D
    positional    block_size*D if learned, else 0 (a sinusoidal table is a buffer)
    attention     N * (4*D*D + 4*D*b)         in-proj [q;k;v] 3D x D, out-proj D x D; no H in it
    feed_forward  N * (2*D*F + (F + D)*b)
    norms         N * 2 * (D + D*b)  (+ D + D*b for the final LayerNorm of a pre-LN tinytf)
    lm_head       V*D (0 when tied: the weight is the embedding) + V*b
    cls_head      C*D + C*b
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from tinytf.model.transformer import ModelConfig, TinyTransformer

BASE_PARTS = ("embedding", "positional", "attention", "feed_forward", "norms")
HEADS = ("lm_head", "cls_head")
# module-name segment -> component, for both bases (tinytf's names and the course lab's)
_SEGMENTS = {
    **dict.fromkeys(("tok_emb", "encoder"), "embedding"),  # the lab calls its token embedding `encoder`
    **dict.fromkeys(("pos_emb", "pos_encoder"), "positional"),
    **dict.fromkeys(("attn", "self_attn"), "attention"),
    **dict.fromkeys(("ff", "linear1", "linear2"), "feed_forward"),
    **dict.fromkeys(("ln1", "ln2", "ln_f", "norm1", "norm2"), "norms"),
    **{head: head for head in HEADS},
}


def component_of(name: str) -> str:
    """'base.blocks.0.attn.qkv.weight' -> 'attention'. Unknown names raise rather than go uncounted."""
    for segment in name.split(".")[:-1]:
        if segment in _SEGMENTS:
            return _SEGMENTS[segment]
    raise KeyError(f"no parameter-count component for {name!r}")


def _totals(parts: dict[str, int]) -> dict[str, int]:
    """Add the subtotals the course reports quote."""
    base = sum(parts[k] for k in BASE_PARTS)
    return {
        **{k: parts[k] for k in BASE_PARTS},
        "base": base,
        "lm_head": parts["lm_head"],
        "cls_head": parts["cls_head"],
        "base+lm_head": base + parts["lm_head"],
        "base+cls_head": base + parts["cls_head"],
        "total": base + parts["lm_head"] + parts["cls_head"],
    }


def count_parameters(model: nn.Module, trainable_only: bool = True) -> dict[str, int]:
    """Per-component counts; `named_parameters()` yields a tied LM head weight once, in `embedding`."""
    counts = dict.fromkeys(BASE_PARTS + HEADS, 0)
    for name, p in model.named_parameters():
        if p.requires_grad or not trainable_only:
            counts[component_of(name)] += p.numel()
    return _totals(counts)


def analytic_counts(cfg: ModelConfig) -> dict[str, int]:
    """The same dict as `count_parameters(TinyTransformer(cfg))`, from the config alone."""
    D, F, V, C, N, b = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.n_classes, cfg.n_layer, int(cfg.bias)
    final_norm = cfg.arch == "tinytf" and cfg.norm_first
    counts = {
        "embedding": V * D,
        "positional": cfg.block_size * D if cfg.pos_encoding == "learned" else 0,
        "attention": N * (4 * D * D + 4 * D * b),
        "feed_forward": N * (2 * D * F + (F + D) * b),
        "norms": (2 * N + final_norm) * (D + D * b),
        "lm_head": (0 if cfg.tie_weights else V * D) + V * b,
        "cls_head": C * D + C * b,
    }
    return _totals(counts)


def format_counts(cfg: ModelConfig) -> str:
    """A table of component | counted (from a built model) | analytic (closed form)."""
    counted, analytic = count_parameters(TinyTransformer(cfg)), analytic_counts(cfg)
    lines = [f"{'component':<14} {'counted':>12} {'analytic':>12}", "-" * 40]
    for key in counted:
        flag = "" if counted[key] == analytic[key] else "  MISMATCH"
        lines.append(f"{key:<14} {counted[key]:>12,} {analytic[key]:>12,}{flag}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- the course reports' numbers


def course_lab_config(vocab_size: int, n_classes: int = 2) -> ModelConfig:
    """The course lab's model: nn.TransformerEncoder, nhid=200, nlayers=4, nhead=2, dim_feedforward=nhid."""
    return ModelConfig(
        arch="torch_encoder",
        vocab_size=vocab_size,
        d_model=200,
        n_layer=4,
        n_head=2,
        d_ff=200,
        n_classes=n_classes,
        dropout=0.2,
        block_size=512,
        norm_first=False,
        activation="relu",
        pooling="last",  # the lab classified from the last token
    )


@dataclass(frozen=True)
class CourseClaim:
    """One number a course report states; `as_written` is the report's own expression evaluated, so a
    wrong result is told apart from a wrong formula; `true` is PyTorch's count."""

    report: str
    quantity: str
    expression: str
    as_written: int
    claimed: int
    true: int
    note: str

    @property
    def difference(self) -> int:
        return self.claimed - self.true


def course_claims() -> list[CourseClaim]:
    """Every count stated in course reports 000 (vocab 100) and 002 (vocab 50,001), re-derived."""
    small, large = analytic_counts(course_lab_config(100)), analytic_counts(course_lab_config(50_001))
    ntok, nhid, nlay, nhead, ncls = 100, 200, 4, 2, 2
    layers_small = small["attention"] + small["feed_forward"] + small["norms"]
    layers_large = large["attention"] + large["feed_forward"] + large["norms"]
    # fmt: off
    rows = [
        # report, quantity, expression as written, its value, claimed, true, note
        ("000", "attention heads per layer", "8", 8, 8, nhead,
         "the lab builds nn.TransformerEncoderLayer(nhid, nhead=2, ...); no count depends on it"),
        ("000", "embedding (eq. 3)", "n_token*n_hid = 200000", ntok * nhid, 200_000, small["embedding"],
         "arithmetic slip: 100*200 = 20,000; eq. (7) adds 20,000, so the totals are right"),
        ("000", "attention per layer (eq. 4)", "3nhid(nhid+1) + nhid(nhid+1)",
         3 * nhid * (nhid + 1) + nhid * (nhid + 1), 160_800, small["attention"] // nlay,
         "correct: in_proj [q;k;v] 3*nhid x nhid + 3*nhid, out_proj nhid x nhid + nhid"),
        ("000", "feed-forward per layer (eq. 5)", "(nhid(nhid+1))2", nhid * (nhid + 1) * 2, 80_400,
         small["feed_forward"] // nlay,
         "value right, reason wrong: the 2 is linear1 + linear2 (dim_feedforward = nhid), "
         "not 'the 2 attention heads'"),
        ("000", "LayerNorms per layer (eq. 6)", "(20022), i.e. 200*2*2", nhid * 2 * 2, 800,
         small["norms"] // nlay,
         "value right (the extracted text lost the operators), reason wrong: norm1 + norm2, "
         "each weight + bias, not one per head"),
        ("000", "one encoder layer (eq. 6)", "160800 + 80400 + 800", 160_800 + 80_400 + 800, 242_000,
         layers_small // nlay, "correct"),
        ("000", "base model (eq. 7)", "242000*4 + 20000", 242_000 * 4 + 20_000, 988_000, small["base"],
         "correct (with 20,000 for the embedding, not eq. 3's 200,000)"),
        ("000", "base + classifier (eq. 8)", "988000 + 200*2 + 2", 988_000 + nhid * ncls + ncls, 988_402,
         small["base+cls_head"], "correct (printed '2002 + 2': the multiplication sign is lost)"),
        ("000", "base + LM head, vocab 100 (eq. 9)", "988000 + 200*100 + 100",
         988_000 + nhid * ntok + ntok, 1_008_100, small["base+lm_head"],
         "correct (printed '200100 + 100'; read literally that would total 1,188,200)"),
        ("002", "classifier head", "(nhid+1)*2", (nhid + 1) * ncls, 402, large["cls_head"], "correct"),
        ("002", "LM head, vocab 50,001", "(nhid+1)*50001", (nhid + 1) * 50_001, 10_050_201,
         large["lm_head"], "correct"),
        ("002", "base, vocab 50,001", "(cf. code)", large["base"], 10_968_200, large["base"],
         "correct (read from the code, not derived)"),
        ("002", "embedding, vocab 50,001", "ntokens*nhids", 50_001 * nhid, 10_000_200,
         large["embedding"], "correct"),
        ("002", "LayerNorms per layer", "2 * (2*nhid)", 2 * 2 * nhid, 800, large["norms"] // nlay,
         "correct"),
        ("002", "feed-forward per layer", "2 * nhid*(nhid+1)", 2 * nhid * (nhid + 1), 80_400,
         large["feed_forward"] // nlay, "correct (because dim_feedforward = nhid)"),
        ("002", "multi-head attention per layer", "nhead*nhid*(nhid+1)*2", nhead * nhid * (nhid + 1) * 2,
         160_800, large["attention"] // nlay,
         "matches only because nhead = 2: PyTorch's count is 4*nhid*(nhid+1) for any nhead "
         "(the report's formula gives 321,600 for nhead = 4)"),
        ("002", "all encoder layers", "nlayers*nhid*((nhid+1)*(2+nhead*2)+4)",
         nlay * nhid * ((nhid + 1) * (2 + nhead * 2) + 4), 10_968_200, layers_large,
         "the formula evaluates to 968,000, the layers alone (right); the report equates it with "
         "the base's 10,968,200, which also holds the 10,000,200-parameter embedding"),
    ]
    # fmt: on
    return [CourseClaim(*row) for row in rows]


COURSE_CLAIMS: list[CourseClaim] = course_claims()


def format_course_claims(claims: list[CourseClaim] = COURSE_CLAIMS) -> str:
    """seed | quantity | claimed | report's expression evaluated | true (PyTorch) | claimed - true | note"""
    head = f"{'seed':<5} {'quantity':<34} {'claimed':>11} {'as written':>11} {'true':>11} {'diff':>11}  note"
    lines = [head]
    for c in claims:
        lines.append(
            f"{c.report:<5} {c.quantity:<34} {c.claimed:>11,} {c.as_written:>11,} {c.true:>11,} "
            f"{c.difference:>+11,}  {c.note}"
        )
    return "\n".join(lines)


def classifier_parameters(model) -> int:
    """The parameters classifying uses: the body and class head (an external encoder's whole)."""
    parts = [model.base, model.cls_head] if hasattr(model, "cls_head") else [model]
    return sum(p.numel() for part in parts for p in part.parameters())
