"""`tinytf exp ...`: `dvc exp run ...` with every `-S` checked before DVC writes it.

DVC writes a workspace `-S` into params.yaml before any stage runs, so a rejected value would stay
there and fail every later run. Here each `-S` is read as DVC reads it (FILE:KEY=VALUE, then Hydra's
override grammar) and checked against params.yaml first; a temporary or queued experiment (a copy of
what git tracks) also needs the data files the params name tracked. `tinytf preset` runs the same
checks."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path

from tinytf.cli import dvc_quiet
from tinytf.cli.forecast import forecast
from tinytf.cli.workspace import workspace_lock, write_settings, yaml_value
from tinytf.errors import ParamsError
from tinytf.params.config import Params, load_params
from tinytf.params.prepare import FileSplits
from tinytf.params.schema import read_yaml

SET_FLAGS = ("-S", "--set-param")
DVC_PARAMS = "params.yaml"  # the file a `-S` without FILE: sets (DVC's default params file)
SYNTAX = "https://hydra.cc/docs/advanced/override_grammar/basic/"


@dataclass(frozen=True)
class Setting:
    """One `-S` argument, split as DVC splits it (dvc.utils.cli_parse.to_path_overrides)."""

    given: str  # as typed, for messages
    file: str  # the params file it edits
    override: str  # KEY=VALUE, +KEY=VALUE, ~KEY: Hydra's override grammar, which DVC reads it with


def _set_spans(dvc_args: list[str]) -> list[tuple[int, int, str]]:
    """(index, how many arguments, value) of every `-S`/`--set-param` in dvc_args, in order."""
    spans, i = [], 0
    while i < len(dvc_args):
        arg = dvc_args[i]
        if arg in SET_FLAGS and i + 1 < len(dvc_args):
            spans.append((i, 2, dvc_args[i + 1]))
            i += 2
            continue
        if arg.startswith(tuple(f"{flag}=" for flag in SET_FLAGS)):
            spans.append((i, 1, arg.split("=", 1)[1]))
        i += 1
    return spans


def set_items(dvc_args: list[str]) -> list[str]:
    """The values of every `-S`/`--set-param` in dvc_args, in order."""
    return [item for _, _, item in _set_spans(dvc_args)]


def _split(item: str) -> tuple[str, str]:
    """(params file, override) as DVC splits a -S item: a colon before the `=` ends a file name."""
    name = item.partition("=")[0]
    file, _, override = item.partition(":") if ":" in name else (DVC_PARAMS, "", item)
    return file, override


def settings(dvc_args: list[str]) -> list[Setting]:
    """Every `-S` of dvc_args; one without `=` (but `~KEY`) is refused: DVC would read `key:value` as
    FILE:OVERRIDE and fail on a file named `key` with an "unexpected error"."""
    out = []
    for item in set_items(dvc_args):
        file, override = _split(item)
        if "=" not in override and not override.startswith("~"):
            raise ParamsError(
                f"-S {item!r}: expected KEY=VALUE, e.g. -S tokenize.vocab_size=4000 "
                "(FILE:KEY=VALUE sets another params file; ~KEY deletes a key)"
            )
        out.append(Setting(item, file, override))
    return out


def parsed(setting: Setting):
    """The setting as DVC parses it (a hydra Override); one line naming it when DVC cannot."""
    # hydra itself, as dvc.utils.hydra calls it: tinytf imports no dvc module (tests/contract)
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import OverrideParseException

    try:
        [override] = OverridesParser.create().parse_overrides([setting.override])
    except OverrideParseException as exc:
        said = next((line for line in str(exc).splitlines() if not line.startswith(("See ", "Error "))), "")
        raise ParamsError(
            f"-S {setting.given!r}: not a value DVC reads ({said.strip()}); write YAML-like values, e.g. "
            f"-S 'finetune.seeds=[1,2]', and quote a string holding a space, comma or bracket: "
            f"-S \"key='a, b'\" (the grammar: {SYNTAX})"
        ) from None
    if override.value_type == ValueType.GLOB_CHOICE_SWEEP:
        raise ParamsError(f"-S {setting.given!r}: DVC does not run glob() sweeps; list the values: KEY=A,B")
    return override


def experiments(dvc_args: list[str], params_file: str | Path = DVC_PARAMS) -> list[dict]:
    """{dotted key: value} of the `-S` arguments that set `params_file`'s keys, as DVC reads them,
    one dict per experiment: a sweep (`KEY=A,B`, `range()`, `choice()`) with --queue gives one per
    combination, expanded as DVC's get_hydra_sweeps does; without --queue DVC refuses it, so here too."""
    given = [(setting, parsed(setting)) for setting in settings(dvc_args)]
    sweeps = [setting for setting, override in given if override.is_sweep_override()]
    if sweeps and "--queue" not in dvc_args:
        raise ParamsError(
            f"-S {sweeps[0].given!r}: a sweep (one experiment per value) runs only queued: add --queue, "
            "then `dvc queue start`; a list value goes in brackets: -S 'finetune.seeds=[1,2]'"
        )
    # another params file's settings are not ours to check (DVC multiplies their sweeps with ours)
    ours = [override for setting, override in given if Path(setting.file).name == Path(params_file).name]
    if not any(override.is_sweep_override() for override in ours):
        return [_values(ours)]
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    combinations = BasicSweeper.split_arguments(ours, None)[0]
    return [_values(parser.parse_overrides(combination)) for combination in combinations]


