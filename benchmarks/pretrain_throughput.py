"""Pretraining throughput: tinytf's training step, as the `pretrain` stage runs it but for the
allocator (below), against the course lab's `nn.TransformerEncoder` model in eager fp32 (what a
user of the course lab has).

Both sides do the same work: the same shape, dropout, batches (real corpus tokens when
`data/tokens` exists, else uniform random ids), AdamW with the stage's weight decay and
gradient clipping, the loss in fp32. tinytf runs `tinytf.train.step.train_step` with the
runtime the stage resolves from `pretrain:` (device, precision, compile; --precision and
--compile override). Shapes: params.yaml's model (default), the course lab's (d_model 200, 2
heads, d_ff 200) and, for GPUs, 6x384 (6 layers x 384 wide, d_ff 1536, block 256, batch 64) and
gpu (the GPU preset's model and pretrain sections and vocabulary, read from presets/gpu.yaml).
Rounds alternate between the sides; figures are medians, the speedup a ratio of medians. MFU is
against this machine's measured matmul peak in each side's precision. The last line is the
headline: `speedup: <ratio>x ...` at the default shape.

`--nanogpt` adds a third side to the same rounds: a nanoGPT-style step (benchmarks/nanogpt_peer.py)
on tinytf's runtime, the peer of the speed issue's GPU target, and prints tinytf's ratio to it.

By default both sides run on the C library's allocator, as a user of the course lab has it. The
stages keep freed memory instead (tinytf/system/allocator.py): a process-wide setting, which speeds the
course lab's eager loop far more than tinytf's compiled step (the loop's fp32 8000-way logits and
their gradient are faulted in anew every step). `--allocator keep` gives both sides the stages'
setting, the comparison for a seed-lab user who sets it too.

    python benchmarks/pretrain_throughput.py [--steps 10] [--rounds 3] [--shapes default,seed-lab,6x384,gpu]
                                             [--allocator default|keep] [--nanogpt]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from nanogpt_peer import matmul_parameters, nanogpt_step
from timing import (
    benchmark_parser,
    device_name,
    matmul_peak,
    median,
    record,
    timed_rounds,
    train_flops_per_token,
    training_flops,
    vocabulary,
    warm_up,
)

from tinytf.cli.presets import preset_values
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.system.allocator import keep_freed_memory
from tinytf.train import lm
from tinytf.train.loop import build_optimizer
from tinytf.train.pretrain import BlockSource, epoch_steps, lm_step_loss, loop_config, step_tokens
from tinytf.train.runtime import Runtime, resolve_runtime, seed_everything
from tinytf.train.step import train_step

# each shape: (model fields, pretrain fields) replaced in params.yaml's
SHAPES = {
    "default": ({}, {}),
    "seed-lab": ({"d_model": 200, "n_head": 2, "d_ff": 200}, {}),
    # the speed issue's GPU shape: 6 layers x 384 wide, block 256, batch 64
    "6x384": (
        {"d_model": 384, "n_layer": 6, "n_head": 6, "d_ff": 1536, "block_size": 256},
        {"batch_size": 64},
    ),
}
PRESETS = Path(__file__).resolve().parents[1] / "presets"


def preset_shape(name: str) -> tuple[dict, dict, int | None]:
    """(model fields, pretrain fields, vocabulary or None) of presets/NAME.yaml: the shape the
    preset's pretrain stage runs, read from the file so the two never drift apart."""
    values = preset_values(name, PRESETS)
    fields = {
        section: {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith(f"{section}.")}
        for section in ("model", "pretrain")
    }
    return fields["model"], fields["pretrain"], values.get("tokenize.vocab_size")


# the GPU preset's shape: 12 layers x 768, block 512, batch 64, its 32k vocabulary
_GPU_MODEL, _GPU_PRETRAIN, _GPU_VOCAB = preset_shape("gpu")
SHAPES["gpu"] = (_GPU_MODEL, _GPU_PRETRAIN)
SHAPE_VOCAB = {"gpu": _GPU_VOCAB}


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


def batches(tokens: np.ndarray, vocab: int, block: int, batch_size: int) -> BlockSource:
    """A side's own stream of the batches every side trains on: the same blocks in the same order."""
    return BlockSource(tokens, lm.Objective("causal", vocab, 0), block, batch_size, 1)


