"""A tiny tokenized corpus on disk, shaped like the tokenize stage's output."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from tests.helpers.paths import REPO
from tinytf.data.tokenizer import encode_stream, train_tokenizer
from tinytf.io import write_npy
from tinytf.params.config import ModelParams, PretrainParams, TokenizeParams, load_params

# the sample sentences of params.yaml (course report 004's normal / weird / long): one source of truth
SAMPLES = load_params(REPO / "params.yaml").pretrain.samples
WORDS = "the a cat dog sat ran on under mat log big small red blue and then".split()


def make_corpus_dir(root: Path, lines: int = 400, seed: int = 0) -> Path:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(lines)]
    tokenizer = train_tokenizer(texts, TokenizeParams(vocab_size=400, min_frequency=1))
    tokenizer.save(str(root / "tokenizer.json"))
    for split, part in (("train", texts), ("validation", texts[:60]), ("test", texts[60:120])):
        write_npy(root / "tokens" / "corpus" / f"{split}.npy", encode_stream(tokenizer, part))
    return root


def make_sentiment_dir(root: Path, dropout: float = 0.1) -> Path:
    """Tokenizer + sentiment token files + a 'pretrained' checkpoint, like the pipeline makes."""
    import pandas as pd
    import torch

    from tests.helpers.model_fixtures import small
    from tinytf.data.tokenizer import encode, load_tokenizer
    from tinytf.model.checkpoint import save_model
    from tinytf.model.transformer import TinyTransformer

    make_corpus_dir(root)
    tokenizer = load_tokenizer(root / "tokenizer.json")
    rng = np.random.default_rng(0)
    for split, n in (("train", 96), ("validation", 32), ("test", 32)):
        labels = rng.integers(0, 2, n)
        texts = [" ".join(rng.choice(WORDS, 5)) + (" red red" if y else " blue blue") for y in labels]
        frame = pd.DataFrame({"input_ids": encode(tokenizer, texts), "label": labels})
        (root / "tokens" / "sentiment").mkdir(parents=True, exist_ok=True)
        frame.to_parquet(root / "tokens" / "sentiment" / f"{split}.parquet")
    (root / "tokens" / "sentiment" / "labels.json").write_text(json.dumps({"classes": ["neg", "pos"]}))
    config = small(vocab_size=tokenizer.get_vocab_size(), d_model=32, n_head=2, d_ff=64, dropout=dropout)
    torch.manual_seed(0)
    save_model(root / "models" / "pretrained.pt", TinyTransformer(config))
    return root


def tiny_model() -> ModelParams:
    return ModelParams(d_model=32, n_layer=2, n_head=2, d_ff=64, block_size=16, dropout=0.1, pooling="last")


def tiny_pretrain(**overrides) -> PretrainParams:
    base = dict(
        seeds=[1],
        batch_size=8,
        epochs=2,
        steps_per_epoch=6,
        warmup_steps=2,
        log_every=2,
        checkpoint_every=4,
        eval_batches=2,
        precision="fp32",
        compile=False,
        device="cpu",
        lr=3e-3,
        samples=SAMPLES,
    )
    base.update(overrides)
    return PretrainParams(**base)


def token_count(root: Path, split: str) -> int:
    return int(np.load(root / "tokens" / "corpus" / f"{split}.npy").size)
