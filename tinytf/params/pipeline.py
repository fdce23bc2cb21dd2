"""dvc.yaml, read in one place for the stage scripts, `tinytf run` and `tinytf deps`: the stages, the
params keys a stage declares, the stage whose outputs hold a path, and a stage's command lines
with `${}` resolved as DVC resolves them (a matrix: one command per cell)."""

from __future__ import annotations

import fnmatch
import functools
import itertools
import re
import shlex
from pathlib import Path

import yaml

from tinytf.errors import ParamsError
from tinytf.params.schema import set_dotted

DVC_FILE = Path("dvc.yaml")


def dvc_stages(dvc_file: Path = DVC_FILE) -> dict:
    """dvc.yaml's `stages:`, parsed once per file version: its --help, params and errors read it."""
    stat = dvc_file.stat()
    return _parsed_stages(dvc_file.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _parsed_stages(path: Path, mtime_ns: int, size: int) -> dict:
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages", {})


def declared_keys(stage: str, dvc_file: Path = DVC_FILE) -> list[str]:
    """The `params:` entries of `stage` in dvc.yaml (a matrix stage's entries apply to every cell)."""
    if not dvc_file.exists():
        raise ParamsError(f"{dvc_file}: not found; run stages from the repository root")
    stages = dvc_stages(dvc_file)
    if stage not in stages:
        raise ParamsError(f"{dvc_file}: no stage '{stage}'")
    keys = stages[stage].get("params", [])
    if not all(isinstance(k, str) for k in keys):
        raise ParamsError(f"{dvc_file}: stage '{stage}': params must be plain keys of params.yaml")
    return list(keys)  # a copy: the parsed file is shared


def writer_of(path: str | Path, dvc_file: Path = DVC_FILE) -> str | None:
    """The dvc.yaml stage whose outs hold `path` (a matrix stage's cells match any value)."""
    try:
        relative = Path(path).absolute().relative_to(Path.cwd())
        stages = dvc_stages(dvc_file)
    except (ValueError, OSError, yaml.YAMLError):
        return None
    for stage, spec in stages.items():
        for out in spec.get("outs", []):
            pattern = re.sub(r"\$\{[^}]*\}", "*", next(iter(out)) if isinstance(out, dict) else out)
            if fnmatch.fnmatch(str(relative), pattern) or fnmatch.fnmatch(str(relative), pattern + "/*"):
                return stage
    return None


def stage_commands(
    stage: str,
    dvc_file: str | Path = DVC_FILE,
    params_file: str | Path = "params.yaml",
    overrides: dict | None = None,
):
    """The command lines of `stage` in dvc.yaml: one, or one per cell of its `matrix:`, the cells
    those of params_file with `overrides` (dotted key: value) applied, as `dvc exp run -S` makes them."""
    dvc_file, params_file = Path(dvc_file), Path(params_file)
    if not dvc_file.exists():
        raise ParamsError(f"{dvc_file}: not found; run from the repository root")
    stages = dvc_stages(dvc_file)
    if stage not in stages:
        raise ParamsError(f"{dvc_file}: no stage '{stage}'; stages: {', '.join(stages)}")
    cmd, matrix = stages[stage]["cmd"], stages[stage].get("matrix")
    lines = [cmd] if isinstance(cmd, str) else list(cmd)  # a list: commands run in turn
    # a params key, as DVC interpolates it, or one element of a list key: ${pretrain.seeds[0]}
    params_ref = re.compile(r"\$\{(?!item\.)([\w.]+(?:\[\d+\])?)\}")
    if not matrix and not any(params_ref.search(line) for line in lines):
        return [shlex.split(line) for line in lines]
    params = yaml.safe_load(params_file.read_text(encoding="utf-8")) or {}
    for dotted, value in (overrides or {}).items():
        set_dotted(params, dotted, value)

    def resolve(value):  # "${grid.lrs}" -> the list in params.yaml
        ref = re.fullmatch(r"\$\{([\w.]+)(?:\[(\d+)\])?\}", str(value))
        if not ref:
            return value
        node = params
        for part in ref.group(1).split("."):
            node = node[part]
        return node if ref.group(2) is None else node[int(ref.group(2))]

    lines = [params_ref.sub(lambda m: str(resolve(m.group(0))), line) for line in lines]
    if not matrix:
        return [shlex.split(line) for line in lines]
    names = list(matrix)
    commands = []
    for values in itertools.product(*(resolve(matrix[n]) for n in names)):
        item = dict(zip(names, values, strict=True))
        for line in lines:
            line = re.sub(r"\$\{item\.(\w+)\}", lambda m, item=item: str(item[m.group(1)]), line)
            commands.append(shlex.split(line))
    return commands
