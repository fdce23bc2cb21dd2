"""Stage entry points: validated params in, core function called, outputs written, run logged.

Each function here is what one DVC stage (and the matching `tinytf` subcommand) does. They
take a validated `Params`; the console script and `stages/*.py` handle argument parsing
and turn `TinyTFError` into a one-line message with exit status 2.
"""

from __future__ import annotations

import sys

from tinytf.config import Params, to_dict
from tinytf.tracking import stage_run


def _stage_params(params: Params, *sections: str) -> dict:
    return {"base": to_dict(params.base), **{name: to_dict(getattr(params, name)) for name in sections}}


def prepare_stage(params: Params) -> None:
    from tinytf.prepare import run_prepare

    with stage_run("prepare", _stage_params(params, "prepare"), params.base.experiment) as tracker:
        datasets, stats = run_prepare(params)
        for data in datasets:
            for split, frame in data.splits.items():
                tracker.log_dataset(
                    frame, f"data/prepared/{data.name}/{split}.parquet", f"{data.name}-{split}", split
                )
                tracker.log_metrics({f"{data.name}.{split}.rows": len(frame)})
        tracker.log_artifact("reports/data.md")
        tracker.log_artifact("reports/data.json")
        for data in datasets:
            rows = ", ".join(f"{s} {len(f)}" for s, f in data.splits.items())
            print(f"prepared {data.name} ({data.source}): {rows}", file=sys.stderr)


def tokenize_stage(params: Params) -> None:
    from tinytf.tokenizer import run_tokenize

    with stage_run("tokenize", _stage_params(params, "tokenize"), params.base.experiment) as tracker:
        metrics, timings = run_tokenize(params.tokenize)
        flat = {f"corpus.{s}.tokens": m["tokens"] for s, m in metrics["corpus"].items()}
        flat.update({f"corpus.{s}.unk_rate": m["unk_rate"] for s, m in metrics["corpus"].items()})
        flat.update(
            {
                f"sentiment.{s}.truncated": m["truncated_at_max_length"]
                for s, m in metrics["sentiment"].items()
            }
        )
        tracker.log_metrics({**flat, **timings})
        tracker.log_artifact("data/tokenizer.json")
        tracker.log_artifact("reports/tokenize.json")
        print(
            f"tokenizer: {metrics['vocab_size']} tokens ({params.tokenize.kind}), trained in "
            f"{timings['train_seconds']:.1f} s; corpus {timings['corpus_megabytes']:.1f} MB encoded at "
            f"{timings['encode_mb_per_s']:.1f} MB/s; "
            f"{sum(m['truncated_at_max_length'] for m in metrics['sentiment'].values())} sentiment texts "
            f"longer than max_length={params.tokenize.max_length}",
            file=sys.stderr,
        )


STAGES = {
    "prepare": prepare_stage,
    "tokenize": tokenize_stage,
}
