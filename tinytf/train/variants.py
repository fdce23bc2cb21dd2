"""Course report 004's architecture study, the training side: each cell of positional encoding x
head merge is a short pretraining with the same step budget and data order for a seed, so the
differences come from the architecture (results: `tinytf.analysis.variants`).
"""

from __future__ import annotations

import dataclasses

from tinytf.params.config import ModelParams, PretrainParams, VariantsParams


def cell_params(
    model: ModelParams, pretrain: PretrainParams, variants: VariantsParams, pos: str, merge: str
) -> tuple[ModelParams, PretrainParams]:
    """The model and pretraining params of one cell, with the study's budget."""
    v = variants
    return (
        dataclasses.replace(model, pos_encoding=pos, head_merge=merge),
        dataclasses.replace(
            pretrain,
            epochs=1,
            steps_per_epoch=v.steps,
            batch_size=v.batch_size,
            lr=v.lr,
            eval_batches=v.eval_batches,
            warmup_steps=min(pretrain.warmup_steps, v.steps // 5),
            checkpoint_every=max(v.steps, 1),
        ),
    )
