"""The LM head's loss: the `pretrain` stage's step against torch's chunked `F.linear_cross_entropy`.

The stage compiles the whole loss, forward and backward: the body, the LM head's (tokens x
vocabulary) logits in bf16, their fp32 log-softmax and the one-hot gradient. Where big matmuls
are cheap (a CPU with AMX), the log-softmax and its backward are a large share of the step under
torch.profiler. torch 2.13's
`F.linear_cross_entropy` with `LinearCrossEntropyOptions` is the library's answer to that
cost: it never materialises the logits, computing the loss and both gradients chunk by chunk of
tokens inside its forward. It cannot run inside a compiled graph (torch falls back to eager at
the op), so its side compiles the body only, as torch's documentation leaves it.

Both sides run the same model, batches, AdamW, clipping and precision from one seed, in one
process, in alternating rounds; figures are medians, the speedup the ratio of medians (below 1:
the chunked loss is slower). The first steps' losses are printed for both: the two compute the
same loss, up to rounding. The last line is the headline: `speedup: <ratio>x ...`.

    python benchmarks/lm_head_loss.py [--steps 10] [--rounds 3] [--chunk-rows N]
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from pretrain_throughput import batches, stage_inputs
from timing import benchmark_parser, device_name, median, record, timed_rounds

from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.train import lm
from tinytf.train.loop import build_optimizer
from tinytf.train.pretrain import lm_step_loss, loop_config, step_tokens
from tinytf.train.runtime import maybe_compile, resolve_runtime, seed_everything
from tinytf.train.step import train_step


def side(params, vocab, tokens, steps_per_epoch, chunked: torch.nn.LinearCrossEntropyOptions | None):
    """One training step function and its runtime; `chunked` None is the stage's loss."""
    p = params.pretrain
    seed_everything(0)
    model = TinyTransformer(model_config(params.model, vocab, "causal", 0))
    runtime = resolve_runtime(p.device, p.precision, p.compile, steps_per_epoch * p.epochs)
    model.to(runtime.device).train()
    source = batches(tokens, vocab, model.config.block_size, p.batch_size)
    cfg = loop_config(p, steps_per_epoch, step_tokens(p, model.config.block_size))
    optimizer = build_optimizer(model, cfg)
    if chunked is None:
        step_loss = lm_step_loss(model, runtime)
    else:
        body = maybe_compile(model.base, runtime)
        head = model.lm_head

        def step_loss(x, y):
            hidden = body(x).flatten(0, 1)
            return F.linear_cross_entropy(
                hidden,
                head.weight,
                y.flatten(),
                linear_bias=head.bias,
                ignore_index=lm.IGNORE,
                options=chunked,
            )

    def loss_fn(batch):
        return step_loss(*(t.to(runtime.device, non_blocking=True) for t in batch))

    return runtime, lambda: train_step(model, optimizer, source, loss_fn, cfg, runtime)


def main() -> None:
    parser = benchmark_parser(__doc__, 10, "timed steps per round and side")
    parser.add_argument(
        "--chunk-rows",
        type=int,
        default=0,
        help="tokens per chunk (default 0: torch's own choice, LinearCrossEntropyOptions())",
    )
    args = parser.parse_args()
    if not hasattr(F, "linear_cross_entropy"):
        sys.exit(f"torch {torch.__version__} has no F.linear_cross_entropy (torch 2.13 added it)")
    params = load_params(args.params)
    p = params.pretrain
    vocab, tokens, where, steps_per_epoch = stage_inputs(params)
    block = params.model.block_size
    options = (
        torch.nn.LinearCrossEntropyOptions(chunking_method=None, batch_chunk_size=args.chunk_rows)
        if args.chunk_rows
        else torch.nn.LinearCrossEntropyOptions()
    )
    runtime, stage_step = side(params, vocab, tokens, steps_per_epoch, None)
    _, chunked_step = side(params, vocab, tokens, steps_per_epoch, options)
    print(
        f"tokens: {where}; vocab {vocab}, block {block}, batch {p.batch_size}, d_model "
        f"{params.model.d_model}; {runtime.describe()} on {device_name(runtime.device)}"
    )
    steps = {"stage": stage_step, "chunked": chunked_step}
    for name, step in steps.items():  # the warm-up: compilation, the allocator, kernel choice
        losses = [step().values()[0] for _ in range(3)]  # the loss, read back from the device
        print(f"  first 3 losses, {name:8s} " + ", ".join(f"{loss:.6f}" for loss in losses))
    per_step = {name: step_tokens(p, block) for name in steps}
    rates = timed_rounds(steps, per_step, args.steps, args.rounds, runtime.device)
    chunks = f"{args.chunk_rows} tokens a chunk" if args.chunk_rows else "torch's chunk size"
    names = {
        "stage": "the stage's step (whole loss compiled)",
        "chunked": f"body compiled + F.linear_cross_entropy ({chunks})",
    }
    for name, values in rates.items():
        print(
            f"  {names[name]:62s} {median(values):9,.0f} tokens/s  (rounds "
            + ", ".join(f"{v:,.0f}" for v in values)
            + ")"
        )
    ratio = median(rates["chunked"]) / median(rates["stage"])
    headline = (
        f"speedup: {ratio:.2f}x torch's chunked F.linear_cross_entropy over the stage's compiled loss, "
        f"{median(rates['chunked']):,.0f} vs {median(rates['stage']):,.0f} training tokens/s on {runtime.device}"
    )
    print(headline)
    figures = {
        "ratio": ratio,
        **{f"{name}_tokens_per_s": median(values) for name, values in rates.items()},
        "runtime": runtime.describe(),
    }
    record("lm_head_loss", headline, figures, args, runtime.device)


if __name__ == "__main__":
    sys.exit(main())
