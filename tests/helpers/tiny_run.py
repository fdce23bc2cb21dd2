"""What the tiny preset's run leaves: the DVC stages and the MLflow runs of each."""

from __future__ import annotations

# stage -> MLflow runs it makes on the tiny preset (variants: 1 pos x 1 merge x 2 seeds)
# grid: AdamW and SGD at one lr / batch size / epochs, the first finalist on one more seed;
# finetune: 1 stage run + one nested run per row of runs.csv (every run of the study: 12 curve
# runs, 2 label counts x 2 seeds x 3 starts; 2 more recipe-search runs; 2 snapshot runs; the
# search halves 2 candidates over 2 seeds: 2 + 1 runs a start, the chosen one's 2 are curve
# runs); baselines: 1 + one per fit (2 seeds at 60 labels, one fit for all labels)
RUNS = {
    "prepare": 1,
    "tokenize": 1,
    "pretrain": 2,  # one per pretrain.seeds
    "variants": 2,
    "variants (parent)": 1,
    "variants_table": 1,
    "finetune": 1 + 16,
    "baselines": 1 + 3,
    "grid": 2,
    "grid (parent)": 1,
    "grid_finalists": 1,
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
    + [f"variants@learned-concat-{seed}" for seed in (1, 2)]
    + ["grid@AdamW-0.01-16-2", "grid@SGD-0.01-16-2"]
    + ["grid_finalists@1-2"]
)