def _values(overrides: list) -> dict:
    return {o.key_or_group: o.value() for o in overrides if not o.is_delete()}


def check_present(dvc_args: list[str], params_file: str | Path) -> None:
    """DVC's -S sets only a key the file holds (`+KEY=VALUE` adds one): refuse the others, saying how."""
    data = read_yaml(Path(params_file))
    for setting in settings(dvc_args):
        if Path(setting.file).name != Path(params_file).name or setting.override.startswith(("+", "~")):
            continue
        node = data
        for part in setting.override.partition("=")[0].strip().split("."):
            if not isinstance(node, dict) or part not in node:
                raise ParamsError(
                    f"-S {setting.given!r}: {params_file} does not list this key, and DVC sets only "
                    f"the keys it lists; add it with -S '+{setting.override}'"
                )
            node = node[part]


def data_files(params: Params) -> list[str]:
    """Every data file the params name (`prepare`'s files, the corpus's extra files)."""
    prepare = params.prepare
    named = [
        getattr(s.files, f.name) for s in (prepare.corpus, prepare.sentiment) for f in fields(FileSplits)
    ]
    return [str(p) for p in [*named, *prepare.corpus.in_domain.files] if p]


def _tracked(path: str, root: Path) -> bool:
    ls_files = ["git", "ls-files", "--error-unmatch"]
    runs = (subprocess.run([*ls_files, p], cwd=root, capture_output=True) for p in (path, f"{path}.dvc"))
    return any(run.returncode == 0 for run in runs)


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
    """The checks before `dvc exp run`: every experiment's overrides (after a preset's values), and
    for a run in a copy (temporary or queued), the data files tracked."""
    runs = experiments(dvc_args, params_file)
    for values in runs:
        try:
            params = load_params(params_file, {**(preset or {}), **values})
        except ParamsError as exc:
            if len(runs) == 1:
                raise
            sets = ", ".join(f"{key}={value}" for key, value in values.items())
            raise ParamsError(f"the sweep's experiment {sets}: {exc}") from None
        if in_copy:
            check_tracked(params, Path(params_file).resolve().parent)
    check_present(dvc_args, params_file)


def set_in_workspace(dvc_args: list[str], params_file: str | Path, preset: dict | None = None) -> list[str]:
    """Write the preset's values and params_file's `-S` settings into it (one line each, comments
    kept); returns the arguments left for `dvc exp run`. Under the workspace lock, after the checks."""
    ours = [span for span in _set_spans(dvc_args) if Path(_split(span[2])[0]).name == Path(params_file).name]
    overrides = [parsed(Setting(item, *_split(item))) for _, _, item in ours]
    values = {**(preset or {}), **_values(overrides)}
    deleted = [o.key_or_group for o in overrides if o.is_delete()]
    if values or deleted:
        write_settings(params_file, values, deleted)
        said = [f"{k}={yaml_value(v)}" for k, v in values.items()] + [f"~{k}" for k in deleted]
        print(f"tinytf: {params_file}: {', '.join(said)}", file=sys.stderr)
    dropped = {j for i, width, _ in ours for j in range(i, i + width)}
    return [arg for j, arg in enumerate(dvc_args) if j not in dropped]


def run_experiment(dvc_args: list[str], params_file: str | Path = "params.yaml") -> int:
    in_copy = bool({"--temp", "--queue"} & set(dvc_args))
    try:
        check_experiment(dvc_args, params_file, in_copy)
    except ParamsError as exc:
        raise ParamsError(f"{exc} (nothing ran; {params_file} is as it was)") from None
    root = Path(params_file).resolve().parent
    with workspace_lock(root):
        if note := forecast(root, set_items(dvc_args)):  # a fresh clone runs every stage
            print(note, file=sys.stderr)
        if not in_copy:  # DVC's own -S would rewrite some hundred lines of params.yaml
            dvc_args = set_in_workspace(dvc_args, params_file)
        command = ["exp", "run", *dvc_args]
        print("tinytf: " + " ".join(command), file=sys.stderr)
        return subprocess.run([*dvc_quiet.command(), *command]).returncode
