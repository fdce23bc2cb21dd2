"""Language-model objectives and their evaluation: causal next-token and BERT-style masked LM
(Devlin et al. 2019: of the chosen positions 80 % become [MASK], 10 % a random token, 10 % stay).
Evaluation is deterministic: strided blocks, and masks drawn from a generator with a fixed seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tokenizers import Tokenizer

from tinytf.data.batching import random_blocks, strided_blocks
from tinytf.data.tokenizer import EOS, SPECIAL_TOKENS
from tinytf.model.transformer import TinyTransformer, lm_loss, perplexity
from tinytf.train.runtime import Runtime

IGNORE = -100
EVAL_MASK_SEED = 1234


def mask_tokens(
    ids: torch.Tensor, vocab_size: int, mask_id: int, prob: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking of a (B, T) block; returns (inputs, targets with IGNORE where not chosen)."""
    chosen = torch.rand(ids.shape, generator=generator) < prob
    chosen &= ids >= len(SPECIAL_TOKENS)  # never ask the model to predict [EOS] / [PAD]
    roll = torch.rand(ids.shape, generator=generator)
    inputs = ids.clone()
    inputs[chosen & (roll < 0.8)] = mask_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = torch.randint(len(SPECIAL_TOKENS), vocab_size, ids.shape, generator=generator)[swap]
    targets = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    return inputs, targets


@dataclass
class Objective:
    kind: str  # "causal" | "masked"
    vocab_size: int
    mask_id: int
    mask_prob: float = 0.15

    def train_batch(self, tokens: np.ndarray, block: int, batch: int, generator: torch.Generator):
        x, y = random_blocks(tokens, block, batch, generator)
        if self.kind == "causal":
            return x, y
        return mask_tokens(x, self.vocab_size, self.mask_id, self.mask_prob, generator)


@torch.no_grad()
def evaluate(
    model: TinyTransformer,
    tokens: np.ndarray,
    objective: Objective,
    block: int,
    batch: int,
    runtime: Runtime,
    max_tokens: int = 0,
) -> dict[str, float]:
    """Summed and mean NLL (nats) over a split; `max_tokens` > 0 reads only the first that many."""
    if max_tokens:
        tokens = tokens[: max_tokens + 1]
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(EVAL_MASK_SEED)
    total, count = 0.0, 0
    for x, y in strided_blocks(tokens, block, batch):
        if objective.kind == "masked":
            x, y = mask_tokens(x, objective.vocab_size, objective.mask_id, objective.mask_prob, generator)
        x, y = x.to(runtime.device), y.to(runtime.device)
        with runtime.autocast():
            logits = model.forward_lm(x)
        n = int((y != IGNORE).sum())
        total += float(lm_loss(logits, y, ignore_index=IGNORE)) * n
        count += n
    model.train(was_training)
    mean = total / max(count, 1)
    return {"nll_sum": total, "tokens": count, "loss": mean, "perplexity": perplexity(mean)}


@torch.no_grad()
def score_text(
    model: TinyTransformer, tokenizer: Tokenizer, text: str, runtime: Runtime | None = None
) -> dict[str, float]:
    """Causal loss and perplexity of one text, preceded by [EOS] as every line is in the training
    stream; a text longer than the context is scored in windows that keep half a context of history."""
    runtime = runtime or Runtime(torch.device("cpu"), "fp32", False)
    ids = [tokenizer.token_to_id(EOS)] + tokenizer.encode(text, add_special_tokens=False).ids
    block = model.config.block_size
    was_training = model.training
    model.eval()
    total, count, scored_until = 0.0, 0, 1  # position 0 is context only
    stride = max(block // 2, 1)
    start = 0
    while scored_until < len(ids):
        window = ids[start : start + block + 1]
        x = torch.tensor([window[:-1]], device=runtime.device)
        y = torch.tensor([window[1:]], device=runtime.device)
        keep = torch.arange(start + 1, start + len(window), device=runtime.device) >= scored_until
        y = torch.where(keep.unsqueeze(0), y, torch.full_like(y, IGNORE))
        with runtime.autocast():
            logits = model.forward_lm(x)
        n = int(keep.sum())
        total += float(lm_loss(logits, y, ignore_index=IGNORE)) * n
        count += n
        scored_until = start + len(window)
        start += stride
    model.train(was_training)
    mean = total / max(count, 1)
    return {"loss": mean, "perplexity": perplexity(mean), "tokens": count}
