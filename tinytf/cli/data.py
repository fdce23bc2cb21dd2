"""`tinytf data add FILE`: a user's labelled file to where `prepare` reads it, in one command;
`tinytf data remove FILE` undoes it. The file is tracked (git, or DVC when large) because temporary
and queued experiments start from git's index, not the working tree."""

from __future__ import annotations

import filecmp
import math
import shlex
import subprocess
from pathlib import Path

from tinytf.cli import dvc_quiet, files
from tinytf.cli.workspace import write_settings
from tinytf.errors import DataError, TinyTFError

RAW = Path("data/raw")
# above this a file goes to DVC's cache, not git's history: every clone would carry each version
LARGE_BYTES = 1_000_000


def add_parser(sub) -> None:
    data = sub.add_parser(
        "data",
        help="bring your own labelled data: tinytf data add FILE --text-column C --label-column L",
        description="Your own data for the pipeline.",
    )
    verbs = data.add_subparsers(dest="data_command", metavar="VERB", required=True)
    add = verbs.add_parser(
        "add",
        help="check a labelled file, put it under data/raw/, track it and point prepare at it",
        description="Read FILE (.csv, .tsv, .jsonl, .parquet or .txt) as `prepare` would, refusing a bad "
        "row with its line; copy it to data/raw/ (unless it is there already); `git add` it, or `dvc add` "
        f"it and `git add` its .dvc when it is over {LARGE_BYTES:,} bytes (or with --dvc), so that "
        "temporary and queued experiments see it; then set prepare.sentiment.source: files, "
        "files.SPLIT, text_column and label_column (with --corpus: prepare.corpus's) in params.yaml, checked first (a rejected value leaves "
        "the file as it was). A missing validation or test split is carved from train "
        "(prepare.sentiment.split). e.g. `tinytf data add ~/reviews.csv --text-column review "
        "--label-column stars`, then `dvc repro` (or --repro for prepare alone).",
    )
    add.add_argument("file", help="the labelled data file")
    add.add_argument("--text-column", required=True, metavar="C", help="the column holding the texts")
    add.add_argument("--label-column", metavar="L", help="the column holding the labels (not with --corpus)")
    add.add_argument(
        "--corpus",
        action="store_true",
        help="FILE is unlabelled text for the language model: set prepare.corpus's keys instead",
    )
    add.add_argument(
        "--split",
        choices=("train", "validation", "test"),
        default="train",
        help="which split FILE is (default: train; the splits not given are carved from train)",
    )
    add.add_argument("--dvc", action="store_true", help="track FILE with DVC whatever its size")
    add.add_argument(
        "--print-set",
        action="store_true",
        help="leave params.yaml alone and print the `dvc exp run -S ...` line that uses FILE in an experiment",
    )
    add.add_argument("--repro", action="store_true", help="then run `dvc repro prepare`")
    add.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    remove = verbs.add_parser(
        "remove",
        help="undo `data add FILE`: point prepare back at its built-in data, untrack and delete the copy",
        description="The undo of `tinytf data add FILE`: every prepare.sentiment.files / prepare.corpus.files "
        "split naming data/raw/FILE goes back to null, and a section left with no file back to its built-in "
        "source (its text_column and label_column to null), checked first; then FILE leaves git's index (or "
        "DVC's: `dvc remove` of its .dvc) and data/raw/. A file committed since stays in git's history.",
    )
    remove.add_argument("file", help="the file `data add` took: data/raw/NAME, or the path it was added from")
    remove.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")


def settings(path: Path, split: str, text_column: str, label_column: str | None) -> dict[str, object]:
    """The params that make `prepare` read `path` as `split` (the LM's corpus without a label column)."""
    section = "prepare.sentiment" if label_column else "prepare.corpus"
    values = {
        f"{section}.source": "files",
        f"{section}.files.{split}": path.as_posix(),
        f"{section}.text_column": text_column,
    }
    return values | ({f"{section}.label_column": label_column} if label_column else {})


def check_rows(path: Path, rows: int, split: str, carved: dict[str, float]) -> None:
    """A train file that is all there is must leave a row for each split carved from it."""
    if split != "train" or not carved:
        return
    needed = math.ceil(1 / min(carved.values()))
    if rows < needed:
        fractions = ", ".join(f"{name} {share}" for name, share in carved.items())
        raise DataError(
            f"{path}: {rows} rows; carving {fractions} from it needs at least {needed} "
            f"(add more rows, or give the other splits their own files with --split)"
        )


def destination(source: Path) -> Path:
    """Where FILE goes: where it is when that is under data/raw/, else data/raw/ by its name."""
    resolved, raw = source.resolve(), RAW.resolve()
    return RAW / resolved.relative_to(raw) if resolved.is_relative_to(raw) else RAW / source.name


def place(source: Path, target: Path) -> None:
    if source.resolve() == target.resolve():
        return
    if target.exists() and not filecmp.cmp(source, target, shallow=False):
        raise DataError(f"{target}: exists and differs from {source}; rename one of them")
    target.parent.mkdir(parents=True, exist_ok=True)
    with files.not_written(target, "; nothing was changed: run this again"):
        files.copy_file(source, target)  # a killed copy leaves no half file for prepare to read


def run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        last = ((result.stderr or result.stdout).strip().splitlines() or ["no output"])[-1]
        raise DataError(f"`{shlex.join(argv)}` failed: {last}")


