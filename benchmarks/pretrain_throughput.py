"""Pretraining throughput: tinytf's training step, as the `pretrain` stage runs it but for the
allocator (below), against the seed lab's `nn.TransformerEncoder` model in eager fp32 (what a
user of the seed lab has).

Both sides do the same work: the same shape, dropout, batches (real corpus tokens when
`data/tokens` exists, else uniform random ids), AdamW with the stage's weight decay and
gradient clipping, the loss in fp32. tinytf runs `tinytf.train.loop.train_step` with the
runtime the stage resolves from `pretrain:` (device, precision, compile; --precision and
--compile override). Two shapes: params.yaml's model and the seed lab's (d_model 200, 2 heads,
d_ff 200). Rounds alternate between the sides; figures are medians, the speedup a ratio of
medians. MFU is against this machine's measured matmul peak in each side's precision. The
last line is the headline: `speedup: <ratio>x ...` at the default shape.

By default both sides run on the C library's allocator, as a user of the seed lab has it. The
stages keep freed memory instead (tinytf/allocator.py): a process-wide setting, which speeds the
seed lab's eager loop far more than tinytf's compiled step (the loop's fp32 8000-way logits and
their gradient are faulted in anew every step). `--allocator keep` gives both sides the stages'
setting, the comparison for a seed-lab user who sets it too.

    python benchmarks/pretrain_throughput.py [--steps 10] [--rounds 3] [--shapes default,seed-lab]
                                             [--allocator default|keep]
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from timing import (
    benchmark_parser,
    device_name,
    matmul_peak,
    median,
    timed_rounds,
    train_flops_per_token,
    vocabulary,
    warm_up,
)

from tinytf.allocator import keep_freed_memory
from tinytf.config import load_params
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.train import lm
from tinytf.train.loop import build_optimizer, train_step
from tinytf.train.pretrain import BlockSource, epoch_steps, lm_step_loss, loop_config, step_tokens
from tinytf.train.runtime import resolve_runtime, seed_everything

SEED_LAB_SHAPE = {"d_model": 200, "n_head": 2, "d_ff": 200}


def corpus(vocab: int, path: Path = Path("data/tokens/corpus/train.npy")) -> tuple[np.ndarray, str]:
    if path.exists():
        return np.load(path, mmap_mode="r"), f"corpus tokens from {path}"
    ids = np.random.default_rng(0).integers(5, vocab, 2_000_000).astype(np.uint16)
    return ids, "uniform random ids (no data/tokens: run `dvc repro tokenize` for the real corpus)"


def stage_inputs(params) -> tuple[int, np.ndarray, str, int]:
    """(vocabulary, corpus tokens, where they came from, the stage's optimizer steps per epoch)."""
    vocab = vocabulary(params)
    tokens, where = corpus(vocab)
    return vocab, tokens, where, epoch_steps(params.pretrain, len(tokens), params.model.block_size)[0]


def tinytf_step(model_params, p, vocab, tokens, steps_per_epoch, precision, compile_mode):
    seed_everything(0)
    model = TinyTransformer(model_config(model_params, vocab, "causal", 0))
    runtime = resolve_runtime(p.device, precision or p.precision, compile_mode, steps_per_epoch * p.epochs)
    model.to(runtime.device).train()
    objective = lm.Objective("causal", vocab, 0)
    source = BlockSource(tokens, objective, model.config.block_size, p.batch_size, 1)
    step_loss = lm_step_loss(model, runtime)
    cfg = loop_config(p, steps_per_epoch, step_tokens(p, model.config.block_size))
    optimizer = build_optimizer(model, cfg)

    def loss_fn(batch):
        x, y = (t.to(runtime.device, non_blocking=True) for t in batch)
        return step_loss(x, y)

    return model, runtime, lambda: train_step(model, optimizer, source, loss_fn, cfg, runtime)


def seed_lab_step(model_params, p, vocab, tokens, device):
    """The seed lab's loop: nn.TransformerEncoder model, eager fp32, torch's default AdamW."""
    seed_everything(0)
    lab = dataclasses.replace(model_params, arch="torch_encoder")
    model = TinyTransformer(model_config(lab, vocab, "causal", 0)).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=p.lr, weight_decay=p.weight_decay)
    source = BlockSource(tokens, lm.Objective("causal", vocab, 0), model.config.block_size, p.batch_size, 1)

    def step():
        for _ in range(p.grad_accum):
            x, y = (t.to(device) for t in source.next_batch())
            logits = model.forward_lm(x)
            loss = F.cross_entropy(logits.view(-1, vocab), y.reshape(-1)) / p.grad_accum
            loss.backward()
        float(loss.detach())  # the host sync our step has too; detach: a scalar of a grad tensor warns
        torch.nn.utils.clip_grad_norm_(model.parameters(), p.grad_clip)
        optimizer.step()
        optimizer.zero_grad()

    return step


