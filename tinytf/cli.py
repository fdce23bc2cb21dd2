"""The `tinytf` console script.

Pipeline stages (`prepare`, `tokenize`, ...) run exactly what the DVC stage of the same
name runs, reading `params.yaml` (or `--params`) with optional `--set key=value`
overrides; `dvc repro` is the way to run them with caching. Other subcommands are tools
(parameter counts, scoring text) that need no pipeline.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import yaml

from tinytf.errors import ParamsError, TinyTFError

STAGE_HELP = {
    "prepare": "download/verify the corpus and sentiment sources, split, write parquet + data card",
    "tokenize": "train the BPE tokenizer and encode the prepared splits",
    "pretrain": "pretrain the transformer as a (causal or masked) language model",
    "variants": "one cell of the positional-encoding x head-merge study (a short pretraining)",
    "variants-table": "the variants study's perplexity table, mean ± std over seeds",
    "finetune": "train the classifier from pretrained, scratch and frozen starts over several seeds",
    "grid": "one cell of the optimizer x lr x batch size x epochs grid",
    "evaluate": "pick the best grid cell by validation accuracy and evaluate it once on test",
    "probes": "seed 004 §1: construct queries/keys that make attention select or average, and verify",
    "complexity": "seed 003: measure time and memory of attention vs length and width, fit exponents",
    "report": "render reports/README.md, tables and plots from the upstream outputs (no training)",
}


def parse_overrides(items: Sequence[str]) -> dict:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParamsError(f"--set {item!r}: expected KEY=VALUE, e.g. --set tokenize.vocab_size=4000")
        # values are YAML so that numbers, booleans and lists mean what they do in params.yaml
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tinytf",
        description=(
            "tinytf: pretrain a small transformer LM, transfer it to sentiment classification, "
            "compare with training from scratch, and report. Run the whole pipeline with `dvc repro` "
            "(or `make repro`); the subcommands below run single stages or tools."
        ),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in STAGE_HELP.items():
        stage = sub.add_parser(name, help=text, description=f"Stage `{name}`: {text}.")
        stage.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
        stage.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a params key for this run, e.g. --set prepare.sentiment.source=sst2",
        )
        if name == "variants":
            stage.add_argument("--pos", required=True, help="positional encoding of this cell")
            stage.add_argument("--merge", required=True, help="head merge of this cell")
            stage.add_argument("--seed", required=True, type=int, help="seed of this cell")
        if name == "grid":
            stage.add_argument("--optimizer", required=True, help="torch.optim class name")
            stage.add_argument("--lr", required=True, type=float, help="learning rate")
            stage.add_argument("--batch-size", required=True, type=int, help="batch size")
            stage.add_argument("--epochs", required=True, type=int, help="epochs")
            stage.add_argument("--out", help="output path without suffix (default: data/grid/<cell key>)")
    count = sub.add_parser(
        "count-params",
        help="print parameter counts (per component, counted and analytic)",
        description="Parameter counts of the model in params.yaml (or the seed lab's), counted from "
        "the module and from the closed-form formula, plus the seed reports' claims checked.",
    )
    count.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    count.add_argument("--vocab-size", type=int, help="vocabulary size (default: the trained tokenizer's)")
    count.add_argument(
        "--seed-lab",
        action="store_true",
        help="the seed lab's model (nn.TransformerEncoder, nhid=200, 4 layers, 2 heads) "
        "for vocabularies 100 and 50,001, and the seed reports' claims",
    )
    score = sub.add_parser(
        "score",
        help="loss and perplexity of text under a pretrained model",
        description="Score text with a causal LM checkpoint: mean loss per token "
        "(nats) and perplexity, each token predicted from the ones before it.",
    )
    score.add_argument("text", nargs="+", help="one or more texts to score")
    score.add_argument("--model", default="data/models/pretrained.pt", help="model checkpoint (.pt)")
    score.add_argument("--tokenizer", default="data/tokenizer.json", help="tokenizer file")
    preset = sub.add_parser(
        "preset",
        help="merge a named preset (presets/NAME.yaml) into params.yaml",
        description="Merge presets/NAME.yaml into params.yaml, keeping comments; e.g. `tinytf preset tiny`.",
    )
    preset.add_argument("name", help="preset name, e.g. tiny")
    preset.add_argument("--params", default="params.yaml", help="params file to edit (default: params.yaml)")
    preset.add_argument("--presets-dir", default="presets", help="folder of presets (default: presets)")
    return parser


def run_stage(
    name: str,
    params_file: str = "params.yaml",
    overrides: dict | None = None,
    args: argparse.Namespace | None = None,
) -> None:
    from tinytf.config import load_params
    from tinytf.pipeline import STAGES, grid_cell_stage, variants_cell_stage

    params = load_params(params_file, overrides)
    if name == "variants":
        variants_cell_stage(params, args.pos, args.merge, args.seed)
    elif name == "grid":
        grid_cell_stage(params, args.optimizer, args.lr, args.batch_size, args.epochs, args.out)
    else:
        STAGES[name](params)


def guarded(fn: Callable[[], None]) -> int:
    """Run `fn`; a user-fixable error becomes one line on stderr and exit status 2."""
    try:
        fn()
    except TinyTFError as exc:
        print(f"tinytf: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in STAGE_HELP:
        return guarded(lambda: run_stage(args.command, args.params, parse_overrides(args.overrides), args))
    if args.command == "count-params":
        from tinytf.tools import count_params_command

        return guarded(lambda: count_params_command(args.params, args.vocab_size, args.seed_lab))
    if args.command == "score":
        from tinytf.tools import score_command

        return guarded(lambda: score_command(args.model, args.tokenizer, args.text))
    if args.command == "preset":
        from tinytf.presets import apply_preset

        return guarded(lambda: apply_preset(args.name, args.params, args.presets_dir))
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
