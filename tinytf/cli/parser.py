"""The `tinytf` command line's argparse parser: one builder per command or pair of commands, each
with its help and description (`tinytf.cli.main` dispatches what it parses)."""

from __future__ import annotations

import argparse

from tinytf.cli import inputs

FILE_HELP = "a UTF-8 file whose whole content is one more text (- reads stdin); may be repeated"
CHECKED_AGAINST = "params file checked against (default: params.yaml)"


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
    from tinytf.cli import data, serve

    for add in (
        _add_run,
        _add_check,
        _add_deps,
        _add_dag,
        _add_count_params,
        _add_text_tools,
        _add_champion,
        _add_presets,
        data.add_parser,
        serve.add_parser,
        _add_store,
    ):
        add(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser(
        "run",
        help="run one pipeline stage without DVC (its command from dvc.yaml; every cell of a matrix)",
        description="Run the command dvc.yaml gives STAGE, from the repository root, with no caching; "
        "a matrix stage (variants, grid) runs every cell its params define. `python stages/STAGE.py "
        "--help` explains a stage's own options.",
    )
    run.add_argument("stage", help="a stage name of dvc.yaml, e.g. prepare, pretrain, grid")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed on to the stage script, e.g. --set tokenize.vocab_size=4000",
    )


def _add_check(sub) -> None:
    check = sub.add_parser(
        "check",
        help="validate params.yaml and stop (`make repro` runs it before dvc repro)",
        description="Validate the params file the way every stage does, and refuse one that holds more "
        "YAML aliases than a few before DVC reads it (an alias bomb holds `dvc status` for minutes).",
    )
    check.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")


def _add_deps(sub) -> None:
    deps = sub.add_parser(
        "deps",
        help="check dvc.yaml's code deps against what each stage imports (--write fixes them)",
        description="A stage's deps in dvc.yaml must list every project file its script reaches "
        "through imports, and no code it never reaches (editing a reached file must make `dvc status` "
        "list the stage). Without options: list what differs, exit 1 if anything does. Run from the "
        "repository root.",
    )
    deps.add_argument(
        "--write", action="store_true", help="rewrite each stage's code deps to its import closure"
    )
    deps.add_argument("--check", action="store_true", help="only check (the default)")


def _add_dag(sub) -> None:
    dag = sub.add_parser(
        "dag",
        help="the pipeline's graph as Mermaid, from dvc.yaml (--write-readme: into README.md)",
        description="Print `dvc dag --mermaid --collapse-foreach-matrix` as README.md shows it: a "
        "matrix stage is one node with its cells' count, and an edge another path implies is left "
        "out (`dvc dag` draws every one). Run from the repository root.",
    )
    dag.add_argument(
        "--write-readme",
        action="store_true",
        help="replace the graph between README.md's `<!-- dag: ... -->` markers (after editing dvc.yaml)",
    )


def _add_count_params(sub) -> None:
    count = sub.add_parser(
        "count-params",
        help="print parameter counts (per component, counted and analytic)",
        description="Parameter counts of the model in params.yaml (or the course lab's), counted from "
        "the module and from the closed-form formula, plus the course reports' claims checked.",
    )
    count.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    count.add_argument("--vocab-size", type=int, help="vocabulary size (default: the trained tokenizer's)")
    count.add_argument(
        "--course-lab",
        "--seed-lab",  # its earlier name
        dest="course_lab",
        action="store_true",
        help="the course lab's model (nn.TransformerEncoder, nhid=200, 4 layers, 2 heads) "
        "for vocabularies 100 and 50,001, and the course reports' claims",
    )


