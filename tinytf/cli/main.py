"""The `tinytf` console script: tools that need no pipeline (`count-params`, `score`, `preset`,
`champion`), and `run STAGE`, which runs a stage's command from dvc.yaml for a user without DVC (no
caching: `dvc repro` is the way to run the pipeline)."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence

from tinytf.cli.inputs import refuse_missing_inputs, refuse_no_store, refuse_untrusted_model
from tinytf.cli.parser import build_parser
from tinytf.cli.texts import refuse_invisible
from tinytf.cli.urls import redacted
from tinytf.data.texts import from_command_line
from tinytf.errors import TinyTFError
from tinytf.io import FULL, full_disk_message
from tinytf.params.pipeline import stage_commands
from tinytf.params.schema import parse_overrides


def run_stage(stage: str, overrides: Sequence[str]) -> None:
    extra = [arg for item in overrides for arg in ("--set", item)]
    parsed = parse_overrides(list(overrides))
    if parsed:
        from tinytf.params.config import load_params

        # the stages' own checks, once, before a matrix is expanded from the values: a scalar where a
        # list belongs, or a misspelt key, would otherwise build wrong cells or none
        load_params("params.yaml", parsed)
    commands = stage_commands(stage, overrides=parsed)  # an unknown stage is named here first
    refuse_missing_inputs(stage, parsed)
    for argv in commands:
        if argv[0] == "python":
            argv[0] = sys.executable
        print("+ " + shlex.join(argv + extra), file=sys.stderr)
        code = subprocess.call(argv + extra)
        if code:
            raise TinyTFError(f"stage {stage}: `{shlex.join(argv)}` exited with status {code}")


def guarded(fn: Callable[[], int | None]) -> int:
    """Run `fn` and return its exit status (None is 0); a user-fixable error, a full disk or a
    file-size limit becomes one line on stderr and exit status 2."""
    try:
        return fn() or 0
    except TinyTFError as exc:
        # a store's URI may carry a password (MLFLOW_TRACKING_URI=https://user:pw@host): never printed
        print(f"tinytf: error: {redacted(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        if exc.errno not in FULL or isinstance(exc, BrokenPipeError):
            raise
        print(f"tinytf: error: {full_disk_message(exc)}", file=sys.stderr)
        return TinyTFError.exit_code


def check_command(params_file: str) -> None:
    from tinytf.params.config import load_params

    load_params(params_file)
    print(f"{params_file}: ok")


def texts_of(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The texts of TEXT and --file, refused at once when blank, invisible only or not UTF-8."""
    names, texts = from_command_line(args.text, args.file)
    for name, text in zip(names, texts, strict=True):
        refuse_invisible(name, text)
    return names, texts


def score(args: argparse.Namespace) -> None:
    names, texts = texts_of(args)  # before the imports: refused at once
    from tinytf.cli.tools import score_command

    score_command(args.model, args.tokenizer, names, texts)


def predict(args: argparse.Namespace) -> None:
    names, texts = texts_of(args)  # before mlflow's seconds of imports
    refuse_untrusted_model(args.model, args.trust_model_code)
    from tinytf.tracking.connect import tracking_uri
    from tinytf.tracking.server import refuse_silent_server

    refuse_silent_server(tracking_uri())  # in seconds, before those imports too
    refuse_no_store(args.model, tracking_uri())
    from tinytf.tracking.champion import predict_command

    predict_command(args.model, names, texts, tracking_uri())


def champion(args: argparse.Namespace) -> None:
    from tinytf.tracking.connect import tracking_uri
    from tinytf.tracking.server import refuse_silent_server

    refuse_silent_server(tracking_uri())  # in seconds, before mlflow's imports
    from tinytf.tracking.promotion import champion_command

    champion_command(args.action, args.name, tracking_uri())


def ui(args: argparse.Namespace) -> None:
    from tinytf.tracking.connect import DEFAULT_EXPERIMENT
    from tinytf.tracking.store import ui_command

    experiment = args.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    ui_command(args.backend_store_uri, args.host, args.port, experiment)


