"""The tinytf model: token embedding + positional encoding + N blocks (+ final norm) + two heads.

Two interchangeable bodies: arch="tinytf" (blocks written out here, pre-LN by default) and
arch="torch_encoder" (the course lab's `nn.TransformerEncoder`, `tinytf.model.reference`). The
heads, `lm_head` (optionally tied to the token embedding) and `cls_head` (on a pooled token), live
outside `base`, so a classifier starts from a pretrained LM by copying `base_state_dict()` alone.
Shapes: B batch, L sequence length, D = d_model, V = vocab_size, H = n_head.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tinytf.model.architecture import ModelConfig
from tinytf.model.attention import SelfAttention, attention_bias, build_attention_mask
from tinytf.model.dropout import Dropout
from tinytf.model.reference import TorchEncoderBase, sinusoidal_table


class SinusoidalPositions(nn.Module):
    """Fixed table, no parameters; non-persistent: recomputed from the config, not checkpointed."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.register_buffer("pe", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, pos: Tensor) -> Tensor:
        return self.pe[pos]


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.act = nn.ReLU() if cfg.activation == "relu" else nn.GELU()
        self.drop = Dropout(cfg.dropout)  # same two dropouts as nn.TransformerEncoderLayer

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class Block(nn.Module):
    """Attention and feed-forward sublayers, each in a residual connection and a LayerNorm:
    post-LN x = LN(x + f(x)) (nn.TransformerEncoderLayer) or pre-LN x = x + f(LN(x)) (GPT-2)."""

    def __init__(self, cfg: ModelConfig, head_order: Tensor | None = None):
        super().__init__()
        self.norm_first = cfg.norm_first
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias)
        self.attn = SelfAttention(
            cfg.d_model, cfg.n_head, cfg.dropout, cfg.bias, cfg.attn_impl, cfg.head_merge, head_order
        )
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias)
        self.ff = FeedForward(cfg)

    def forward(self, x: Tensor, mask: Tensor | None, causal: bool, need_weights: bool = False):
        if self.norm_first:
            a, w = self.attn(self.ln1(x), mask, causal, need_weights)
            x = x + a
            return x + self.ff(self.ln2(x)), w
        a, w = self.attn(x, mask, causal, need_weights)
        x = self.ln1(x + a)
        return self.ln2(x + self.ff(x)), w


def head_orders(cfg: ModelConfig) -> list[Tensor | None]:
    """The fixed per-layer head order of each block (None for concat/reweight); shuffle's come from
    a generator seeded with cfg.seed, independent of the global torch RNG."""
    if cfg.head_merge == "shift":
        return [torch.roll(torch.arange(cfg.n_head), -1)] * cfg.n_layer  # (1, 2, ..., H-1, 0)
    if cfg.head_merge == "shuffle":
        g = torch.Generator().manual_seed(cfg.seed)
        return [torch.randperm(cfg.n_head, generator=g) for _ in range(cfg.n_layer)]
    return [None] * cfg.n_layer


