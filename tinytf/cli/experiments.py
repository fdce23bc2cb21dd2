"""`tinytf exp ...`: `dvc exp run ...` with its overrides checked before DVC writes them.

A workspace `dvc exp run -S key=value` writes the value into params.yaml before any stage runs,
so a value the schema rejects stays there and every later run fails until the file is edited by
hand. Here every `-S` is checked against params.yaml first, and a rejected one stops with the
schema's line and exit 2, params.yaml untouched. A temporary or queued experiment runs in a copy
of what git tracks: a data file the params name that git does not track (nor a `.dvc` file) is
refused in one line that says how to track it, instead of failing later as "file not found".
`tinytf preset` runs the same checks.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from tinytf.errors import ParamsError
from tinytf.params.config import Params, load_params
from tinytf.params.prepare import FileSplits
from tinytf.params.schema import parse_overrides

SET_FLAGS = ("-S", "--set-param")


def dvc_executable() -> str:
    """The `dvc` beside this Python (its venv) when it is not on PATH."""
    return shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")


def overrides(dvc_args: list[str], params_file: str | Path = "params.yaml") -> dict:
    """{dotted key: value} of the `-S key=value` arguments that set `params_file`'s keys, as DVC
    reads them (YAML values; Hydra's `+` adds a key, which is checked the same; `~key` deletes
    one, left to the schema's defaults)."""
    items = []
    for i, arg in enumerate(dvc_args):
        if arg in SET_FLAGS and i + 1 < len(dvc_args):
            value = dvc_args[i + 1]
        elif arg.startswith(tuple(f"{flag}=" for flag in SET_FLAGS)):
            value = arg.split("=", 1)[1]
        else:
            continue
        file, colon, rest = value.partition(":")
        if colon and "=" not in file:  # -S other.yaml:key=value sets another params file
            if Path(file).name != Path(params_file).name:
                continue
            value = rest
        if not value.startswith("~"):
            items.append(value.removeprefix("+"))
    try:
        return parse_overrides(items)
    except ParamsError as exc:
        raise ParamsError(str(exc).replace("--set", "-S", 1)) from None


def data_files(params: Params) -> list[str]:
    """Every data file the params name (`prepare`'s files, the corpus's extra files)."""
    prepare = params.prepare
    named = [
        getattr(s.files, f.name) for s in (prepare.corpus, prepare.sentiment) for f in fields(FileSplits)
    ]
    return [str(p) for p in [*named, *prepare.corpus.in_domain.files] if p]


def _tracked(path: str, root: Path) -> bool:
    for candidate in (path, f"{path}.dvc"):
        listed = subprocess.run(
            ["git", "ls-files", "--error-unmatch", candidate], cwd=root, capture_output=True, text=True
        )
        if listed.returncode == 0:
            return True
    return False


def check_tracked(params: Params, root: Path = Path(".")) -> None:
    """Refuse, naming the file and the commands that track it, a data file a copy would not have."""
    for path in data_files(params):
        if (root / path).exists() and not _tracked(path, root):
            raise ParamsError(
                f"{path}: not tracked, and a temporary or queued experiment copies only what git tracks: "
                f"`git add {path}` (a large file: `dvc add {path} && git add {path}.dvc`), or run it in the "
                "workspace (without --temp or --queue)"
            )


def check_experiment(
    dvc_args: list[str], params_file: str | Path, in_copy: bool, preset: dict | None = None
) -> None:
    """The checks before `dvc exp run`: the overrides (after a preset's values), and for a run in
    a copy (temporary or queued), the data files tracked."""
    params = load_params(params_file, {**(preset or {}), **overrides(dvc_args, params_file)})
    if in_copy:
        check_tracked(params, Path(params_file).resolve().parent)


def run_experiment(dvc_args: list[str], params_file: str | Path = "params.yaml") -> int:
    try:
        check_experiment(dvc_args, params_file, bool({"--temp", "--queue"} & set(dvc_args)))
    except ParamsError as exc:
        raise ParamsError(f"{exc} (nothing ran; {params_file} is as it was)") from None
    command = [dvc_executable(), "exp", "run", *dvc_args]
    print("tinytf: " + " ".join(command[1:]), file=sys.stderr)
    return subprocess.run(command).returncode
