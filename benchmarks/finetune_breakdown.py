"""Where one fine-tuning run's time goes: a `finetune` run as a worker runs it (one thread on a
CPU, the stage's own `Trainer.train`), split into its parts by timing the functions it calls:

    data         the seed's label subset and its train loader
    build        the classifier: config, init, the pretrained body's weights
    training     the optimizer steps (what is left of `train_classifier`)
    validation   the validation passes that choose the best epoch, and the copy of its weights
    test         the test pass
    rows         the run's prediction rows for data/predictions/finetune.parquet
    tracking     replaying the run's events into a nested MLflow run (the stage's process)

Runs from the repository root on data/tokens (after `dvc repro tokenize`), from a randomly
initialised "pretrained" body of params.yaml's shape (its weights do not change the time).
Each run is repeated; the first pays for the warm-up as a worker's first run does, the figures
are the last repeat's. No peer: the headline is the non-training share of the run. Printed
beside it, not in it: a spawned worker's start-up (a fresh interpreter importing the stage's
modules), paid once per worker and shared by all its runs.

    python benchmarks/finetune_breakdown.py [--labels 1000] [--repeats 2] [--tracking] [--eval-batch N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from timing import record, vocabulary

import tinytf.train.classify as classify
import tinytf.train.finetune_trainer as finetune
from tinytf.model.architecture import model_config
from tinytf.model.checkpoint import save_model
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.system.allocator import keep_freed_memory
from tinytf.train.runtime import Runtime
from tinytf.train.workers import one_thread

PARTS = ("data", "build", "training", "validation", "test", "rows", "tracking")


class Clock:
    """Seconds per part: `timed(part, fn)` wraps fn so its calls add to that part, and subtract
    from the part of an enclosing timed call (a validation pass inside `train_classifier`); a
    part timed `whole` keeps what it calls (the test pass's own `predict`)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.stack: list[str] = []
        self.whole: set[str] = set()

    def timed(self, part: str, fn, whole: bool = False):
        if whole:
            self.whole.add(part)

        def wrapper(*args, **kwargs):
            if self.stack and self.stack[-1] in self.whole:
                return fn(*args, **kwargs)
            began = time.perf_counter()
            self.stack.append(part)
            try:
                return fn(*args, **kwargs)
            finally:
                self.stack.pop()
                spent = time.perf_counter() - began
                self.seconds[part] += spent
                if self.stack:
                    self.seconds[self.stack[-1]] -= spent

        return wrapper


def instrument(clock: Clock) -> None:
    """Wrap the functions a run calls (the module attributes `Trainer.train` looks up)."""
    finetune.subset = clock.timed("data", finetune.subset)
    finetune.Trainer.build = clock.timed("build", finetune.Trainer.build)
    finetune.train_classifier = clock.timed("training", finetune.train_classifier)
    classify.sentiment_loader = clock.timed("data", classify.sentiment_loader)
    classify.predict = clock.timed("validation", classify.predict)
    classify.BestEpoch.update = clock.timed("validation", classify.BestEpoch.update)
    finetune.evaluate_test_split = clock.timed("test", finetune.evaluate_test_split, whole=True)
    finetune.prediction_rows = clock.timed("rows", finetune.prediction_rows)


def startup_seconds() -> float:
    """A fresh interpreter importing what a worker imports before its first run."""
    code = "import tinytf.train.finetune, tinytf.tracking.runs, tinytf.analysis.evaluation"
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - began


def tracking_seconds(out: dict, spec, folder: Path) -> float:
    """The stage's replay of one run's events into a nested MLflow run (a sqlite store)."""
    # a store of its own, tracking on whatever the caller's environment says
    os.environ.update(MLFLOW_TRACKING_URI=f"sqlite:///{folder}/mlflow.db", TINYTF_TRACKING="1")
    from tinytf.tracking.runs import TrackerCallback, stage_run

    with stage_run("finetune", {}):  # the stage's own run, open before its first child
        began = time.perf_counter()
        with stage_run("finetune", {"finetune": spec.tags()}, run_name="bench", nested=True) as run:
            callback = TrackerCallback(run)
            callback.replay(out.events)
            callback.on_end({"test_accuracy": 0.0, "test_loss": 0.0})
        return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--labels", type=int, default=1000, help="the run's label count (0 = all)")
    parser.add_argument("--start", default="pretrained", choices=("pretrained", "scratch"))
    parser.add_argument("--repeats", type=int, default=2, help="the same run again; the last is reported")
    parser.add_argument("--tracking", action="store_true", help="also time the MLflow replay")
    parser.add_argument(
        "--eval-batch", type=int, help="texts per validation/test batch instead of the runtime's choice"
    )
    args = parser.parse_args()
    if args.eval_batch:
        Runtime.inference_batch = property(lambda self: args.eval_batch)
    keep_freed_memory()  # as a finetune worker does
    params = load_params(args.params)
    f = params.finetune
    if not finetune.SentimentData.folder("data").exists():
        print(
            "finetune_breakdown: data/tokens/sentiment not found; run `dvc repro tokenize`", file=sys.stderr
        )
        return 2
    clock = Clock()
    instrument(clock)
    with tempfile.TemporaryDirectory() as tmp:
        config = model_config(params.model, vocabulary(params), params.pretrain.objective, params.base.seed)
        start = Path(tmp) / "pretrained.pt"
        save_model(start, TinyTransformer(config), stage="benchmark")
        trainer = finetune.Trainer(f, "data", params.tokenize.max_length, None)
        spec = finetune.RunSpec(
            args.start, args.labels, f.seeds[0], f.lrs[0], max(f.dropouts), start, "final"
        )
        with one_thread(trainer.runtime.device):
            for _ in range(args.repeats):
                clock.seconds.clear()
                began = time.perf_counter()
                out = trainer.train(spec)
                total = time.perf_counter() - began
        parts = dict(clock.seconds)
        if args.tracking:
            parts["tracking"] = tracking_seconds(out, spec, Path(tmp))
    steps = trainer.cost(spec)
    parts["other"] = total - sum(v for k, v in parts.items() if k != "tracking")
    whole = sum(parts.values())
    training = parts.get("training", 0.0)
    share = 1 - training / whole
    batch = trainer.runtime.inference_batch
    print(
        f"{spec.start} run, {args.labels or 'all'} labels, {steps} steps ({trainer.runtime.describe()}, "
        f"evaluation batch {batch}):"
    )
    for part in (*PARTS, "other"):
        if part in parts:
            print(f"  {part:<11} {parts[part]:8.3f} s  {100 * parts[part] / whole:5.1f} %")
    print(f"  {'whole':<11} {whole:8.3f} s; training {1000 * training / steps:.1f} ms a step")
    run_name = f"a {args.labels:,}-label" if args.labels else "an all-labels"
    headline = f"non-training share: {100 * share:.1f} % of {run_name} run ({whole:.1f} s)"
    startup = startup_seconds()
    print(f"  (once per worker: start-up {startup:.2f} s)")
    print(headline)
    figures = {
        "parts_s": parts,
        "whole_s": whole,
        "steps": steps,
        "non_training_share": share,
        "worker_startup_s": startup,
        "inference_batch": batch,
    }
    record("finetune_breakdown", headline, figures, args, trainer.runtime.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
