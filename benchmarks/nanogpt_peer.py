"""A nanoGPT-style training step: the peer the speed issue's GPU target names ("at least level
with the nanoGPT-style reference measured in the same run"), for `pretrain_throughput.py --nanogpt`.

It follows nanoGPT's model.py and train.py (github.com/karpathy/nanoGPT): pre-LN blocks, one
fused q/k/v projection, PyTorch's SDPA with `is_causal=True`, a GELU MLP, learned positions,
its init, the loss computed inside `forward` and the whole model under `torch.compile`; AdamW
(betas 0.9, 0.95) with weight decay on the matrices only, fused on CUDA as nanoGPT has it;
gradient clipping; no host sync between steps (nanoGPT reads the loss every `log_interval`
steps: 10 in its config/train_shakespeare_char.py, whose 6 x 384, block 256, batch 64 is the
target's shape). Written here rather than imported: nanoGPT is not a package, and the
benchmark needs it in tinytf's shapes.

Both sides do the same work: tinytf's shape (width, layers, heads, d_ff, block, vocabulary:
8000 by default where that config has 65 characters), dropout (nanoGPT's config: 0.2), biases
(train.py's default has none), tied or untied head (nanoGPT ties; tinytf's default does not),
batches, and tinytf's runtime: its precision and compile choice, and compile's eager fallback.
Where nanoGPT differs: its train.py runs fp32 on a CPU (no autocast there) and turns TF32 on on
CUDA (which would change tinytf's side too, in one process; it matters only in fp32), and here
the peer runs under the same autocast as tinytf, so the ratio compares steps, not precisions.
Each call runs with deterministic algorithms off, as nanoGPT runs, although tinytf's compiled
step turns them on process-wide for its reruns to be identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from tinytf.model.architecture import ModelConfig
from tinytf.train.runtime import Runtime, maybe_compile, seed_everything


class CausalSelfAttention(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.n_head, self.dropout = c.n_head, c.dropout
        self.c_attn = nn.Linear(c.d_model, 3 * c.d_model)
        self.c_proj = nn.Linear(c.d_model, c.d_model)
        self.resid_dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            for t in self.c_attn(x).split(C, dim=2)
        )
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class Block(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.attn = CausalSelfAttention(c)
        self.mlp = nn.Sequential(
            nn.Linear(c.d_model, c.d_ff), nn.GELU(), nn.Linear(c.d_ff, c.d_model), nn.Dropout(c.dropout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.d_model)
        self.wpe = nn.Embedding(c.block_size, c.d_model)
        self.drop = nn.Dropout(c.dropout)
        self.h = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(
            c.d_model, c.vocab_size, bias=c.bias
        )  # tinytf's head has one where its layers do
        if c.tie_weights:  # nanoGPT always ties; tinytf's default does not, and the peer follows tinytf
            self.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():  # nanoGPT's init, residual projections scaled down
            if p.dim() == 2:
                std = (
                    0.02 / math.sqrt(2 * c.n_layer)
                    if name.endswith(("c_proj.weight", "mlp.2.weight"))
                    else 0.02
                )
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        # reshape, not view: tinytf's batches are two slices of one tensor, nanoGPT stacks each
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)


def matmul_parameters(model: NanoGPT) -> int:
    """Weights a token's matmuls pass through: all but the token and position tables, plus the
    head (counted even when tied, since its matmul runs either way)."""
    tables = {id(model.wte.weight), id(model.wpe.weight)}
    body = sum(p.numel() for p in model.parameters() if id(p) not in tables)
    return body + model.lm_head.weight.numel() * (model.lm_head.weight is model.wte.weight)


def nanogpt_step(
    config: ModelConfig,
    lr: float,
    weight_decay: float,
    grad_clip: float,
    grad_accum: int,
    next_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    runtime: Runtime,
) -> tuple[NanoGPT, Callable[[], None]]:
    """(model, one optimizer step as nanoGPT's train.py runs it) on tinytf's runtime."""
    seed_everything(0)
    model = NanoGPT(config).to(runtime.device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=runtime.device.type == "cuda")
    forward = maybe_compile(model, runtime)  # tinytf's fallback: a compile that fails runs eagerly

    def step() -> None:
        deterministic = (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )
        torch.use_deterministic_algorithms(False)
        try:
            for _ in range(grad_accum):
                x, y = (t.to(runtime.device, non_blocking=True) for t in next_batch())
                with runtime.autocast():
                    loss = forward(x, y) / grad_accum
                loss.backward()
            if grad_clip:  # nanoGPT's grad_clip = 0.0 turns clipping off, as tinytf's does
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        finally:
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])

    return model, step
