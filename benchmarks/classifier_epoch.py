"""One epoch of the classifier as a `finetune` run trains it: `train_classifier` from a scratch
start on every train text of data/tokens, run from the repository root (the default data: 319
steps of 32), its validation pass included, on the device, precision and compile that
`finetune:` resolves, on one thread where that is a CPU (a `finetune` worker's setting: the stage
runs one worker a core). The speed issue's GPU target is this epoch: 24.8 s on an H100 and 24.7 s
on the 2-core CPU before the issue, host-bound at about 78 ms a step; it asks for at least 5x
faster on CUDA.

Each repeat builds a fresh model in the same process: the first pays for compiling and the
device's warm-up, as a stage's first run does; later ones run as the stage's later runs do.
Times are wall times with the device synchronised; nothing here is compared against a peer,
so read them next to the figures above, measured on the same kind of machine.

    python benchmarks/classifier_epoch.py [--params params.yaml] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import time

from timing import device_name, record, sync, vocabulary

from tinytf.data.sentiment import SentimentData
from tinytf.errors import DataError
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.system.allocator import keep_freed_memory
from tinytf.train.classify import ClassifierRecipe, planned_steps, train_classifier
from tinytf.train.finetune_trainer import finetune_runtime
from tinytf.train.runtime import seed_everything
from tinytf.train.workers import one_thread


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--repeats", type=int, default=2, help="epochs timed, each from a fresh model")
    args = parser.parse_args()
    keep_freed_memory()  # as a finetune worker does, before its first tensor
    params = load_params(args.params)
    f = params.finetune
    try:
        data = SentimentData.load("data")
    except DataError as exc:
        print(f"classifier_epoch: {exc}", file=sys.stderr)
        return 2
    steps = planned_steps(data, f.batch_size, 1)
    runtime = finetune_runtime(f, data)  # as the finetune stage resolves it
    print(
        f"{len(data.splits['train']):,} train texts, batch {f.batch_size}: {steps} steps an epoch; "
        f"{runtime.describe()} ({device_name(runtime.device)})"
    )
    seconds = []
    for repeat in range(args.repeats):
        seed_everything(repeat)
        # the pretrained checkpoint's config, as the stage reads it: pretraining's objective and seed
        config = model_config(
            params.model,
            vocabulary(params),
            params.pretrain.objective,
            params.base.seed,
            dropout=max(f.dropouts),
            n_classes=len(data.classes),
        )
        model = TinyTransformer(config)
        sync(runtime.device)
        began = time.perf_counter()
        with one_thread(runtime.device):  # a finetune worker's run on a CPU
            recipe = ClassifierRecipe(
                start="scratch",
                optimizer=f.optimizer,
                lr=f.lrs[0],
                batch_size=f.batch_size,
                epochs=1,
                max_length=params.tokenize.max_length,
                seed=repeat,
                weight_decay=f.weight_decay,
                warmup_ratio=f.warmup_ratio,
            )
            run = train_classifier(model, data, recipe, runtime, progress=False)
        sync(runtime.device)
        seconds.append(time.perf_counter() - began)
        accuracy = run.history[-1]["validation_accuracy"]
        print(
            f"  epoch {repeat + 1}: {seconds[-1]:.1f} s, {1000 * seconds[-1] / steps:.1f} ms a step "
            f"with the validation pass; validation accuracy {accuracy:.3f}"
        )
    later = f", then {min(seconds[1:]):.1f} s" if len(seconds) > 1 else ""
    headline = (
        f"epoch: {seconds[0]:.1f} s first{later}, {steps} steps on {runtime.device} (before the speed "
        f"issue: 24.8 s on an H100, 24.7 s on the 2-core CPU)"
    )
    print(headline)
    figures = {
        "first_s": seconds[0],
        "later_s": min(seconds[1:]) if len(seconds) > 1 else None,
        "epochs_s": seconds,
        "steps": steps,
        "runtime": runtime.describe(),
    }
    record("classifier_epoch", headline, figures, args, runtime.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
