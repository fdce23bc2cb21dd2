"""Checks that build and run models: parameter counts (closed form against a built module), the
course reports' arithmetic, the course claims PyTorch settles, and where the pretrained model's
heads look. The `checks` stage writes their tables; the report only reads them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tokenizers import Tokenizer
from torch import nn

from tinytf.io import write_json
from tinytf.model.architecture import ModelConfig
from tinytf.model.param_count import COURSE_CLAIMS, analytic_counts, count_parameters, course_lab_config
from tinytf.model.transformer import TinyTransformer


def parameter_table(ours: ModelConfig, lab: ModelConfig) -> pd.DataFrame:
    """Per component: closed form and counted from a built model, for our model and the course lab's."""
    ours_a, ours_c = analytic_counts(ours), count_parameters(TinyTransformer(ours))
    lab_a, lab_c = analytic_counts(lab), count_parameters(TinyTransformer(lab))
    return pd.DataFrame(
        {
            "component": k,
            "ours analytic": ours_a[k],
            "ours counted": ours_c[k],
            "course lab analytic": lab_a[k],
            "course lab counted": lab_c[k],
            "analytic = counted": "yes" if ours_a[k] == ours_c[k] and lab_a[k] == lab_c[k] else "NO",
        }
        for k in ours_a
    )


def claim_verdict(claim) -> str:
    if claim.difference:
        return f"wrong number ({claim.difference:+,})"
    return "right" if claim.note.startswith("correct") else "right number, wrong reasoning"


def course_claims_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seed": c.report,
            "quantity": c.quantity,
            "expression as written": c.expression,
            "evaluates to": c.as_written,
            "claimed": c.claimed,
            "PyTorch": c.true,
            "claimed - PyTorch": c.difference,
            "verdict": claim_verdict(c),
            "note": c.note,
        }
        for c in COURSE_CLAIMS
    )


@torch.no_grad()
def attention_weights(
    model: TinyTransformer, tokenizer: Tokenizer, text: str
) -> tuple[list[str], list[np.ndarray]]:
    """(tokens, per layer the (H, L, L) attention weights) of `text`, cut to the model's context."""
    enc = tokenizer.encode(text, add_special_tokens=False)
    ids = enc.ids[: model.config.block_size]
    tokens = [t.replace("Ġ", "") or "␣" for t in enc.tokens[: len(ids)]]
    if len(ids) < 2:
        return tokens, []
    weights = [w[0].float().numpy() for w in model.eval().attention_weights(torch.tensor([ids]))]
    return tokens, weights


def _tiny(**kw) -> ModelConfig:
    base = dict(
        vocab_size=50,
        block_size=8,
        n_layer=2,
        n_head=4,
        d_model=16,
        d_ff=32,
        dropout=0.0,
        norm_first=True,
        activation="relu",
        pooling="last",
    )
    return ModelConfig(**{**base, **kw})


def pytorch_checks() -> pd.DataFrame:
    """Course claims that PyTorch settles, each measured on a small seeded model (CPU, deterministic).
    The caller's random state is left as it was."""
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        return pd.DataFrame(_checks(), columns=["seed", "claim", "check", "measured", "verdict"])


def _checks() -> list[tuple[str, ...]]:
    mask_row = _encoder_mask_check()  # in this order: each draws from the seeded generator
    shift_row, ids = _shift_check()
    return [mask_row, shift_row, _reweight_check(ids)]


