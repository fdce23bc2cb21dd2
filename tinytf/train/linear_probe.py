"""The `probe` start: a logistic regression on the frozen body's features.

Features: each layer's output pooled as the classifier pools, concatenated (BERT's feature-based
approach, Devlin et al. 2019 §5.3): a causal LM's last layer is shaped for the next token, and part
of a text's sentiment sits in earlier layers. Fit: L-BFGS logistic regression on standardised
features, C chosen on validation (as CLIP's linear probes): a convex problem fitted exactly, with no
lr, epochs or batch order of its own to choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tinytf.data.batching import sentiment_loader
from tinytf.data.predictions import predicted
from tinytf.data.sentiment import SentimentData
from tinytf.data.splits import SPLITS
from tinytf.model.transformer import TinyTransformer, pool
from tinytf.train.runtime import Runtime


def body_layers(model: TinyTransformer) -> torch.nn.ModuleList:
    """tinytf's blocks, or the torch_encoder's encoder layers."""
    base = model.base
    return base.blocks if hasattr(base, "blocks") else base.transformer_encoder.layers


@torch.no_grad()
def layer_features(
    model: TinyTransformer, data: SentimentData, max_length: int, runtime: Runtime
) -> dict[str, np.ndarray]:
    """(texts, n_layer * d_model) fp32 features of every split, in file order; the last layer's
    as the body returns it (through its final norm, where it has one)."""
    config = model.config
    prefix = data.cls_id if config.pooling == "first" else None
    model.to(runtime.device).eval()
    outputs: list[torch.Tensor] = []  # the layers' outputs for the batch in flight

    def keep(_module, _inputs, output):
        outputs.append(output[0] if isinstance(output, tuple) else output)  # tinytf blocks: (x, weights)

    hooks = [layer.register_forward_hook(keep) for layer in body_layers(model)[:-1]]
    features = {}
    try:
        for split in SPLITS:
            loader = sentiment_loader(
                data.splits[split],
                256,
                max_length,
                shuffle=False,
                seed=0,
                prefix_id=prefix,
                group_by_length=True,
            )
            order = torch.tensor([i for batch in loader.batch_sampler for i in batch], dtype=torch.long)
            parts = []
            for batch in loader:
                ids, mask = batch["input_ids"].to(runtime.device), batch["attention_mask"].to(runtime.device)
                outputs.clear()
                with runtime.autocast():
                    last = model.base(ids, mask)
                pooled = [pool(hidden, mask, config.pooling).float() for hidden in [*outputs, last]]
                parts.append(torch.cat(pooled, dim=1).cpu())
            stacked = torch.cat(parts)
            features[split] = torch.empty_like(stacked).index_copy_(0, order, stacked).numpy()
    finally:
        for hook in hooks:
            hook.remove()
    return features


@dataclass
class ProbeFit:
    c: float  # the regularisation chosen on validation
    validation_accuracy: float
    test_accuracy: float
    test_loss: float  # mean cross-entropy on test, in nats
    # per split: (predicted class, its probability) for every text, in file order
    predictions: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def fit_probe(features: dict[str, np.ndarray], labels: dict[str, np.ndarray], cs: list[float]) -> ProbeFit:
    """One standardised logistic regression per C on `features["train"]`; the C with the best
    validation accuracy (the smaller C on a tie: more regularised) is scored on test."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    best = None
    # One BLAS thread: after torch has run, its OpenMP workers spin on the cores OpenBLAS's threads
    # wait for; and BLAS's summation order moves L-BFGS's stopping point with the core count.
    with threadpool_limits(1, user_api="blas"):
        for c in sorted(cs):
            model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000))
            model.fit(features["train"], labels["train"])
            accuracy = float(np.mean(model.predict(features["validation"]) == labels["validation"]))
            if best is None or accuracy > best[0]:
                best = (accuracy, c, model)
    accuracy, c, model = best
    test = features["test"]
    return ProbeFit(
        c=c,
        validation_accuracy=accuracy,
        test_accuracy=float(np.mean(model.predict(test) == labels["test"])),
        test_loss=float(log_loss(labels["test"], model.predict_proba(test), labels=model.classes_)),
        predictions={split: predicted(model, features[split]) for split in ("validation", "test")},
    )
