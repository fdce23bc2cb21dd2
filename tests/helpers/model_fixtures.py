"""Small models and ragged batches shared by the model and attention tests."""

import torch

from tinytf.model.transformer import ModelConfig, TinyTransformer

V, L = 37, 12


def small(**kw) -> ModelConfig:
    base = dict(
        vocab_size=V,
        block_size=32,
        n_layer=2,
        n_head=4,
        d_model=16,
        d_ff=24,
        dropout=0.0,
        norm_first=False,
        activation="relu",
        pooling="last",
    )  # the course lab's post-LN choices
    return ModelConfig(**{**base, **kw})


def classifier(vocab_size: int, **kw) -> ModelConfig:
    """The small classifier that tests save, serve and report on: the product's own architecture
    (pre-LN, gelu), one layer, for tests where what the model answers does not matter."""
    base = dict(vocab_size=vocab_size, n_layer=1, n_head=2, d_model=16, d_ff=32, dropout=0.1, pooling="last")
    return ModelConfig(**{**base, **kw})


def build(seed: int = 0, **kw) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(small(**kw)).eval()


def ids_and_mask(B: int = 3, left: bool = False, seed: int = 1):
    """Random ids with a ragged attention mask: lengths L, L-4 and 3 (padding right or left)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (B, L), generator=g)
    mask = torch.ones(B, L, dtype=torch.long)
    for b, n in enumerate([L, L - 4, 3][:B]):
        if left:
            mask[b, : L - n] = 0
        else:
            mask[b, n:] = 0
    return ids, mask
