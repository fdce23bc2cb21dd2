"""The course lab's model body, `nn.TransformerEncoder` with its sinusoidal `PositionalEncoding`,
kept for faithful reproduction (`model.arch: torch_encoder`) and as the reference the tests and
`benchmarks/` check tinytf's written-out blocks against. Shapes: B batch, L length, D = d_model.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from tinytf.model.architecture import ModelConfig
from tinytf.model.attention import build_attention_mask


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """PE[k, 2m] = sin(k / 10000^(2m/D)), PE[k, 2m+1] = cos(k / 10000^(2m/D)), shape (max_len, D)."""
    position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])  # [: D//2] also handles an odd D
    return pe


class PositionalEncoding(nn.Module):
    """The course lab's PositionalEncoding (batch-first): x + PE[:L], then dropout. No parameters."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(x + self.pe[: x.size(1)])


class TorchEncoderBase(nn.Module):
    """arch="torch_encoder": the course lab's TransformerModel. Attribute names are the lab's, so a lab
    checkpoint's `base.*` keys load as they are (its stored `pos_encoder.pe` table is skipped)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_encoder = PositionalEncoding(cfg.d_model, cfg.dropout, cfg.block_size)
        layer = nn.TransformerEncoderLayer(
            cfg.d_model,
            cfg.n_head,
            cfg.d_ff,
            cfg.dropout,
            activation=cfg.activation,
            layer_norm_eps=cfg.layer_norm_eps,
            batch_first=True,
            bias=cfg.bias,
        )
        # padding travels inside `mask` (so padded queries stay finite, as in tinytf), never as
        # src_key_padding_mask, so the nested-tensor path cannot apply; turning it off skips its warning
        self.transformer_encoder = nn.TransformerEncoder(layer, cfg.n_layer, enable_nested_tensor=False)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)  # the lab's init_weights(); layers keep torch's

    @property
    def token_embedding(self) -> nn.Embedding:
        return self.encoder

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor | None = None, return_attention: bool = False
    ):
        if return_attention:
            raise ValueError("arch='torch_encoder' cannot return attention weights; use arch='tinytf'")
        B, L = input_ids.shape
        if L > self.cfg.block_size:
            raise ValueError(f"sequence length {L} exceeds block_size {self.cfg.block_size}")
        x = self.encoder(input_ids)
        if self.cfg.scale_embedding:
            x = x * math.sqrt(self.cfg.d_model)
        x = self.pos_encoder(x)
        allowed = build_attention_mask(attention_mask, L, self.cfg.causal)  # (B, 1, L, L) or None
        if allowed is None and self.cfg.causal:
            allowed = torch.ones(1, 1, L, L, dtype=torch.bool, device=x.device).tril()
        src_mask = None
        if allowed is not None:
            # the lab's float mask (0 = attend, -inf = blocked, its generate_square_subsequent_mask);
            # with padding it differs per sequence, which nn.MultiheadAttention takes as (B*H, L, L)
            src_mask = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device)
            src_mask = src_mask.masked_fill(~allowed, float("-inf"))
            src_mask = src_mask.expand(B, self.cfg.n_head, L, L).reshape(B * self.cfg.n_head, L, L)
            if attention_mask is None:
                src_mask = src_mask[0]  # one (L, L) causal mask for the whole batch
        return self.transformer_encoder(x, mask=src_mask)