def _encoder_mask_check() -> tuple[str, ...]:
    # course report 000: "nn.TransformerEncoder ... doesn't allow peeking ahead"
    layer = nn.TransformerEncoderLayer(16, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(1, 6, 16)
    x2 = x.clone()
    x2[0, -1] += 1.0
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    free = (enc(x) - enc(x2))[0, :-1].abs().max().item()
    masked = (enc(x, mask=mask) - enc(x2, mask=mask))[0, :-1].abs().max().item()
    return (
        "000",
        "nn.TransformerEncoder itself keeps a token from peeking ahead",
        "change the last input; max |Δ| of the earlier positions' outputs",
        f"no mask: {free:.3g}; with generate_square_subsequent_mask: {masked:.3g}",
        "wrong: the module is bidirectional; causality comes only from the mask passed in"
        if free > 0 and masked == 0
        else "inconclusive",
    )


def _shift_check() -> tuple[tuple[str, ...], torch.Tensor]:
    # course report 004: shuffle / shift merges test whether heads are "experts"
    shift = TinyTransformer(_tiny(head_merge="shift")).eval()
    concat = TinyTransformer(_tiny(head_merge="concat")).eval()
    state = {k: v.clone() for k, v in shift.state_dict().items() if not k.endswith("head_order")}
    hd = 16 // 4
    for i, block in enumerate(shift.base.blocks):
        w, order = state[f"base.blocks.{i}.attn.proj.weight"], block.attn.head_order.tolist()
        permuted = torch.empty_like(w)
        for j, h in enumerate(order):  # slot j of the shifted merge holds head h
            permuted[:, h * hd : (h + 1) * hd] = w[:, j * hd : (j + 1) * hd]
        state[f"base.blocks.{i}.attn.proj.weight"] = permuted
    concat.load_state_dict(state)
    ids = torch.randint(5, 50, (2, 8))
    gap = (shift.forward_lm(ids) - concat.forward_lm(ids)).abs().max().item()
    row = (
        "004",
        "shuffle / shift head merges change what the model can learn",
        "shift model vs concat model with the output projection's column blocks permuted: max |Δ logits|",
        f"{gap:.2g} (float32 rounding)",
        "wrong: a fixed permutation is a reparametrisation of concat, the same functions relabelled",
    )
    return row, ids


def _reweight_check(ids: torch.Tensor) -> tuple[str, ...]:
    # course report 004: re-weighting by each head's matrix norm; ours is per token
    reweight = TinyTransformer(_tiny(head_merge="reweight")).eval()
    ids2 = ids.clone()
    ids2[:, -1] = (ids[:, -1] + 1 - 5) % 45 + 5
    ours = (reweight.forward_lm(ids) - reweight.forward_lm(ids2))[:, :-1].abs().max().item()
    y = torch.randn(1, 4, 8, 4)
    y2 = y.clone()
    y2[:, :, -1] *= 3.0

    def seq_w(t):  # the course report's weights: each head's norm over all positions and features
        norms = t.flatten(2).norm(dim=-1)
        return norms / norms.sum(1, keepdim=True)

    leak = (seq_w(y) - seq_w(y2)).abs().max().item()
    return (
        "004",
        "re-weight heads by their output matrix norm",
        "change the last token; max |Δ| at earlier positions: our per-token weights vs a norm over "
        "the whole (L × head size) output",
        f"ours: {ours:.3g}; whole-sequence norm: head weights change by {leak:.3g}",
        "a norm over the sequence lets position t see later tokens (a causal leak); ours is causal",
    )


def write_checks(
    out: Path, ours: ModelConfig, model: TinyTransformer, tokenizer: Tokenizer, samples: dict[str, str]
) -> list[Path]:
    """Every table the checks stage writes under `out` (JSON the report reads back); their paths."""
    vocab, classes = ours.vocab_size, ours.n_classes
    tables = {
        "counts.json": {
            "vocab": vocab,
            "classes": classes,
            "ours": analytic_counts(ours),
            "lab100": analytic_counts(course_lab_config(100)),
        },
        "parameters.json": _table(parameter_table(ours, course_lab_config(vocab, classes))),
        "seed_claims.json": _table(course_claims_table()),
        "pytorch_checks.json": _table(pytorch_checks()),
        "attention.json": attention_record(model, tokenizer, samples),
    }
    for name, data in tables.items():
        write_json(out / name, data)
    return [out / name for name in tables]


def attention_record(model, tokenizer, samples: dict[str, str]) -> dict:
    """Attention weights of the 'normal' sample (else the first), or why there are none."""
    if not samples:
        return {"skipped": "no sample sentences in pretrain.samples"}
    if model.config.arch != "tinytf":
        return {"skipped": f"arch '{model.config.arch}' does not expose its weights"}
    name = "normal" if "normal" in samples else next(iter(samples))
    tokens, weights = attention_weights(model, tokenizer, samples[name])
    if not weights:
        return {"skipped": f"the '{name}' sample is under two tokens long"}
    # float32 values as JSON numbers round-trip exactly: the report reads back the same weights
    return {
        "sample": name,
        "text": samples[name],
        "tokens": tokens,
        "causal": model.config.causal,
        "weights": [w.tolist() for w in weights],
    }


def _table(frame) -> dict:
    """A DataFrame as {"columns", "data"}: column order survives write_json's sorted keys."""
    return json.loads(frame.to_json(orient="split", index=False, double_precision=15))
