"""Stage entry points: validated params in, core function called, outputs written, run logged.

Each function here is what one DVC stage (and the matching `tinytf` subcommand) does. They
take a validated `Params`; the console script and `stages/*.py` handle argument parsing
and turn `TinyTFError` into a one-line message with exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tinytf.config import Params, to_dict
from tinytf.io import write_json, write_text
from tinytf.tracking import TrackerCallback, stage_run


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
    group = params_hash(_stage_params(params, "variants"))
    with stage_run("variants", logged, params.base.experiment, f"variants-{key}", group_key=group) as tracker:
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


def finetune_stage(params: Params, report_dir: str = "reports/finetune") -> dict:
    from tinytf.finetune import run_finetune
    from tinytf.plots import plot_finetune_curves

    logged = _stage_params(params, "finetune")
    logged["tokenize"] = {"max_length": params.tokenize.max_length}
    with stage_run("finetune", logged, params.base.experiment) as tracker:

        def track(arm: str, seed: int):
            child = {"finetune": {"arm": arm, "seed": seed}}
            return stage_run(
                "finetune", child, params.base.experiment, f"finetune-{arm}-seed{seed}", nested=True
            )

        curves, summary = run_finetune(params.finetune, params.tokenize.max_length, track=track)
        report = Path(report_dir)
        write_text(report / "curves.csv", curves.to_csv(index=False))
        write_json(report / "summary.json", summary)
        plot_finetune_curves(curves, report / "curves.png")
        for arm, values in summary["arms"].items():
            tracker.log_metrics(
                {
                    f"{arm}_test_accuracy_mean": values["test_accuracy_mean"],
                    f"{arm}_test_accuracy_std": values["test_accuracy_std"],
                }
            )
        for name in ("curves.csv", "summary.json", "curves.png"):
            tracker.log_artifact(report / name)
        for arm, values in summary["arms"].items():
            print(
                f"finetune {arm}: test accuracy {values['test_accuracy_mean']:.4f} "
                f"± {values['test_accuracy_std']:.4f}",
                file=sys.stderr,
            )
        return summary


def grid_cell_stage(
    params: Params, optimizer: str, lr: float, batch_size: int, epochs: int, out: str | None = None
) -> dict:
    from tinytf.checkpoint import save_model
    from tinytf.classify import SentimentData, build_classifier, classifier_config, train_classifier
    from tinytf.grid import cell_key
    from tinytf.runtime import resolve_runtime
    from tinytf.tracking import params_hash

    g = params.grid
    key = cell_key(optimizer, lr, batch_size, epochs)
    cell = {"optimizer": optimizer, "lr": lr, "batch_size": batch_size, "epochs": epochs}
    logged = {
        "grid": {**cell, "init": g.init, "seed": g.seed, "weight_decay": g.weight_decay},
        "tokenize": {"max_length": params.tokenize.max_length},
    }
    group = params_hash(_stage_params(params, "grid"))
    with stage_run("grid", logged, params.base.experiment, f"grid-{key}", group_key=group) as tracker:
        data = SentimentData.load()
        pretrained = "data/models/pretrained.pt"
        model = build_classifier(
            g.init,
            classifier_config(pretrained, len(data.classes), params.finetune.dropout),
            pretrained,
            g.seed,
        )
        runtime = resolve_runtime(params.finetune.device, params.finetune.precision, False, 0)
        run = train_classifier(
            model,
            data,
            init=g.init,
            optimizer=optimizer,
            lr=lr,
            batch_size=batch_size,
            epochs=epochs,
            max_length=params.tokenize.max_length,
            seed=g.seed,
            runtime=runtime,
            weight_decay=g.weight_decay,
            warmup_ratio=params.finetune.warmup_ratio,
            callbacks=[TrackerCallback(tracker)],
            desc=f"grid {key}",
        )
        final = {k: v for k, v in run.history[-1].items() if k not in ("epoch", "step")}
        # <stem>.pt + <stem>.json are the model (weights, config); <stem>.result.json the cell's result.
        # Suffixes are appended, not swapped: the stem holds the lr's dot ("lr0.001").
        stem = out or f"data/grid/{key}"
        checkpoint = Path(f"{stem}.pt")
        save_model(checkpoint, run.model)
        write_json(
            Path(f"{stem}.result.json"),
            {"cell": cell, "history": run.history, "final": final, "checkpoint": checkpoint.name},
        )
        print(f"grid {key}: validation accuracy {final['validation_accuracy']:.4f}", file=sys.stderr)
        return final


def evaluate_stage(params: Params, grid_dir: str = "data/grid", report_dir: str = "reports") -> dict:
    from tinytf.checkpoint import load_model
    from tinytf.classify import SentimentData, evaluate_test_split
    from tinytf.evaluation import classification_report
    from tinytf.grid import best_cell, load_cells
    from tinytf.runtime import resolve_runtime

    with stage_run("evaluate", _stage_params(params, "grid", "evaluate"), params.base.experiment) as tracker:
        table = load_cells(params.grid, grid_dir)
        best = best_cell(table)
        checkpoint = Path(grid_dir) / best["checkpoint"]
        model = load_model(checkpoint)
        data = SentimentData.load()
        runtime = resolve_runtime(params.finetune.device, params.finetune.precision, False, 0)
        test = evaluate_test_split(model, data, params.tokenize.max_length, runtime)
        report = classification_report(
            test["predictions"],
            test["labels"],
            data.classes,
            params.evaluate.bootstrap_resamples,
            params.base.seed,
        )
        finetune = json.loads(Path(report_dir, "finetune", "summary.json").read_text())
        metrics = {
            "test_accuracy": report["accuracy"],
            "test_accuracy_ci95": report["accuracy_ci95"],
            "test_macro_f1": report["macro_f1"],
            "best": {
                k: (v.item() if hasattr(v, "item") else v)
                for k, v in best[
                    ["optimizer", "lr", "batch_size", "epochs", "validation_accuracy", "validation_loss"]
                ].items()
            },
            "pretrained_vs_scratch": {
                arm: {"mean": v["test_accuracy_mean"], "std": v["test_accuracy_std"]}
                for arm, v in finetune["arms"].items()
            },
        }
        if "pretrained_vs_scratch" in finetune:
            metrics["pretrained_vs_scratch"]["paired_test"] = finetune["pretrained_vs_scratch"]
        write_json(Path(report_dir) / "metrics.json", metrics)
        write_json(Path(report_dir) / "evaluate" / "test_report.json", report)
        write_text(Path(report_dir) / "evaluate" / "grid.csv", table.to_csv(index=False))
        tracker.log_metrics(
            {
                "test_accuracy": report["accuracy"],
                "test_accuracy_ci_low": report["accuracy_ci95"][0],
                "test_accuracy_ci_high": report["accuracy_ci95"][1],
                "test_macro_f1": report["macro_f1"],
            }
        )
        tracker.set_tags({"tinytf.best_cell": str(best["key"])})
        tracker.log_artifact(Path(report_dir) / "metrics.json")
        tracker.log_artifact(Path(report_dir) / "evaluate" / "test_report.json")
        _register_champion(tracker, checkpoint, params.evaluate.registry_name)
        low, high = report["accuracy_ci95"]
        print(
            f"evaluate: best cell {best['key']} (validation {best['validation_accuracy']:.4f}); "
            f"test accuracy {report['accuracy']:.4f} [{low:.4f}, {high:.4f}]",
            file=sys.stderr,
        )
        return metrics


def _register_champion(tracker, checkpoint: Path, name: str) -> None:
    """Log the checkpoint (state_dict + config JSON) and register it with alias `champion`."""

    def register():
        import mlflow

        tracker.log_artifact(checkpoint, "model")
        tracker.log_artifact(checkpoint.with_suffix(".json"), "model")
        run = mlflow.active_run()
        client = mlflow.MlflowClient()
        try:
            client.get_registered_model(name)
        except Exception:
            client.create_registered_model(name, description="tinytf sentiment classifier: best grid cell")
        version = client.create_model_version(name, f"{run.info.artifact_uri}/model", run.info.run_id)
        client.set_registered_model_alias(name, "champion", version.version)
        print(f"registered {name} version {version.version} as @champion", file=sys.stderr)

    tracker._call("register_model", register)


def probes_stage(params: Params, report_dir: str = "reports/probes") -> None:
    from tinytf.probes import probes_markdown, run_probes

    p = params.probes
    with stage_run("probes", _stage_params(params, "probes"), params.base.experiment) as tracker:
        table = run_probes(seed=p.seed, n=p.n, d=p.d, scale=p.scale, tol=p.tolerance)
        out = Path(report_dir)
        write_text(out / "probes.csv", table.to_csv(index=False))
        write_text(out / "probes.md", probes_markdown(table))
        passed = int(table["pass"].sum())
        tracker.log_metrics(
            {
                "probes_passed": passed,
                "probes_total": len(table),
                "max_weight_error": float(table["weight_err"].max()),
            }
        )
        tracker.log_artifact(out / "probes.md")
        print(f"probes: {passed}/{len(table)} constructions within tolerance {p.tolerance}", file=sys.stderr)


def complexity_stage(params: Params, report_dir: str = "reports/complexity") -> None:
    from tinytf.complexity import complexity_markdown, fit_exponents, measure, plot_loglog

    c = params.complexity
    with stage_run("complexity", _stage_params(params, "complexity"), params.base.experiment) as tracker:
        measured = measure(lengths=tuple(c.lengths), hidden_sizes=tuple(c.hidden_sizes), batch=c.batch,
                           heads=c.heads, repeats=c.repeats, device=c.device, fixed_length=c.fixed_length,
                           seed=params.base.seed)  # fmt: skip
        fits = fit_exponents(measured)
        out = Path(report_dir)
        write_text(out / "measurements.csv", measured.to_csv(index=False))
        write_text(out / "fits.csv", fits.to_csv(index=False))
        write_text(out / "complexity.md", complexity_markdown(measured, fits))
        plot_loglog(measured, fits, out / "attention_cost.png")
        self_length = fits[(fits["variable"] == "length") & (fits["kind"] == "encoder_self")]
        if not self_length.empty:
            tracker.log_metrics(
                {
                    "self_attention_time_exponent": float(self_length["time_exponent"].median()),
                    "self_attention_memory_exponent": float(self_length["memory_exponent"].median()),
                }
            )
        for name in ("complexity.md", "attention_cost.png", "fits.csv"):
            tracker.log_artifact(out / name)


def report_stage(params: Params) -> None:
    from tinytf.report import build_report

    with stage_run("report", _stage_params(params), params.base.experiment) as tracker:
        written = build_report(params)
        for path in written:
            if path.suffix in (".md", ".csv", ".png"):
                tracker.log_artifact(
                    path, f"reports/{path.parent.name}" if path.parent.name != "reports" else "reports"
                )
        print(f"report: wrote {len(written)} files; start at reports/README.md", file=sys.stderr)


STAGES = {
    "prepare": prepare_stage,
    "tokenize": tokenize_stage,
    "pretrain": pretrain_stage,
    "variants-table": variants_table_stage,
    "finetune": finetune_stage,
    "evaluate": evaluate_stage,
    "probes": probes_stage,
    "complexity": complexity_stage,
    "report": report_stage,
}