def _add_text_tools(sub) -> None:
    """`score` and `predict`: texts from arguments or files."""
    score = sub.add_parser(
        "score",
        help="loss and perplexity of text under a pretrained model",
        description="Score text with a causal LM checkpoint: mean loss per token "
        "(nats) and perplexity, each token predicted from the ones before it.",
    )
    score.add_argument("text", nargs="*", help="one or more texts to score")
    score.add_argument("--file", action="append", default=[], metavar="PATH", help=FILE_HELP)
    score.add_argument(
        "--model",
        default="data/models/pretrained/seed1.pt",
        help="model checkpoint (.pt); default: body seed 1",
    )
    score.add_argument("--tokenizer", default="data/tokenizer.json", help="tokenizer file")
    predict = sub.add_parser(
        "predict",
        help="classify texts with the registered champion (the model `mlflow models serve` serves)",
        description="Load the MLflow model MODEL (default: the champion `evaluate` registered, from the "
        "tracking store at the repository root or MLFLOW_TRACKING_URI) and print, per text, the "
        "predicted class and every class probability.",
    )
    predict.add_argument("text", nargs="*", help="one or more texts to classify")
    predict.add_argument("--file", action="append", default=[], metavar="PATH", help=FILE_HELP)
    inputs.add_model_arguments(predict, "load")


def _add_champion(sub) -> None:
    champion = sub.add_parser(
        "champion",
        help="the served model's aliases: show them, or roll @champion back to @previous",
        description="`evaluate` moves @champion to a new version only when it is at least as good on "
        "validation as the current one, which becomes @previous. These commands read and move the "
        "aliases in the tracking store at the repository root (or MLFLOW_TRACKING_URI).",
    )
    actions = champion.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, said in (
        ("show", "the newest versions, each with its aliases and its promotion decision"),
        ("rollback", "swap @champion and @previous: serve the version before again (run it again to undo)"),
    ):
        parser = actions.add_parser(action, help=said, description=said[0].upper() + said[1:] + ".")
        parser.add_argument(
            "--name", default="tinytf-sentiment", help="the registered model (default: %(default)s)"
        )


def _add_presets(sub) -> None:
    """`compare` and `preset`: experiments, the DVC way."""
    compare = sub.add_parser(
        "compare",
        usage="tinytf compare [-h] [--wide] [A B] [dvc exp show options]",
        help="experiments side by side: headline metrics and the params that differ (120 characters)",
        description="Read `dvc exp show --json` and print the workspace, its commit and every experiment "
        "with the study's headline metrics, then only the params whose values differ between them, "
        "named by their key as `-S` takes it, most varied first, in at most 120 characters a line (the "
        "params that do not fit are named below, and so are those every experiment sets alike, such "
        "as a preset's). `tinytf compare A B` puts two of them (experiment names, `workspace`, a "
        "branch or a commit's first characters) side by side: every headline metric and every param "
        "that differs between the two. A row whose stages did not all run with its own params shows no "
        "metrics: its reports/headline.json is an older run's. Arguments tinytf does not know go on "
        "to `dvc exp show` (e.g. --all-commits, --rev REV); `dvc exp show --only-changed` is the full "
        "table.",
    )
    compare.add_argument(
        "--wide",
        action="store_true",
        help="every headline metric and every differing param, values uncut (wider than a terminal)",
    )
    exp = sub.add_parser(
        "exp",
        help="dvc exp run with every -S checked first: a rejected value never reaches params.yaml",
        description="Run `dvc exp run ARGS` after reading every `-S key=value` as DVC does and checking "
        "it against params.yaml's schema (an item without `=`, a value DVC cannot read or a rejected "
        "one stops in one line naming it, exit 2, before anything writes params.yaml; an accepted one "
        "in the workspace changes only its own line there) and, for --temp or --queue, that the data files the params name are tracked "
        "(a temporary or queued experiment copies only what git tracks). e.g. "
        "`tinytf exp -S tokenize.vocab_size=4000`, `tinytf exp --temp -S 'finetune.seeds=[1,2]'`: every "
        "argument goes on to `dvc exp run`. A sweep, `--queue -S 'tokenize.vocab_size=4000,8000'`, has "
        "each of its experiments checked. Where stages have no outputs yet (a fresh clone) it first says "
        "how many will run and for how long; one `tinytf exp` or `preset` runs in a workspace at a time "
        "(.dvc/tmp/tinytf-exp.lock).",
    )
    exp.add_argument("--params", default="params.yaml", help=CHECKED_AGAINST)
    preset = sub.add_parser(
        "preset",
        help="run a named preset (presets/NAME.yaml) as a DVC experiment: dvc exp run -S ...",
        description="Run `dvc exp run --temp -S key=value ...` with every value of presets/NAME.yaml, "
        "checked against params.yaml first. The workspace is left as it is: `dvc exp show` lists the "
        "experiment and `dvc exp apply NAME` brings its params and outputs in. e.g. `tinytf preset tiny`, "
        "`tinytf preset full --queue`, `tinytf preset tiny prepare`: every argument tinytf does not "
        "know (--queue, -S key=value, a stage name) goes on to `dvc exp run`.",
    )
    preset.add_argument("name", help="preset name, e.g. tiny, full, imdb")
    preset.add_argument("--print", action="store_true", help="only print the key=value pairs, one a line")
    preset.add_argument(
        "--workspace",
        action="store_true",
        help="run in the workspace (sets the preset's keys in params.yaml, a line each with its comment "
        "kept, and rewrites dvc.lock and the outputs) instead of a "
        "temporary experiment that `dvc exp apply` brings in",
    )
    preset.add_argument(
        "--export",
        action="store_true",
        help="run nothing: copy the workspace's generated report into reports/presets/NAME/ (the "
        "preset's committed report), after checking params.yaml holds the preset's values",
    )
    preset.add_argument(
        "--from",
        dest="study",
        metavar="FOLDER",
        help="with --export: the report and params.yaml that benchmarks/gpu_study.sh wrote into FOLDER "
        "(a GPU machine's study, run without DVC) instead of the workspace's",
    )
    preset.add_argument("--params", default="params.yaml", help=CHECKED_AGAINST)
    preset.add_argument("--presets-dir", default="presets", help="folder of presets (default: presets)")


