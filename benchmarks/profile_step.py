"""Where a pretraining step's time goes: torch.profiler over a few steps of tinytf's step and the
nanoGPT-style step (benchmarks/nanogpt_peer.py) at one shape of pretrain_throughput.py, after the
same warm-up. Prints, for each side, the kernels (CUDA) or operators (CPU) that take the most
device time, and the step's total, so a gap between the two sides can be read kernel by kernel
before anything is changed. Nothing is recorded: the throughput benchmark is the judge.

    python benchmarks/profile_step.py [--shape gpu] [--steps 5] [--rows 25]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from pretrain_throughput import SHAPE_VOCAB, SHAPES, build_sides, stage_inputs
from timing import sync, warm_up
from torch.profiler import ProfilerActivity, profile

from tinytf.params.config import load_params


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--shape", default="gpu", choices=sorted(SHAPES))
    parser.add_argument("--steps", type=int, default=5, help="profiled steps per side, after 3 warm-up steps")
    parser.add_argument("--rows", type=int, default=25, help="kernels or operators listed per side")
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], default=None)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    params = load_params(args.params)
    vocab, tokens, _, steps_per_epoch = stage_inputs(params)
    model_fields, pretrain_fields = SHAPES[args.shape]
    model_params = dataclasses.replace(params.model, **model_fields)
    p = dataclasses.replace(params.pretrain, **pretrain_fields)
    setup = {
        "vocab": max(vocab, SHAPE_VOCAB.get(args.shape) or 0),
        "tokens": tokens,
        "steps_per_epoch": steps_per_epoch,
        "compile_mode": p.compile,
    }
    sides = argparse.Namespace(nanogpt=True, precision=args.precision)
    _, runtime, steps, _ = build_sides(model_params, p, setup, sides)
    steps.pop("lab")  # the eager fp32 course lab is not the peer a profile compares with
    warm_up(steps, 3, runtime.device)
    cuda = runtime.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    print(f"shape {args.shape} on {runtime.device} ({runtime.describe()}), {args.steps} steps per side")
    for name, step in steps.items():
        with profile(activities=activities) as prof:
            for _ in range(args.steps):
                step()
            sync(runtime.device)
        events = prof.key_averages()
        total = sum(getattr(e, key) for e in events) / args.steps / 1e3
        print(f"\n== {name}: {total:.1f} ms of {'device' if cuda else 'CPU'} time a step (self times summed)")
        print(
            events.table(
                sort_by=key.replace("device", "cuda") if cuda else key,
                row_limit=args.rows,
                max_name_column_width=70,
            )
        )


if __name__ == "__main__":
    sys.exit(main())