def set_allocator(choice: str) -> str:
    """The allocator of this process, so of both sides: the C library's own, or with `keep` the
    stages' setting; returns what it is, for the output."""
    if choice != "keep":
        return "the C library's default"
    return keep_freed_memory("keep")  # the flag wins over an exported TINYTF_ALLOCATOR


def main() -> None:
    parser = benchmark_parser(__doc__, 10, "timed steps per round and side")
    parser.add_argument("--shapes", default="seed-lab,default", help="comma list of: default, seed-lab")
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], help="override pretrain.precision")
    parser.add_argument("--compile", choices=["auto", "on", "off"], help="override pretrain.compile")
    parser.add_argument("--allocator", choices=["default", "keep"], default="default",
                        help="for both sides, default: the C library's own; keep: glibc's malloc keeps freed "
                             "memory, as the pipeline's stages set it (tinytf/allocator.py; no effect without glibc)")  # fmt: skip
    args = parser.parse_args()
    allocator = set_allocator(args.allocator)  # before the first tensor

    params = load_params(args.params)
    p = params.pretrain
    vocab, tokens, where, steps_per_epoch = stage_inputs(params)
    block = params.model.block_size
    compile_mode = {"on": True, "off": False}.get(args.compile, p.compile)
    print(
        f"tokens: {where}; vocab {vocab}, block {block}, batch {p.batch_size}; the stage plans {steps_per_epoch * p.epochs} steps"
    )
    print(f"allocator, both sides: {allocator}")
    kept = ", both sides keeping freed memory" if allocator.startswith("kept") else ""
    peaks = None
    headline = ""
    for shape in args.shapes.split(","):
        model_params = (
            params.model if shape == "default" else dataclasses.replace(params.model, **SEED_LAB_SHAPE)
        )
        ours, runtime, ours_step = tinytf_step(
            model_params, p, vocab, tokens, steps_per_epoch, args.precision, compile_mode
        )
        if peaks is None:
            peaks = {dt: matmul_peak(runtime.device, dt) for dt in (torch.float32, torch.bfloat16)}
            print(f"matmul peak on {runtime.device} ({device_name(runtime.device)}): "
                  f"fp32 {peaks[torch.float32]:,.0f} GFLOP/s, bf16 {peaks[torch.bfloat16]:,.0f} GFLOP/s")  # fmt: skip
        steps = {"tinytf": ours_step, "lab": seed_lab_step(model_params, p, vocab, tokens, runtime.device)}
        first = warm_up(steps, 3, runtime.device)
        names = {  # after the warm-up: a compile that failed there turned `compile` off, and the line says so
            "tinytf": f"tinytf ({runtime.describe()})",
            "lab": "seed lab (nn.TransformerEncoder, eager fp32)",
        }
        per_step = {name: step_tokens(p, block) for name in steps}
        rates = timed_rounds(steps, per_step, args.steps, args.rounds, runtime.device)
        c = ours.config
        flops = train_flops_per_token(ours, ours.lm_head, ours.config.block_size)
        print(f"\nshape {shape}: d_model={c.d_model} n_layer={c.n_layer} n_head={c.n_head} d_ff={c.d_ff} "
              f"dropout={c.dropout}; {flops / 1e6:.1f} MFLOP per training token")  # fmt: skip
        for name, values in rates.items():
            dtype = torch.bfloat16 if name == "tinytf" and runtime.precision == "bf16" else torch.float32
            mfu = median(values) * flops / 1e9 / peaks[dtype]
            print(f"  {names[name]:58s} {median(values):9,.0f} tokens/s  MFU {mfu:5.1%} of the "
                  f"{'bf16' if dtype == torch.bfloat16 else 'fp32'} peak  (rounds "
                  + ", ".join(f"{v:,.0f}" for v in values) + f"; first 3 steps {first[name]:.1f} s)")  # fmt: skip
        ratio = median(rates["tinytf"]) / median(rates["lab"])
        print(f"  ratio tinytf / seed lab: {ratio:.2f}x")
        if shape == "default" or not headline:
            headline = (f"speedup: {ratio:.2f}x tinytf over the seed lab's nn.TransformerEncoder (eager fp32), "
                        f"{shape} shape, {median(rates['tinytf']):,.0f} vs {median(rates['lab']):,.0f} training "
                        f"tokens/s on {runtime.device}{kept}")  # fmt: skip
    print(headline)


if __name__ == "__main__":
    sys.exit(main())
