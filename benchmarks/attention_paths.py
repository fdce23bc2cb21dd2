"""Which attention kernel to run: the written-out math or SDPA (`F.scaled_dot_product_attention`).

The same math, equal up to rounding (tests/unit/model/test_attention.py); `SelfAttention` picks the faster one
per call (`_sdpa_is_faster`): written out under torch.compile, with dropout, and wherever
autograd records it on a CPU; SDPA otherwise. This times both kernels, each forced, in the cases
below, in alternating rounds of one process, and names the one chosen on this device:

- a fine-tuning step without dropout (`-S finetune.dropouts=[0]`), as `train_step` runs it;
- a pretraining step in eager (no compile), as the `variants` stage's cells run it;
- the classifier's validation pass (inference: no backward), as `predict` runs it.

The last line is the headline: the written-out math's speed over SDPA's in the fine-tuning step.

    python benchmarks/attention_paths.py [--steps 20] [--rounds 3]
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable

import classifier_throughput
import pretrain_throughput
import torch
from timing import benchmark_parser, device_name, median, record, timed_rounds, warm_up

from tinytf.data.batching import SentimentDataset
from tinytf.model.architecture import model_config
from tinytf.model.attention import SelfAttention
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.train.classify import predict
from tinytf.train.runtime import seed_everything

_RULE = SelfAttention._sdpa_is_faster


def with_kernel(step: Callable[[], object], sdpa: bool) -> Callable[[], None]:
    """`step` with SDPA (True) or the written-out math (False) forced."""

    def forced() -> None:
        SelfAttention._sdpa_is_faster = lambda self, x: sdpa
        try:
            step()
        finally:
            SelfAttention._sdpa_is_faster = _RULE

    return forced


def both_kernels(step: Callable[[], object]) -> dict[str, Callable[[], None]]:
    return {"written out": with_kernel(step, False), "SDPA": with_kernel(step, True)}


def chosen_kernel(device: torch.device, autograd: bool) -> str:
    """What `SelfAttention` picks on `device` for a dropout-free call, recorded by autograd or not."""
    probe = SelfAttention(8, 2, attn_impl="sdpa").to(device).train(autograd)
    x = torch.zeros(1, 1, 8, device=device, requires_grad=autograd)
    return "SDPA" if probe._sdpa_is_faster(x) else "written out"


def finetune_case(params, vocab, data, planned, runtime):
    no_dropout = dataclasses.replace(params, finetune=dataclasses.replace(params.finetune, dropouts=[0.0]))
    return both_kernels(classifier_throughput.tinytf_step(no_dropout, vocab, data, runtime, planned)), True


def eager_pretrain_case(params, vocab):
    tokens, _ = pretrain_throughput.corpus(vocab)
    p = dataclasses.replace(params.pretrain, batch_size=params.variants.batch_size)
    _, _, step = pretrain_throughput.tinytf_step(
        params.model, p, vocab, tokens, params.variants.steps, None, False
    )
    return both_kernels(step), True


def validation_case(params, vocab, data, runtime):
    seed_everything(0)
    model = TinyTransformer(model_config(params.model, vocab, "causal", 2)).to(runtime.device)
    texts = SentimentDataset(data.input_ids[:1024], data.labels[:1024])

    def step():
        return predict(model, texts, 256, params.tokenize.max_length, runtime, prefix_id=None)

    return both_kernels(step), False


def main() -> None:
    parser = benchmark_parser(__doc__, 20, "timed calls per round and kernel")
    args = parser.parse_args()

    params = load_params(args.params)
    vocab, data, where, planned, runtime = classifier_throughput.stage_inputs(params)
    print(
        f"texts: {where}; measured on {runtime.device} ({device_name(runtime.device)}), {runtime.describe()}"
    )
    cases = {
        "fine-tuning step, no dropout": finetune_case(params, vocab, data, planned, runtime),
        "pretraining step in eager, as a variants cell": eager_pretrain_case(params, vocab),
        "validation pass, 1,024 texts (no backward)": validation_case(params, vocab, data, runtime),
    }
    medians, figures = {}, {}
    for case, (steps, autograd) in cases.items():
        warm_up(steps, 3, runtime.device)
        rates = timed_rounds(steps, dict.fromkeys(steps, 1), args.steps, args.rounds, runtime.device)
        ms = medians[case] = {name: 1000 / median(values) for name, values in rates.items()}
        chosen = chosen_kernel(runtime.device, autograd)
        other = next(name for name in ms if name != chosen)
        figures[case] = {"written_out_ms": ms["written out"], "sdpa_ms": ms["SDPA"], "chosen": chosen}
        print(
            f"{case:46s} written out {ms['written out']:7.1f} ms, SDPA {ms['SDPA']:7.1f} ms: "
            f"{chosen} chosen, {ms[other] / ms[chosen]:.2f}x as fast as the other"
        )
    ms = medians["fine-tuning step, no dropout"]
    headline = (
        f"written out: {ms['SDPA'] / ms['written out']:.2f}x SDPA's speed in a fine-tuning step "
        f"without dropout on {runtime.device} ({device_name(runtime.device)})"
    )
    print(headline)
    figures = {"ratio": ms["SDPA"] / ms["written out"], "runtime": runtime.describe(), **figures}
    record("attention_paths", headline, figures, args, runtime.device)


if __name__ == "__main__":
    sys.exit(main())