class TinyTFBase(nn.Module):
    """arch="tinytf": (B, L) token ids -> (B, L, D) hidden states."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.pos_encoding == "sinusoidal":
            self.pos_emb = SinusoidalPositions(cfg.block_size, cfg.d_model)
        elif cfg.pos_encoding == "learned":
            self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        else:  # "none": attention alone is permutation-equivariant; only the causal mask orders tokens
            self.pos_emb = None
        self.drop = Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg, order) for order in head_orders(cfg))
        # post-LN blocks already end in a LayerNorm; pre-LN leaves the residual stream un-normalised
        self.ln_f = (
            nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps, bias=cfg.bias) if cfg.norm_first else None
        )
        self.apply(self._init_weights)
        # token embedding std 1/sqrt(D): times sqrt(D) that is unit variance, the sinusoids' scale;
        # tied to lm_head it gives logits of std ~1 on LayerNorm-ed hidden states
        nn.init.normal_(self.tok_emb.weight, std=cfg.d_model**-0.5)
        if cfg.pos_encoding == "learned":
            # start at the RMS of the sinusoidal table (1/sqrt 2), so learned vs sinusoidal differ
            # only in whether the table is trained, not in how loud positions are at step 0
            nn.init.normal_(self.pos_emb.weight, std=0.5**0.5)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):  # GPT-2 / nanoGPT initialisation
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    @property
    def token_embedding(self) -> nn.Embedding:
        return self.tok_emb

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor | None = None, return_attention: bool = False
    ):
        B, L = input_ids.shape
        if L > self.cfg.block_size:
            raise ValueError(f"sequence length {L} exceeds block_size {self.cfg.block_size}")
        x = self.tok_emb(input_ids)
        if self.cfg.scale_embedding:
            x = x * math.sqrt(self.cfg.d_model)
        if self.pos_emb is not None:
            # absolute positions 0..L-1 whatever the padding: pad on the right so tokens keep theirs
            x = x + self.pos_emb(torch.arange(L, device=input_ids.device))
        x = self.drop(x)
        mask = build_attention_mask(attention_mask, L, self.cfg.causal)
        if mask is not None and not self.blocks[0].attn.runs_sdpa(x, return_attention):
            mask = attention_bias(mask)  # the written-out path adds it: once here, not per layer
        attentions = []
        for block in self.blocks:
            x, w = block(x, mask, self.cfg.causal, return_attention)
            attentions.append(w)
        if self.ln_f is not None:
            x = self.ln_f(x)
        return (x, attentions) if return_attention else x


def pool(hidden: Tensor, attention_mask: Tensor | None, pooling: str) -> Tensor:
    """(B, L, D) -> (B, D): the last non-padding token (under causal attention the only one that has
    seen the whole text), the mean over non-padding tokens, or the first non-padding token."""
    B, L, _ = hidden.shape
    if attention_mask is None:
        attention_mask = torch.ones(B, L, dtype=torch.long, device=hidden.device)
    m = attention_mask.long()  # integer index arithmetic: bf16 cannot count past 256 exactly
    if pooling == "mean":
        w = m.to(hidden.dtype).unsqueeze(-1)
        return (hidden * w).sum(1) / w.sum(1).clamp(min=1.0)
    if pooling == "last":
        idx = (m * torch.arange(1, L + 1, device=hidden.device)).argmax(1)  # largest position holding a 1
    elif pooling == "first":
        idx = m.argmax(1)  # argmax returns the first maximum
    else:
        raise ValueError(f"unknown pooling {pooling!r}")
    return hidden[torch.arange(B, device=hidden.device), idx]


class TinyTransformer(nn.Module):
    """A base (tinytf or torch_encoder) plus an LM head and a classification head."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.base = TinyTFBase(cfg) if cfg.arch == "tinytf" else TorchEncoderBase(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.bias)
        self.cls_head = nn.Linear(cfg.d_model, cfg.n_classes, bias=cfg.bias)
        for head in (self.lm_head, self.cls_head):
            if cfg.arch == "torch_encoder":
                nn.init.uniform_(head.weight, -0.1, 0.1)  # the lab's ClassificationHead.init_weights()
            else:
                nn.init.normal_(head.weight, std=0.02)
            if head.bias is not None:
                nn.init.zeros_(head.bias)
        if cfg.tie_weights:
            # one Parameter in two modules: the input embedding is also the output projection
            self.lm_head.weight = self.base.token_embedding.weight

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, head: str = "lm") -> Tensor:
        if head == "lm":
            return self.forward_lm(input_ids, attention_mask)
        if head == "cls":
            return self.forward_cls(input_ids, attention_mask)
        raise ValueError(f"unknown head {head!r}; expected 'lm' or 'cls'")

    def forward_lm(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """(B, L) -> (B, L, V) next-token logits (causal) or token logits (masked LM)."""
        return self.lm_head(self.base(input_ids, attention_mask))

    def forward_cls(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """(B, L) -> (B, n_classes) logits from the pooled hidden state."""
        pooled = pool(self.base(input_ids, attention_mask), attention_mask, self.config.pooling)
        return self.cls_head(pooled)

    def attention_weights(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer softmax weights (B, H, L, L) from the written-out path (arch="tinytf" only)."""
        return self.base(input_ids, attention_mask, return_attention=True)[1]

    def make_attention_mask(self, input_ids: Tensor) -> Tensor:
        """(B, L) mask, 1 where input_ids != pad_id; for callers whose batches carry no mask."""
        return (input_ids != self.config.pad_id).long()

    def base_state_dict(self) -> dict[str, Tensor]:
        """The body's weights only (keys without the 'base.' prefix): what transfers between tasks."""
        return self.base.state_dict()

    def load_base_state_dict(self, state_dict: dict[str, Tensor], strict: bool = True):
        """Load body weights from `base_state_dict()` output or a full model state dict; the heads
        are left as they are (a tied LM head follows the loaded embedding)."""
        if any(k.startswith("base.") for k in state_dict):
            state_dict = {k[5:]: v for k, v in state_dict.items() if k.startswith("base.")}
        # seed-lab checkpoints store the fixed sinusoidal table; here it is rebuilt from the config
        state_dict = {k: v for k, v in state_dict.items() if k != "pos_encoder.pe"}
        return self.base.load_state_dict(state_dict, strict=strict)


def lm_loss(logits: Tensor, targets: Tensor, ignore_index: int = -100) -> Tensor:
    """Mean token cross-entropy. Logits are upcast to fp32: a bf16/fp16 log-softmax over a large
    vocabulary loses the small probabilities the loss is made of."""
    return F.cross_entropy(logits.float().flatten(0, -2), targets.flatten(), ignore_index=ignore_index)


def cls_loss(logits: Tensor, labels: Tensor) -> Tensor:
    return F.cross_entropy(logits.float(), labels)


def perplexity(mean_nll: float) -> float:
    """exp(mean token negative log-likelihood, in nats); inf instead of an OverflowError."""
    return math.exp(mean_nll) if mean_nll < 709.0 else float("inf")