def tinytf_step(model_params, p, vocab, tokens, steps_per_epoch, precision, compile_mode):
    seed_everything(0)
    model = TinyTransformer(model_config(model_params, vocab, "causal", 0))
    runtime = resolve_runtime(p.device, precision or p.precision, compile_mode, steps_per_epoch * p.epochs)
    model.to(runtime.device).train()
    source = batches(tokens, vocab, model.config.block_size, p.batch_size)
    step_loss = lm_step_loss(model, runtime)
    cfg = loop_config(p, steps_per_epoch, step_tokens(p, model.config.block_size))
    optimizer = build_optimizer(model, cfg)

    def loss_fn(batch):
        x, y = (t.to(runtime.device, non_blocking=True) for t in batch)
        return step_loss(x, y)

    return model, runtime, lambda: train_step(model, optimizer, source, loss_fn, cfg, runtime)


def course_lab_step(model_params, p, vocab, tokens, device):
    """The course lab's loop: nn.TransformerEncoder model, eager fp32, torch's default AdamW."""
    seed_everything(0)
    lab = dataclasses.replace(model_params, arch="torch_encoder")
    model = TinyTransformer(model_config(lab, vocab, "causal", 0)).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=p.lr, weight_decay=p.weight_decay)
    source = batches(tokens, vocab, model.config.block_size, p.batch_size)

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


def shape_list(text: str) -> list[str]:
    shapes = text.split(",")
    unknown = [shape for shape in shapes if shape not in SHAPES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown shape '{unknown[0]}'; expected a comma list of: {', '.join(SHAPES)}"
        )
    return shapes