def track(path: Path, with_dvc: bool) -> str:
    """git add `path`, or dvc add it and git add what DVC wrote; returns what was staged."""
    if with_dvc:
        run([dvc_quiet.dvc_executable(), "add", "--quiet", str(path)])
        staged = [f"{path}.dvc", str(path.parent / ".gitignore")]
    else:
        staged = [str(path)]
    run(["git", "add", "--", *staged])
    return " ".join(staged)


def add_command(args) -> None:
    # here, not at the top: `tinytf --help` builds this parser and should not import pandas
    from tinytf.data.readers import FORMATS, read_table
    from tinytf.params.config import load_params

    source, params_file = Path(args.file), Path(args.params)
    if not source.is_file():
        raise DataError(f"{source}: file not found")
    if source.suffix.lower() not in FORMATS:
        raise DataError(f"{source}: unsupported format '{source.suffix}'; use one of {', '.join(FORMATS)}")
    if bool(args.label_column) == args.corpus:
        raise DataError("give one of --label-column L (labelled data) and --corpus (the LM's text)")
    frame = read_table(source, args.text_column, args.label_column)
    target = destination(source)
    values = settings(target, args.split, args.text_column, args.label_column)
    # the stages' own checks, before anything is copied or written: a clash names the key
    prepare = load_params(params_file, values).prepare
    section = prepare.corpus if args.corpus else prepare.sentiment
    given = {name for name in ("train", "validation", "test") if getattr(section.files, name)}
    carved = {name: getattr(section.split, name) for name in ("validation", "test") if name not in given}
    check_rows(source, len(frame), args.split, carved)
    place(source, target)
    staged = track(target, args.dvc or target.stat().st_size > LARGE_BYTES)
    print(f"{source}: {len(frame)} rows read; {target} staged ({staged})")
    if args.print_set:
        sets = " ".join(f"-S {shlex.quote(f'{k}={v}')}" for k, v in values.items())
        print(f"dvc exp run {sets}")
        return
    then = f", so it is as it was; the data file is copied and staged ({staged}): run this command again to set the keys"
    with files.not_written(params_file, then):
        write_settings(params_file, values)
    print(f"{params_file}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    if args.repro:
        if subprocess.call([dvc_quiet.dvc_executable(), "repro", "prepare"]):
            raise TinyTFError("dvc repro prepare failed (its message is above)")


def reverted(params_file: Path, target: Path) -> dict[str, object]:
    """The keys that undo `data add` of `target`: each split naming it to null, and a section left
    with no file back to its built-in source, its columns to null."""
    from tinytf.params.prepare import CorpusParams, SentimentParams
    from tinytf.params.schema import read_yaml

    prepare = (read_yaml(params_file) or {}).get("prepare") or {}
    values: dict[str, object] = {}
    for name, default in (("sentiment", SentimentParams()), ("corpus", CorpusParams())):
        section = prepare.get(name) or {}
        named = {split: path for split, path in (section.get("files") or {}).items() if path}
        gone = [split for split, path in named.items() if Path(path) == target]
        values |= {f"prepare.{name}.files.{split}": None for split in gone}
        if gone and len(gone) == len(named):
            values[f"prepare.{name}.source"] = default.source
            in_domain = (section.get("in_domain") or {}).get("files")
            columns = ["label_column"] if name == "sentiment" else []
            columns += [] if in_domain else ["text_column"]  # in_domain.files read the corpus's column
            values |= {f"prepare.{name}.{column}": None for column in columns}
    return values


def write_reverted(params_file: Path, values: dict[str, object]) -> None:
    """Set `values`; where that brings params_file back to HEAD's values, write HEAD's text itself
    (a round trip keeps each comment where `data add`'s longer line pushed it)."""
    import yaml

    from tinytf.params.schema import set_dotted

    committed = subprocess.run(
        ["git", "show", f"HEAD:./{params_file.as_posix()}"], capture_output=True, text=True
    ).stdout
    now = yaml.safe_load(params_file.read_text(encoding="utf-8"))
    for dotted, value in values.items():
        set_dotted(now, dotted, value)
    if committed and yaml.safe_load(committed) == now:
        files.write_bytes(params_file, committed.encode("utf-8"))
    else:
        write_settings(params_file, values)


def untrack(target: Path) -> str:
    """Take `target` out of git's index (or DVC's, and its .dvc out of git's) and off the disk."""
    unstage = ["git", "rm", "--cached", "--quiet", "--ignore-unmatch", "--"]
    dvc_file = Path(f"{target}.dvc")
    if dvc_file.exists():
        run([dvc_quiet.dvc_executable(), "remove", "--quiet", str(dvc_file)])  # and its .gitignore line
        run([*unstage, str(dvc_file)])
        ignore = target.parent / ".gitignore"  # its line gone, or the file with it when it was the last
        run(["git", "add", "--", str(ignore)] if ignore.exists() else [*unstage, str(ignore)])
        done = f"{dvc_file} removed"
    else:
        run([*unstage, str(target)])
        done = "unstaged"
    target.unlink(missing_ok=True)
    return f"{target} {done} and deleted"


def remove_command(args) -> None:
    from tinytf.params.config import load_params

    target, params_file = destination(Path(args.file)), Path(args.params)
    values = reverted(params_file, target)
    if not values and not target.exists() and not Path(f"{target}.dvc").exists():
        raise DataError(f"{target}: not in data/raw/ and named by no prepare key: nothing to remove")
    load_params(params_file, values)  # the stages' own checks, before anything changes
    if values:
        with files.not_written(
            params_file, f", so it is as it was, and so is {target}: run this command again"
        ):
            write_reverted(params_file, values)
        print(f"{params_file}: " + ", ".join(f"{k}={'null' if v is None else v}" for k, v in values.items()))
    print(untrack(target))