def _add_store(sub) -> None:
    """`ui` and `store`: the local MLflow store, browsed and tidied."""
    ui = sub.add_parser(
        "ui",
        help="the MLflow UI over mlflow.db (`make ui`): prints the runs page's link, one worker",
        description="Print the link to the experiment's runs page, then run `mlflow server` with one "
        "worker, without MLflow's job runner (GenAI jobs this project never queues) and with MLflow's "
        "telemetry off: a sixth of `mlflow ui`'s memory. Ctrl-C stops it.",
    )
    ui.add_argument("--backend-store-uri", default="sqlite:///mlflow.db", help="(default: %(default)s)")
    ui.add_argument("--host", default="127.0.0.1", help="(default: %(default)s, this machine only)")
    ui.add_argument("--port", type=int, default=5000, help="(default: %(default)s)")
    ui.add_argument("--experiment", help="(default: MLFLOW_EXPERIMENT_NAME, else tinytf)")
    store = sub.add_parser(
        "store",
        help="tidy the MLflow store: `store prune --keep N` deletes older runs and frees their files",
        description="Housekeeping of the tracking store at the repository root (or "
        "MLFLOW_TRACKING_URI). DVC's own: `dvc exp remove`, `dvc gc -w` (docs/scale-out.md).",
    )
    actions = store.add_subparsers(dest="action", metavar="ACTION", required=True)
    prune = actions.add_parser(
        "prune",
        help="delete all but the newest N runs of each stage, their child runs, then mlflow gc",
        description="Delete (through MlflowClient) all but the KEEP newest top-level runs of each stage "
        "of the experiment, with their child runs and the models they logged, then run `mlflow gc` on a "
        "SQLite store so their rows and artifact files go. A run whose model a registered version "
        "serves is kept. `mlflow gc` also empties what was deleted before.",
    )
    prune.add_argument("--keep", type=int, required=True, help="top-level runs kept per stage, newest first")
    prune.add_argument("--dry-run", action="store_true", help="only list what would go")
    prune.add_argument("--experiment", help="(default: MLFLOW_EXPERIMENT_NAME, else tinytf)")
