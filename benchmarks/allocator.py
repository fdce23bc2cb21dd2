"""The stages' allocator setting (tinytf.process.allocator: freed memory kept) against the C library's
default, on the eager work where it matters: a language-model evaluation pass as `pretrain`,
`variants` and `checks` run it, and a variants cell's eager training step.

An allocator is a process setting, so each side runs in its own process (`TINYTF_ALLOCATOR=keep`
or `default`), started in turn round after round; each times one evaluation pass over the
validation tokens (their first 100k: real corpus tokens when `data/tokens` exists, else uniform
random ids) and `--steps` training steps after a warm-up, and reports its page faults and peak
memory. Figures are medians over rounds, the speedup a ratio of medians; the last line is the
headline: `speedup: <ratio>x ...` for the evaluation pass. Compiled pretraining steps are not
measured here: `pretrain_throughput.py --allocator keep` gives both of its sides the setting.

    python benchmarks/allocator.py [--steps 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from timing import benchmark_parser, median, record, vocabulary

MODES = ("default", "keep")
VALIDATION = Path("data/tokens/corpus/validation.npy")
EVAL_TOKENS = 100_000  # PTB validation is 94.8k; uniform random ids (no data/tokens) are cut here


def measure(params_file: str, steps: int) -> dict:
    """In a worker: the allocator set as a stage sets it, then the timed evaluation pass and steps."""
    from tinytf.process.allocator import keep_freed_memory

    setting = keep_freed_memory()
    import torch
    from pretrain_throughput import corpus, tinytf_step

    from tinytf.params.config import load_params
    from tinytf.train import lm
    from tinytf.train.variants import cell_params

    params = load_params(params_file)
    vocab = vocabulary(params)
    model_params, p = cell_params(params.model, params.pretrain, params.variants, "learned", "concat")
    model, runtime, step = tinytf_step(model_params, p, vocab, corpus(vocab)[0], steps, None, False)
    tokens, block = corpus(vocab, VALIDATION)[0], model.config.block_size
    objective = lm.Objective("causal", vocab, 0)

    def evaluate(limit: int = EVAL_TOKENS) -> None:
        lm.evaluate(model, tokens, objective, block, params.pretrain.batch_size, runtime, limit)

    evaluate(8 * block * params.pretrain.batch_size)  # warm-up: kernels, the first allocations
    for _ in range(2):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    started = time.perf_counter()
    evaluate()
    eval_s = time.perf_counter() - started
    eval_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    started = time.perf_counter()
    for _ in range(steps):
        step()
    step_ms = (time.perf_counter() - started) / steps * 1e3
    return {
        "setting": setting,
        "eval_s": eval_s,
        "eval_faults": eval_faults,
        "step_ms": step_ms,
        "tokens": min(len(tokens), EVAL_TOKENS),
        "batch": p.batch_size,
        "runtime": runtime.describe(),
        "device": str(runtime.device),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "threads": torch.get_num_threads(),
    }


def run_worker(mode: str, params_file: str, steps: int) -> dict:
    env = {**os.environ, "TINYTF_ALLOCATOR": mode}
    command = [sys.executable, __file__, "--worker", "--params", params_file, "--steps", str(steps)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"allocator benchmark: the {mode} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = benchmark_parser(__doc__, 10, "timed eager training steps per worker")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one side, run by main()
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.params, args.steps)))
        return
    results: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for round_ in range(args.rounds):
        for mode in MODES:
            results[mode].append(run_worker(mode, args.params, args.steps))
            print(
                f"round {round_ + 1} {mode}: {results[mode][-1]['eval_s']:.2f} s", file=sys.stderr, flush=True
            )
    first = results["keep"][0]
    print(
        f"{first['runtime']}, {first['threads']} threads; evaluation pass over {first['tokens']:,} "
        f"validation tokens, eager steps of batch {first['batch']} (a variants cell)"
    )
    figures = {}
    for mode in MODES:
        rows = results[mode]
        figures[mode] = {
            key: median([r[key] for r in rows]) for key in ("eval_s", "eval_faults", "step_ms", "peak_mb")
        }
        f = figures[mode]
        print(
            f"  {mode:8s} {rows[0]['setting']:45s} evaluation {f['eval_s']:5.2f} s "
            f"({f['eval_faults']:>9,.0f} page faults)  step {f['step_ms']:6.1f} ms  peak {f['peak_mb']:,.0f} MB  "
            f"(rounds " + ", ".join(f"{r['eval_s']:.2f}" for r in rows) + ")"
        )
    keep, default = figures["keep"], figures["default"]
    print(f"  eager step: {default['step_ms'] / keep['step_ms']:.2f}x with freed memory kept")
    headline = (
        f"speedup: {default['eval_s'] / keep['eval_s']:.2f}x an LM evaluation pass with freed memory kept "
        f"(TINYTF_ALLOCATOR=keep, the stages' setting) over the C library's default, "
        f"{keep['eval_s']:.2f} vs {default['eval_s']:.2f} s"
    )
    print(headline)
    figures = {
        "ratio": default["eval_s"] / keep["eval_s"],
        "step_ratio": default["step_ms"] / keep["step_ms"],
        "runtime": first["runtime"],
        "threads": first["threads"],
        **figures,
    }
    record("allocator", headline, figures, args, first["device"])


if __name__ == "__main__":
    sys.exit(main())
