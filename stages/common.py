"""What every stage script shares: its command line, its params narrowed to what dvc.yaml
declares for it, and user errors as one line with exit status 2.

A stage writes its outputs through `staged_outputs`: into temporaries, put in place together
only once it has succeeded, so no run leaves half-written outputs. DVC deletes a stage's outputs
before running it (no `persist`: its run cache needs that); `dvc checkout` brings the last ones
back after a failure.

A stage reads params through `load_params(stage, args)`: the whole params file is validated,
then the stage sees only the keys listed under its `params:` in dvc.yaml, and reading any
other key stops it with a message naming the key. So dvc.yaml cannot silently under-declare
what a stage depends on. DVC reads params.yaml when it records the stage, not when the stage
starts: the declared keys are read again before the outputs are put in place (and once more at
the end), and a change stops the stage, or dvc.lock would record values its outputs never saw.
"""

from __future__ import annotations

import os
import sys

# the tinytf beside this script, ahead of an installed one: a temporary DVC experiment runs a
# copy of the repository, where an editable install would import the workspace's code, which
# the experiment's dvc.lock does not record (sys.path[0] is stages/, not the root)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tinytf.system import collector  # noqa: E402

# before any other import: the stage's imports run without the cyclic collector, and `run`
# turns it back on (tinytf/system/collector.py says why and what it saves)
collector.pause_for_imports()

import argparse
import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from tinytf.cli.urls import redacted
from tinytf.errors import ParamsError, TinyTFError
from tinytf.io import FULL, full_disk_message, staged, write_json
from tinytf.params.config import load_params as validated_params
from tinytf.params.config import narrow_params
from tinytf.params.pipeline import DVC_FILE, declared_keys, writer_of
from tinytf.params.schema import DeclaredParams, flatten, parse_overrides
from tinytf.system.allocator import keep_freed_memory
from tinytf.system.record import run_record

STARTED = time.perf_counter()  # a stage script imports this module first: its wall time starts here
_record: dict[str, str] = {}  # {"stage", "path"} once load_params has read the command line
_read: dict = {}  # what load_params read: the stage, the file, its overrides, the declared values


def stage_parser(stage: str, doc: str) -> argparse.ArgumentParser:
    """An argparse parser with the options every stage takes; the stage adds its paths."""
    try:  # the params it reads, from dvc.yaml: the one list, never restated in the docstring
        keys = declared_keys(stage, Path(__file__).resolve().parents[1] / DVC_FILE)
        reads = "params (dvc.yaml): " + ", ".join(keys) + "\n"
    except (OSError, KeyError, yaml.YAMLError, ParamsError):
        reads = ""
    parser = argparse.ArgumentParser(
        prog=f"stages/{Path(sys.argv[0]).name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=reads + "dvc.yaml passes every path; `dvc repro` (or `tinytf run STAGE`) runs this with them.",
    )
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a params key for this run, e.g. --set tokenize.vocab_size=4000",
    )
    parser.add_argument(
        "--record",
        metavar="JSON",
        help="when the stage succeeds, write its run's record here: wall time, commit, machine, "
        "versions (the report's run card reads them)",
    )
    return parser


def load_params(stage: str, args: argparse.Namespace) -> DeclaredParams:
    """The whole file validated first (a bad key anywhere is an error), then narrowed to the
    keys dvc.yaml declares for `stage`."""
    overrides = parse_overrides(args.overrides)
    params = validated_params(args.params, overrides)
    if getattr(args, "record", None):
        _record.update(stage=stage, path=args.record)
    declared = narrow_params(params, declared_keys(stage), f"stage '{stage}'", args.params)
    _read.update(stage=stage, file=args.params, overrides=overrides, values=_declared_values(declared))
    return declared


def _declared_values(params: DeclaredParams) -> dict[str, str]:
    """{dotted key: its value as canonical JSON}: what a stage's outputs are made from."""
    return {k: json.dumps(v, sort_keys=True, default=str) for k, v in flatten(params.as_dict()).items()}


