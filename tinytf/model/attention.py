"""Multi-head self-attention written out, its masks, and the head-merge variants of course report 004.

Shapes: B batch, L sequence length, D = d_model, H heads, hd = D // H (head size).
Masks are boolean, True = "this query may attend to this key" (SDPA's convention; the opposite of
`nn.MultiheadAttention`'s), or the same as an additive float one (`attention_bias`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinytf.model.architecture import HEAD_MERGES
from tinytf.model.dropout import Dropout


def build_attention_mask(attention_mask: Tensor | None, seq_len: int, causal: bool) -> Tensor | None:
    """Combine key padding (the tokenizer's (B, L) mask, 1 = real token) and (optionally) causality
    into one boolean mask (B, 1, L, L). None without a padding mask: the attention then applies
    causality itself (`is_causal`), which lets SDPA pick its fastest kernel."""
    if attention_mask is None:
        return None
    device = attention_mask.device
    allowed = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, L): which keys are real
    if causal:
        allowed = allowed & torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    # A query whose every visible key is padding would take a softmax over only -inf: NaN, which
    # also poisons the backward pass. Letting every position see itself keeps those rows finite;
    # only padded queries change (a real one sees itself anyway), and their outputs are never read.
    return allowed | torch.eye(seq_len, dtype=torch.bool, device=device)


def attention_bias(allowed: Tensor) -> Tensor:
    """The boolean mask as an additive fp32 one (0 / -inf): what `masked_fill(~allowed, -inf)` gives,
    but vectorised; torch's CPU `masked_fill` over a mask broadcast across heads is not."""
    return torch.where(allowed, 0.0, float("-inf"))


def head_norm_weights(y: Tensor, eps: float = 1e-12) -> Tensor:
    """Per-token norm share of each head: w_h = ||o_h|| / sum_h' ||o_h'||, (B, H, L, hd) -> (B, H, L).
    The norm is over one token's hd features, never across positions, which would leak the future."""
    norms = y.float().pow(2).sum(-1).add(eps).sqrt()  # eps: finite gradient when a head outputs 0
    return (norms / norms.sum(dim=1, keepdim=True)).to(y.dtype)


def merge_heads(y: Tensor, head_merge: str, head_order: Tensor | None = None) -> Tensor:
    """(B, H, L, hd) per-head outputs -> (B, L, D), the input of the output projection.

    concat   [O_1 ... O_H], the standard merge.
    shuffle  [O_s1 ... O_sH] with s = head_order, a permutation fixed per layer at construction.
    shift    [O_2 ... O_H O_1]: head_order = (1, 2, ..., H-1, 0), the heads rotated by one slot.
    reweight [H*w_1*O_1 ... H*w_H*O_H] with w_h = ||o_h|| / sum_h' ||o_h'|| per token (see
             `head_norm_weights`). The factor H keeps the concat scale: when all heads have the
             same norm every H*w_h is 1 and reweight equals concat.

    A fixed permutation (shuffle, shift) is a reparametrisation: it equals concat with the output
    projection's input column blocks permuted, so it changes nothing a trained model can express.
    """
    if head_merge in ("shuffle", "shift"):
        y = y[:, head_order]
    elif head_merge == "reweight":
        y = y * (y.size(1) * head_norm_weights(y)).unsqueeze(-1)
    elif head_merge != "concat":
        raise ValueError(f"unknown head_merge {head_merge!r}; expected one of {HEAD_MERGES}")
    B, H, L, hd = y.shape
    return y.transpose(1, 2).reshape(B, L, H * hd)


class SelfAttention(nn.Module):
    """softmax(Q K^T / sqrt(hd)) V over H heads, then a head merge and the output projection;
    "manual" (written out, can return the weights) or "sdpa" (fused kernels)."""

    def __init__(
        self,
        d_model: int,
        n_head: int,
        dropout: float = 0.0,
        bias: bool = True,
        attn_impl: str = "manual",
        head_merge: str = "concat",
        head_order: Tensor | None = None,
    ):
        super().__init__()
        assert d_model % n_head == 0, "d_model must be divisible by n_head"
        self.n_head, self.head_dim = n_head, d_model // n_head
        self.attn_impl, self.head_merge, self.dropout = attn_impl, head_merge, dropout
        # q, k, v in one matmul; rows ordered [q; k; v] exactly like nn.MultiheadAttention.in_proj_weight
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_drop = Dropout(dropout)
        self.resid_drop = Dropout(dropout)
        if head_merge in ("shuffle", "shift"):
            assert head_order is not None and sorted(head_order.tolist()) == list(range(n_head))
            # a buffer, so it travels with the state dict and moves with .to(device)
            self.register_buffer("head_order", head_order.clone().long())
        else:
            self.head_order = None

    def forward(
        self, x: Tensor, mask: Tensor | None = None, causal: bool = False, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, L, D); mask (B|1, 1, L, L) bool, True = may attend (already includes causality), or
        its `attention_bias`; causal is only used when mask is None. Returns (B, L, D) and the
        weights (B, H, L, L) or None."""
        B, L, D = x.shape
        # (B, L, 3D) -> three (B, H, L, hd): each head attends within its own hd-sized slice of D
        q, k, v = self.qkv(x).view(B, L, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        weights = None
        if self.runs_sdpa(x, need_weights):
            if mask is not None and mask.is_floating_point():
                mask = mask.to(q.dtype)  # SDPA wants the query's dtype; 0 and -inf are exact in any
            # dropout_p is 0 wherever SDPA runs on a CPU (`_sdpa_is_faster`); on CUDA the fused kernel drops
            y = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=mask,
                dropout_p=self.dropout if self.training else 0.0,
                is_causal=causal and mask is None,
            )
        else:
            # 1/sqrt(hd) keeps the logits' variance ~1 whatever the head size, so softmax is not saturated
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
            if mask is None and causal:
                mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
            if mask is not None and mask.is_floating_point():
                att = att + mask  # exp(-inf) = 0: masked keys get no weight
            elif mask is not None:
                att = att.masked_fill(~mask, float("-inf"))
            weights = F.softmax(att.float(), dim=-1).to(q.dtype)  # softmax in fp32 under autocast
            y = self.attn_drop(weights) @ v  # the returned weights are the ones before dropout
        y = merge_heads(y, self.head_merge, self.head_order)
        return self.resid_drop(self.proj(y)), weights

    def runs_sdpa(self, x: Tensor, need_weights: bool = False) -> bool:
        """Whether a forward pass on x takes `F.scaled_dot_product_attention`, not the written-out math."""
        return self.attn_impl == "sdpa" and not need_weights and self._sdpa_is_faster(x)

    def _sdpa_is_faster(self, x: Tensor) -> bool:
        return sdpa_is_faster(
            x.device.type,
            compiling=torch.compiler.is_compiling(),
            training_dropout=self.training and self.dropout > 0,
            records_grad=x.requires_grad,
            low_precision=torch.is_autocast_enabled(x.device.type),
        )


def sdpa_is_faster(
    device_type: str, compiling: bool, training_dropout: bool, records_grad: bool, low_precision: bool = False
) -> bool:
    """Whether SDPA beats the written-out math (equal up to rounding) on a device type:
    - on CUDA always: its flash kernel never writes the L x L scores, and drops out inside;
    - with dropout in training elsewhere, no: it would use torch's slower random numbers;
    - under torch.compile, in fp32 yes (CPU flash kernels), in bf16 no: inductor fuses the scale,
      mask, softmax and dropout around the matmuls, where SDPA stays opaque;
    - on a CPU where autograd records it, no: at these lengths its backward is the slower one;
    - in inference, yes (benchmarks/pretrain_throughput.py, benchmarks/attention_paths.py)."""
    if device_type == "cuda":
        return True
    if training_dropout:
        return False
    if compiling:
        return not low_precision
    return not (records_grad and device_type == "cpu")
