"""Training throughput of the default pretraining config vs the seed lab's model, in one run.

Both models have the shape of `model:` in params.yaml and train the same way (AdamW, the same
batches of real corpus tokens, gradient clipping, fp32 loss). The peer is the seed lab's
`nn.TransformerEncoder` model in eager fp32; tinytf runs as the pretrain stage resolves it
(device, precision and compile from `pretrain:`, or as forced by --precision/--compile). Rounds alternate
between the two so that load on the machine hits both alike; the ratio is of medians.

    python benchmarks/pretrain_throughput.py [--steps 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from tinytf.config import load_params
from tinytf.data.batching import load_tokens, random_blocks
from tinytf.data.tokenizer import load_tokenizer
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer, lm_loss
from tinytf.train.pretrain import runtime_key
from tinytf.train.runtime import Runtime, maybe_compile, resolve_runtime


def make_stepper(model: TinyTransformer, runtime: Runtime, batches, lr: float):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    forward = maybe_compile(model.forward_lm, runtime)
    model.train()

    def step():
        x, y = next(batches)
        with runtime.autocast():
            loss = lm_loss(forward(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def batch_stream(tokens, block, batch, seed):
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield random_blocks(tokens, block, batch, generator)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round and model")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], help="override pretrain.precision")
    parser.add_argument("--compile", choices=["auto", "on", "off"], help="override pretrain.compile")
    args = parser.parse_args()

    params = load_params(args.params)
    vocab = load_tokenizer("data/tokenizer.json").get_vocab_size()
    tokens = load_tokens("data/tokens/corpus/train.npy")
    p = params.pretrain
    torch.manual_seed(0)
    ours = TinyTransformer(model_config(params.model, vocab, "causal", 0))
    peer_params = params.model.__class__(**{**params.model.__dict__, "arch": "torch_encoder"})
    peer = TinyTransformer(model_config(peer_params, vocab, "causal", 0))
    block, batch = ours.config.block_size, p.batch_size
    probe_batches = batch_stream(tokens, block, batch, 1)
    px, py = next(probe_batches)
    tokens_per_step = block * batch * p.grad_accum
    steps = p.epochs * (p.steps_per_epoch or max(len(tokens) // tokens_per_step, 1))
    compile_mode = {"on": True, "off": False}.get(args.compile, p.compile)
    # resolved exactly as the pretrain stage resolves it (same probe, same cache key)
    runtime = resolve_runtime(
        p.device, args.precision or p.precision, compile_mode, steps,
        lambda: lm_loss(ours.forward_lm(px), py).backward(), runtime_key(ours.config, batch),
    )  # fmt: skip
    ours.zero_grad(set_to_none=True)
    peer_runtime = Runtime(runtime.device, "fp32", False)
    steppers = {
        "tinytf": make_stepper(ours.to(runtime.device), runtime, batch_stream(tokens, block, batch, 2), p.lr),
        "seed lab (nn.TransformerEncoder, eager fp32)": make_stepper(
            peer.to(runtime.device), peer_runtime, batch_stream(tokens, block, batch, 2), p.lr
        ),
    }
    for name, step in steppers.items():  # warm-up: compilation, allocator, kernel choice
        started = time.perf_counter()
        for _ in range(3):
            step()
        print(f"warm-up {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    rates: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(args.rounds):
        for name, step in steppers.items():
            started = time.perf_counter()
            for _ in range(args.steps):
                step()
            rates[name].append(args.steps * block * batch / (time.perf_counter() - started))
    print(
        f"shape: d_model={ours.config.d_model} n_layer={ours.config.n_layer} n_head={ours.config.n_head} "
        f"d_ff={ours.config.d_ff} vocab={vocab} block={block} batch={batch}; tinytf runtime: {runtime.describe()}"
    )
    for name, values in rates.items():
        print(
            f"{name:48s} {statistics.median(values):10,.0f} tokens/s  (rounds: "
            + ", ".join(f"{v:,.0f}" for v in values)
            + ")"
        )
    names = list(rates)
    ratio = statistics.median(rates[names[0]]) / statistics.median(rates[names[1]])
    print(f"ratio tinytf / seed lab: {ratio:.2f}x")


if __name__ == "__main__":
    main()
