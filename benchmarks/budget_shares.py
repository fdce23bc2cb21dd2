"""Where the default run's compute goes: tokens and FLOPs per training stage, from what the
stages wrote (reports/) and params.yaml, so the shares are those of the committed run.

A training token costs 6 x the matmul weights it passes through plus the attention matmuls
(12 x layers x width x its sequence length: the block for the LM, a text's mean length for the
classifier); an evaluated token a third of that. The LM's tokens also pass through the
8000-way head, a classifier's only through the body. Padding is not counted (length-grouped
batches keep it small), nor are the logistic regressions of the probe and the baselines.

The last line is the headline: pretraining's share of the run's FLOPs, and the largest
other stage's. Stage wall times are in MLflow (each stage's run duration), not here.

    python benchmarks/budget_shares.py [--params params.yaml] [--reports reports]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd
from timing import record, train_flops_per_token

from tinytf.errors import TinyTFError
from tinytf.model.architecture import model_config
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import load_params
from tinytf.train.finetune_trainer import schedule


@dataclass
class Spend:
    runs: int
    train_tokens: float
    eval_tokens: float
    flops: float


def spends(params, reports: Path) -> dict[str, Spend]:
    tokenize = json.loads((reports / "tokenize.json").read_text())
    model = TinyTransformer(model_config(params.model, tokenize["vocab_size"], "causal", 0))
    block = params.model.block_size
    sentiment = {split: s["tokens"] for split, s in tokenize["sentiment"].items()}
    train_texts = json.loads((reports / "data.json").read_text())["sentiment"]["splits"]["train"]["rows"]
    per_text = sentiment["train"] / train_texts  # before truncation at max_length: 18 of 10,201 texts
    lm_token = train_flops_per_token(model, model.lm_head, block)
    cls_token = train_flops_per_token(model, model.cls_head, per_text)

    def spend(runs: int, train: float, evaluated: float, per_token: float) -> Spend:
        return Spend(runs, train, evaluated, per_token * (train + evaluated / 3))

    out = {}
    # one pretraining run's tokens (each of pretrain.seeds reads as many): the first body's
    bodies = sorted((reports / "pretrain").glob("seed*/metrics.json")) or [
        reports / "pretrain" / "metrics.json"
    ]
    pretrain = json.loads(bodies[0].read_text())
    n_bodies = max(1, len(bodies) if bodies[0].parent.name.startswith("seed") else 1)
    # each epoch scores validation, test, and a validation-sized slice of train
    corpus_eval = 2 * tokenize["corpus"]["validation"]["tokens"] + tokenize["corpus"]["test"]["tokens"]
    out["pretrain"] = spend(
        n_bodies, n_bodies * pretrain["tokens"], n_bodies * pretrain["epochs"] * corpus_eval, lm_token
    )

    runs = pd.read_csv(reports / "finetune" / "runs.csv")
    trained, probes = runs[runs.start != "probe"], runs[runs.start == "probe"]
    # a trained run: its subset every epoch, validation once per `schedule`'s evaluation
    # period, test once; the linear probe: one forward pass over every split per start, its
    # runs refitting the logistic regression on those features
    train = (trained.n_train * trained.epochs).sum() * per_text
    passes = sum(
        epochs // schedule(n, params.finetune)[1]
        for n, epochs in zip(trained.n_train, trained.epochs, strict=True)
    )
    evaluated = passes * sentiment["validation"] + len(trained) * sentiment["test"]
    evaluated += probes.snapshot.nunique() * sum(sentiment.values())
    out["finetune"] = spend(len(runs), train, evaluated, cls_token)

    cells = pd.read_csv(reports / "evaluate" / "grid.csv")
    out["grid"] = spend(
        len(cells),
        cells.data_epochs.sum() * sentiment["train"],
        cells.data_epochs.sum() * sentiment["validation"],
        cls_token,
    )

    v = params.variants
    n_cells = len(v.pos_encodings) * len(v.head_merges) * len(v.seeds)
    # each cell evaluates eval_batches batches of train, validation and test
    out["variants"] = spend(
        n_cells,
        n_cells * v.steps * v.batch_size * block,
        n_cells * 3 * v.eval_batches * v.batch_size * block,
        lm_token,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument(
        "--reports", default="reports", type=Path, help="the run's reports (default: reports)"
    )
    args = parser.parse_args()
    try:
        table = spends(load_params(args.params), args.reports)
    except (FileNotFoundError, TinyTFError) as exc:  # a user's error: one line, exit 2, as the stages do
        missing = isinstance(exc, FileNotFoundError)
        print(
            f"budget_shares: {exc.filename}: not found; run the pipeline first (`make repro`)"
            if missing
            else f"budget_shares: {exc}",
            file=sys.stderr,
        )
        sys.exit(2)
    total = sum(s.flops for s in table.values())
    print(f"{'stage':<10}{'runs':>6}{'train tokens':>15}{'eval tokens':>14}{'TFLOP':>9}{'share':>8}")
    for name, s in table.items():
        print(
            f"{name:<10}{s.runs:>6}{s.train_tokens / 1e6:>14.2f}M{s.eval_tokens / 1e6:>13.2f}M"
            f"{s.flops / 1e12:>9.1f}{s.flops / total:>8.1%}"
        )
    other, largest = max((s.flops, name) for name, s in table.items() if name != "pretrain")
    headline = (
        f"pretraining: {table['pretrain'].flops / total:.1%} of the run's training and evaluation "
        f"FLOPs; the largest other stage, {largest}: {other / total:.1%}"
    )
    print(headline)
    figures = {
        "pretrain_share": table["pretrain"].flops / total,
        **{name: {**asdict(s), "share": s.flops / total} for name, s in table.items()},
    }
    record("budget_shares", headline, figures, args)


if __name__ == "__main__":
    main()