def parse_args() -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 10, "timed steps per round and side")
    parser.add_argument(
        "--shapes",
        type=shape_list,
        default=["seed-lab", "default"],
        help=f"comma list of: {', '.join(SHAPES)} (6x384: 6 layers x 384 wide, block 256, batch 64; "
        "gpu: presets/gpu.yaml's model, pretrain and vocabulary)",
    )
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], help="override pretrain.precision")
    parser.add_argument("--compile", choices=["auto", "on", "off"], help="override pretrain.compile")
    parser.add_argument(
        "--allocator",
        choices=["default", "keep"],
        default="default",
        help="for both sides, default: the C library's own; keep: glibc's malloc keeps freed "
        "memory, as the pipeline's stages set it (tinytf/system/allocator.py; no effect without glibc)",
    )
    parser.add_argument(
        "--nanogpt",
        action="store_true",
        help="also time a nanoGPT-style step (benchmarks/nanogpt_peer.py) in the same rounds, "
        "on tinytf's runtime, and print tinytf's ratio to it",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    allocator = set_allocator(args.allocator)  # before the first tensor
    params = load_params(args.params)
    p = params.pretrain
    vocab, tokens, where, steps_per_epoch = stage_inputs(params)
    print(
        f"tokens: {where}; vocab {vocab}, block {params.model.block_size}, batch {p.batch_size}; "
        f"the stage plans {steps_per_epoch * p.epochs} steps"
    )
    print(f"allocator, both sides: {allocator}")
    kept = ", both sides keeping freed memory" if allocator.startswith("kept") else ""
    compile_mode = {"on": True, "off": False}.get(args.compile, p.compile)
    setup = {
        "vocab": vocab,
        "tokens": tokens,
        "steps_per_epoch": steps_per_epoch,
        "compile_mode": compile_mode,
        "peaks": {},
    }
    headline = ""
    for shape in args.shapes:
        model_fields, pretrain_fields = SHAPES[shape]
        model_params = dataclasses.replace(params.model, **model_fields)
        # a preset's vocabulary sets the head's width; never below the tokens' own ids
        vocab = max(setup["vocab"], SHAPE_VOCAB.get(shape) or 0)
        rates, device = measure_shape(
            shape, model_params, dataclasses.replace(p, **pretrain_fields), {**setup, "vocab": vocab}, args
        )
        ratio = median(rates["tinytf"]) / median(rates["lab"])
        if shape == "default" or not headline:
            headline = (
                f"speedup: {ratio:.2f}x tinytf over the seed lab's nn.TransformerEncoder (eager fp32), "
                f"{shape} shape, {median(rates['tinytf']):,.0f} vs {median(rates['lab']):,.0f} training "
                f"tokens/s on {device}{kept}"
            )
    print(headline)
    # the last shape measured; the headline names its own shape
    figures = {
        "shape": shape,
        "ratio": ratio,
        **{f"{name}_tokens_per_s": median(v) for name, v in rates.items()},
    }
    record("pretrain_throughput", headline, figures, args, device)


def build_sides(model_params, p, setup: dict, args) -> tuple[TinyTransformer, Runtime, dict, dict]:
    """(tinytf's model, its runtime, each side's step, each side's training FLOPs a token) at one
    shape: tinytf, the course lab and, with --nanogpt, the nanoGPT-style peer."""
    vocab, tokens, block = setup["vocab"], setup["tokens"], model_params.block_size
    ours, runtime, ours_step = tinytf_step(
        model_params, p, vocab, tokens, setup["steps_per_epoch"], args.precision, setup["compile_mode"]
    )
    steps = {"tinytf": ours_step, "lab": course_lab_step(model_params, p, vocab, tokens, runtime.device)}
    flops = dict.fromkeys(steps, train_flops_per_token(ours, ours.lm_head, block))  # the same matmuls
    if args.nanogpt:
        source = batches(tokens, vocab, block, p.batch_size)
        peer, steps["nanogpt"] = nanogpt_step(
            ours.config, p.lr, p.weight_decay, p.grad_clip, p.grad_accum, source.next_batch, runtime
        )
        flops["nanogpt"] = training_flops(matmul_parameters(peer), ours.config, block)
    return ours, runtime, steps, flops


DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16"}


def measure_shape(
    shape: str, model_params, p, setup: dict, args
) -> tuple[dict[str, list[float]], torch.device]:
    """Alternating rounds of each side at one shape; prints its table and ratios, returns the rates."""
    ours, runtime, steps, flops = build_sides(model_params, p, setup, args)
    peaks, block = setup["peaks"], model_params.block_size
    if not peaks:
        # the bf16 peak only where the run computes in bf16: on a CPU without bf16 units torch's
        # reference GEMM takes minutes for it, and no figure is divided by it
        kinds = (torch.float32, torch.bfloat16) if runtime.precision == "bf16" else (torch.float32,)
        peaks.update({dt: matmul_peak(runtime.device, dt) for dt in kinds})
        shown = ", ".join(f"{DTYPE_NAMES[dt]} {peaks[dt]:,.0f} GFLOP/s" for dt in kinds)
        print(f"matmul peak on {runtime.device} ({device_name(runtime.device)}): {shown}")
    first = warm_up(steps, 3, runtime.device)
    names = {  # after the warm-up: a compile that failed there turned `compile` off, and the line says so
        "tinytf": f"tinytf ({runtime.describe()})",
        "lab": "seed lab (nn.TransformerEncoder, eager fp32)",
        "nanogpt": f"nanoGPT-style ({runtime.describe()})",
    }
    rates = timed_rounds(
        steps, {name: step_tokens(p, block) for name in steps}, args.steps, args.rounds, runtime.device
    )
    c = ours.config
    print(
        f"\nshape {shape}: d_model={c.d_model} n_layer={c.n_layer} n_head={c.n_head} d_ff={c.d_ff} "
        f"block={block} batch={p.batch_size} vocab={setup['vocab']} dropout={c.dropout}; {flops['tinytf'] / 1e6:.1f} MFLOP per training token"
    )
    for name, values in rates.items():
        dtype = torch.bfloat16 if name != "lab" and runtime.precision == "bf16" else torch.float32
        mfu = median(values) * flops[name] / 1e9 / peaks[dtype]
        print(
            f"  {names[name]:58s} {median(values):9,.0f} tokens/s  MFU {mfu:5.1%} of the "
            f"{'bf16' if dtype == torch.bfloat16 else 'fp32'} peak  (rounds "
            + ", ".join(f"{v:,.0f}" for v in values)
            + f"; first 3 steps {first[name]:.1f} s)"
        )
    for name, peer in (("lab", "seed lab"), ("nanogpt", "nanoGPT-style")):
        if name in rates:
            print(
                f"  ratio tinytf / {peer}, {shape} shape: {median(rates['tinytf']) / median(rates[name]):.2f}x"
            )
    return rates, runtime.device


if __name__ == "__main__":
    sys.exit(main())
