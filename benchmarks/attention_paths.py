"""Which attention kernel to run: the written-out math or SDPA (`F.scaled_dot_product_attention`).

Both give the same numbers (tests/test_model.py); `SelfAttention` picks the faster one per call
(`_sdpa_is_faster`): written out under torch.compile, with dropout, and wherever a backward
follows on a CPU; SDPA otherwise. This measures the choice where it is made on this device,
each case against the other kernel forced, in alternating rounds of one process:

- a fine-tuning step without dropout (`-S finetune.dropout=0`), as `train_step` runs it;
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
from timing import benchmark_parser, device_name, median, timed_rounds, warm_up

from tinytf.config import load_params
from tinytf.data.batching import SentimentDataset
from tinytf.model.architecture import model_config
from tinytf.model.attention import SelfAttention
from tinytf.model.transformer import TinyTransformer
from tinytf.train.classify import predict
from tinytf.train.runtime import seed_everything

_CHOSEN = SelfAttention._sdpa_is_faster


def with_kernel(step: Callable[[], object], sdpa: bool | None) -> Callable[[], None]:
    """`step` with SDPA forced (True), the written-out math forced (False) or the module's choice."""
    if sdpa is None:
        return step

    def forced() -> None:
        SelfAttention._sdpa_is_faster = lambda self, x: sdpa
        try:
            step()
        finally:
            SelfAttention._sdpa_is_faster = _CHOSEN

    return forced


def finetune_case(params, vocab, data, planned, runtime):
    no_dropout = dataclasses.replace(params, finetune=dataclasses.replace(params.finetune, dropout=0.0))
    step = classifier_throughput.tinytf_step(no_dropout, vocab, data, runtime, planned)
    return {"written out (chosen)": with_kernel(step, None), "SDPA": with_kernel(step, True)}


def eager_pretrain_case(params, vocab):
    tokens, _ = pretrain_throughput.corpus(vocab)
    p = dataclasses.replace(params.pretrain, batch_size=params.variants.batch_size)
    _, _, step = pretrain_throughput.tinytf_step(
        params.model, p, vocab, tokens, params.variants.steps, None, False
    )
    return {"written out (chosen)": with_kernel(step, None), "SDPA": with_kernel(step, True)}


def validation_case(params, vocab, data, runtime):
    seed_everything(0)
    model = TinyTransformer(model_config(params.model, vocab, "causal", 2)).to(runtime.device)
    texts = SentimentDataset(data.input_ids[:1024], data.labels[:1024])

    def step():
        return predict(model, texts, 256, params.tokenize.max_length, runtime, prefix_id=None)

    return {"SDPA (chosen)": with_kernel(step, None), "written out": with_kernel(step, False)}


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
    medians = {}
    for case, steps in cases.items():
        warm_up(steps, 3, runtime.device)
        rates = timed_rounds(steps, dict.fromkeys(steps, 1), args.steps, args.rounds, runtime.device)
        medians[case] = {name: 1000 / median(values) for name, values in rates.items()}
        (chosen, ms_chosen), (other, ms_other) = medians[case].items()
        print(f"{case:46s} {chosen} {ms_chosen:7.1f} ms, {other} {ms_other:7.1f} ms: "
              f"the chosen kernel {ms_other / ms_chosen:.2f}x as fast")  # fmt: skip
    ms = medians["fine-tuning step, no dropout"]
    print(f"written out: {ms['SDPA'] / ms['written out (chosen)']:.2f}x SDPA's speed in a fine-tuning step "
          f"without dropout on {runtime.device} ({device_name(runtime.device)})")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
