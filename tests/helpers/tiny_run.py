"""What the tiny preset's run leaves: the DVC stages and the MLflow runs of each."""

from __future__ import annotations

# stage -> MLflow runs it makes on the tiny preset (variants: 1 pos x 2 merges x 2 seeds)
# grid: AdamW and SGD at one lr / batch size / epochs, both finalists on one more seed; finetune: 1 stage run + one nested run per
# row of runs.csv (every run of the study: 27 curve, 8 more recipe-search, 3 snapshot runs; the
# search halves 4 candidates over 2 seeds: 4 + 2 runs a start, the chosen one's 2 are curve runs);
# baselines: 1 + one per fit (3 seeds at 60 and 120 labels, one fit for all labels)
RUNS = {
    "prepare": 1,
    "tokenize": 1,
    "pretrain": 2,  # one per pretrain.seeds
    "variants": 4,
    "variants (parent)": 1,
    "variants_table": 1,
    "finetune": 1 + 38,
    "baselines": 1 + 7,
    "grid": 2,
    "grid (parent)": 1,
    "grid_finalists": 2,
    "grid_finalists (parent)": 1,
    "evaluate": 1,
    "probes": 1,
    "complexity": 1,
    "checks": 1,
    "report": 1,
}
DVC_STAGES = (
    [
        "check_params",
        "prepare",
        "tokenize",
        "variants_table",
        "finetune",
        "baselines",
        "evaluate",
        "probes",
        "complexity",
        "checks",
        "report",
    ]
    + ["pretrain@1", "pretrain@2"]
    + [f"variants@learned-{merge}-{seed}" for merge in ("concat", "reweight") for seed in (1, 2)]
    + ["grid@AdamW-0.01-16-2", "grid@SGD-0.01-16-2"]
    + ["grid_finalists@1-2", "grid_finalists@2-2"]
)