def store(args: argparse.Namespace) -> None:
    from tinytf.tracking.connect import DEFAULT_EXPERIMENT, tracking_uri
    from tinytf.tracking.server import refuse_silent_server

    uri = tracking_uri()
    refuse_silent_server(uri)  # in seconds, before mlflow's imports
    from tinytf.tracking.store import prune_command

    experiment = args.experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    prune_command(uri, experiment, args.keep, args.dry_run)


def main(argv: Sequence[str] | None = None) -> int:
    # MLflow's usage telemetry, off as .dvc/config turns DVC's off; the stages `tinytf preset` and
    # `tinytf exp` start inherit it. A user's own setting wins.
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    try:
        code = dispatch(argv)
        sys.stdout.flush()  # a reader that closed the pipe shows here, not as a message at exit
        return code
    except BrokenPipeError:
        # `tinytf compare | head`: the reader has what it wanted; end quietly, with the status a
        # tool killed by SIGPIPE has (Python ignores the signal), and no flush error at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _deps(args: argparse.Namespace, _: list[str]) -> None:
    from tinytf.cli.deps import deps_command

    deps_command(args.write)


def _dag(args: argparse.Namespace, _: list[str]) -> None:
    from tinytf.cli.dag import dag_command

    dag_command(args.write_readme)


def _count_params(args: argparse.Namespace, _: list[str]) -> None:
    from tinytf.cli.tools import count_params_command

    count_params_command(args.params, args.vocab_size, args.course_lab)


def _serve(args: argparse.Namespace, _: list[str]) -> int | None:
    from tinytf.cli.serve import serve_command

    return serve_command(args)


def _data(args: argparse.Namespace, _: list[str]) -> int | None:
    from tinytf.cli.data import add_command, remove_command

    return (remove_command if args.data_command == "remove" else add_command)(args)


def _compare(args: argparse.Namespace, dvc_args: list[str]) -> int | None:
    from tinytf.cli.compare import compare_command

    return compare_command(dvc_args, args.wide)


def _exp(args: argparse.Namespace, dvc_args: list[str]) -> int | None:
    from tinytf.cli.experiments import run_experiment

    return run_experiment(dvc_args, args.params)


def _preset(args: argparse.Namespace, dvc_args: list[str]) -> int | None:
    from tinytf.cli import presets

    if args.print:
        print(*presets.set_args(args.name, args.params, args.presets_dir)[1::2], sep="\n")
    elif args.export:
        print(presets.export_report(args.name, args.params, args.presets_dir, study=args.study))
    else:
        return presets.run_preset(args.name, dvc_args, args.params, args.presets_dir, args.workspace)
    return None


# each command's handler, called with its args and the arguments it passes on to dvc
HANDLERS: dict[str, Callable[[argparse.Namespace, list[str]], int | None]] = {
    "run": lambda args, _: run_stage(args.stage, args.overrides),
    "check": lambda args, _: check_command(args.params),
    "deps": _deps,
    "dag": _dag,
    "count-params": _count_params,
    "score": lambda args, _: score(args),
    "predict": lambda args, _: predict(args),
    "champion": lambda args, _: champion(args),
    "serve": _serve,
    "data": _data,
    "ui": lambda args, _: ui(args),
    "store": lambda args, _: store(args),
    "compare": _compare,
    "exp": _exp,
    "preset": _preset,
}
PASS_ON = ("preset", "compare", "exp")  # what they do not know goes on to dvc; the rest refuse it


def dispatch(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, dvc_args = parser.parse_known_args(argv)
    if dvc_args and args.command not in PASS_ON:
        parser.error(f"unrecognized arguments: {' '.join(dvc_args)}")
    if args.command == "preset" and not args.print and args.study and not args.export:
        parser.error("preset: --from FOLDER goes with --export")
    handler = HANDLERS[args.command]
    return guarded(lambda: handler(args, dvc_args))


if __name__ == "__main__":
    sys.exit(main())
