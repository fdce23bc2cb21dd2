"""Stage entry points: validated params in, core function called, outputs written, run logged.

Each function here is what one DVC stage (and the matching `tinytf` subcommand) does. They
take a validated `Params`; the console script and `stages/*.py` handle argument parsing
and turn `TinyTFError` into a one-line message with exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

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


class TrackerCallback:
    """Training events -> MLflow: per-step metrics at their step, per-epoch metrics at their epoch."""

    def __init__(self, tracker, prefix: str = ""):
        self.tracker, self.prefix = tracker, prefix

    def on_step(self, step: int, metrics: dict) -> None:
        self.tracker.log_metrics({f"{self.prefix}{k}": v for k, v in metrics.items()}, step=step)

    def on_epoch(self, epoch: int, metrics: dict) -> None:
        values = {f"{self.prefix}epoch_{k}": v for k, v in metrics.items() if k not in ("epoch", "step")}
        self.tracker.log_metrics(values, step=epoch)


def pretrain_stage(
    params: Params,
    out: str = "data/models/pretrained.pt",
    reports: str = "reports/pretrain",
    state: str = "data/checkpoints/pretrain.pt",
    run_name: str | None = None,
) -> dict:
    from tinytf.pretrain import pretrain, write_outputs
    from tinytf.tracking import params_hash

    logged = _stage_params(params, "model", "pretrain")
    with stage_run("pretrain", logged, params.base.experiment, run_name=run_name) as tracker:
        result = pretrain(
            params.model,
            params.pretrain,
            params.base.seed,
            state_path=state,
            params_hash=params_hash(logged),
            callbacks=[TrackerCallback(tracker)],
        )
        metrics = write_outputs(result, Path(out), Path(reports), {"params_hash": params_hash(logged)})
        for sample, values in metrics["samples"].items():
            tracker.log_metrics(
                {f"sample_{sample}_loss": values["loss"], f"sample_{sample}_perplexity": values["perplexity"]}
            )
        tracker.set_tags(
            {"tinytf.precision": result.runtime.precision, "tinytf.compile": str(result.runtime.compile)}
        )
        for name in ("metrics.json", "epochs.csv", "samples.md"):
            tracker.log_artifact(Path(reports) / name)
        tracker.log_artifact(Path(out).with_suffix(".json"))
        print(
            f"pretrain: validation perplexity {metrics['validation_perplexity']:.2f}"
            + (
                f" (per word {metrics['validation_word_perplexity']:.1f})"
                if "validation_word_perplexity" in metrics
                else ""
            ),
            file=sys.stderr,
        )
        return metrics


def variants_cell_stage(
    params: Params, pos: str, merge: str, seed: int, cells_dir: str = "data/variants"
) -> dict:
    from tinytf.pretrain import pretrain
    from tinytf.tracking import params_hash
    from tinytf.variants import cell_key, cell_params, write_cell

    cell = cell_params(params, pos, merge, seed)
    key = cell_key(pos, merge, seed)
    logged = _stage_params(cell, "model", "pretrain")
    with stage_run("variants", logged, params.base.experiment, run_name=f"variants-{key}") as tracker:
        tracker.set_tags({"tinytf.cell": key})
        result = pretrain(
            cell.model,
            cell.pretrain,
            seed,
            params_hash=params_hash(logged),
            callbacks=[TrackerCallback(tracker)],
        )
        metrics = {k: v for k, v in result.final.items()}
        metrics["samples"] = {
            s["name"]: {"loss": s["loss"], "perplexity": s["perplexity"]} for s in result.samples
        }
        write_cell(Path(cells_dir) / f"{key}.json", pos, merge, seed, metrics)
        tracker.log_metrics(
            {f"sample_{k}_perplexity": v["perplexity"] for k, v in metrics["samples"].items()}
        )
        return metrics


def variants_table_stage(
    params: Params, cells_dir: str = "data/variants", report_dir: str = "reports/variants"
) -> None:
    from tinytf.variants import summarize, write_summary

    with stage_run("variants_table", _stage_params(params, "variants"), params.base.experiment) as tracker:
        cells = summarize(params, cells_dir)
        write_summary(cells, report_dir, len(params.variants.seeds), params.variants.steps)
        tracker.log_artifact(Path(report_dir) / "variants.md")
        tracker.log_artifact(Path(report_dir) / "cells.csv")


STAGES = {
    "prepare": prepare_stage,
    "tokenize": tokenize_stage,
    "pretrain": pretrain_stage,
    "variants-table": variants_table_stage,
}