def params_unchanged() -> None:
    """Stop the stage (ParamsError) when a key it declares has changed in the params file since
    load_params read it: DVC would record the new value beside outputs made with the old one."""
    if not _read:
        return
    stage, file = _read["stage"], _read["file"]
    try:
        params = validated_params(file, _read["overrides"])
        now = _declared_values(narrow_params(params, declared_keys(stage), f"stage '{stage}'", file))
    except TinyTFError:  # no longer valid (or half-saved by an editor): changed all the same
        now = {}
    before = _read["values"]
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if changed:
        more = " ..." if len(changed) > 5 else ""
        raise ParamsError(
            f"{Path(file).name} changed while {stage} ran; run again (changed: {', '.join(changed[:5])}{more})"
        )


@contextlib.contextmanager
def staged_outputs(
    args: argparse.Namespace, tag: str, into: tuple[str, ...] = (), whole: tuple[str, ...] = ()
) -> Iterator[None]:
    """Point the output paths in `args` at staging folders for the block, and put what was written
    in place when it succeeds (tinytf.io.staged). `into`: a folder the stage writes files into,
    each replacing its namesake; `whole`: a file or folder replaced whole, with any files written
    beside it (the .json beside a .pt). Enter it inside the MLflow run, so the run is FINISHED only
    once the outputs are in place."""
    original = {name: getattr(args, name) for name in (*into, *whole)}
    folders = [Path(original[n]) for n in into] + [Path(original[n]).parent for n in whole]
    with staged(folders, tag) as staging:
        for name in into:
            setattr(args, name, str(staging[Path(original[name])]))
        for name in whole:
            path = Path(original[name])
            setattr(args, name, str(staging[path.parent] / path.name))
        try:
            yield
            params_unchanged()  # before the swap: outputs made from other values stay out of place
        finally:
            for name, value in original.items():
                setattr(args, name, value)


def run(main: Callable[[], None]) -> None:
    """Run a stage's main(); a user-fixable error is one line on stderr and its exit status."""
    try:
        keep_freed_memory()  # before the stage's first tensor
        collector.resume()
        main()
        params_unchanged()  # a stage without staged outputs (prepare) fails before DVC records it
        if _record:  # only a run that succeeded: its outputs are in place
            write_json(Path(_record["path"]), run_record(_record["stage"], time.perf_counter() - STARTED))
        collector.freeze_for_exit()
    except TinyTFError as exc:
        # a store's URI in the message may hold a password
        print(f"tinytf: error: {restore_hint(redacted(str(exc)))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (FileNotFoundError, PermissionError) as exc:
        if exc.filename is None:  # not about a file a user can name
            raise
        print(f"tinytf: error: {file_error(exc)}", file=sys.stderr)
        sys.exit(TinyTFError.exit_code)
    except OSError as exc:
        if exc.errno not in FULL:  # a full disk or a file-size limit met outside tinytf.io's writes
            raise
        print(f"tinytf: error: {restore_hint(full_disk_message(exc))}", file=sys.stderr)
        sys.exit(TinyTFError.exit_code)


def restore_hint(message: str) -> str:
    """`message` true under DVC: a failed write keeps the previous outputs, but `dvc repro` removed
    them before the stage ran (DVC_STAGE names it), so the line names the command that restores them."""
    stage = os.environ.get("DVC_STAGE")
    if not stage:  # run by hand or by `tinytf run`: the previous outputs are where they were
        return message
    said = f"DVC removed the outputs before the run: `dvc checkout {stage}` restores the last ones"
    return re.sub(r"the previous outputs are kept( as they were)?", said, message)


def file_error(exc: FileNotFoundError | PermissionError) -> str:
    """One line for a missing or forbidden file that no tinytf check caught first: the file, and
    for a missing one that an earlier stage writes, the command that writes it again."""
    if isinstance(exc, PermissionError):
        return f"{exc.filename}: permission denied; make it readable (and its folder writable) for this user"
    stage = writer_of(exc.filename)
    hint = f"; stage '{stage}' writes it: run `dvc repro {stage}`" if stage else ""
    return f"{exc.filename}: file not found{hint}"


def log_token_inputs(tracker, data_dir: str | Path, dataset: str, splits: tuple[str, ...]) -> None:
    """Record in the MLflow run which token files (with their sha256) it trained or was scored on."""
    root = Path(data_dir) / "tokens" / dataset
    for split in splits:
        path = root / (f"{split}.parquet" if dataset == "sentiment" else f"{split}.npy")
        tracker.log_file_inputs({f"{dataset}-{split}": path}, split)
