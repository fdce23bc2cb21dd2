"""Whether a revision's reports come from its own params: `tinytf compare` blanks the rest.

An experiment run up to one stage (`tinytf preset tiny tokenize`) commits params the later stages
never ran with, beside an older run's `reports/headline.json`. A revision is stale when its dvc.lock
disagrees with itself, as `dvc status` checks, read from the committed files so that no experiment
is checked out.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from collections.abc import Callable

import yaml

# (revision, path) -> the file's text at that revision, None when it has no such file
Reader = Callable[[str, str], "str | None"]


def dig(params: dict, dotted: str):
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _same(a, b) -> bool:
    # DVC writes the lock with a YAML 1.2 loader, so `1e-3` there is a number and here a string
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if a == b:
        return True
    try:
        return not isinstance(a, bool) and not isinstance(b, bool) and float(a) == float(b)
    except (TypeError, ValueError):
        return False


def defined_stages(dvc_file: dict, params: dict) -> list[str]:
    """The stage names dvc.yaml (parsed) defines with these params: a `matrix:` stage gives one
    name per cell, `stage@value-value`, as DVC names them."""
    names = []
    for name, stage in ((dvc_file or {}).get("stages") or {}).items():
        matrix = stage.get("matrix")
        if not matrix:
            names.append(name)
            continue
        axes = []
        for values in matrix.values():
            ref = re.fullmatch(r"\$\{([\w.]+)\}", str(values))
            axes.append(dig(params, ref.group(1)) if ref else values)
        names += [f"{name}@" + "-".join(map(str, cell)) for cell in itertools.product(*axes)]
    return names


def stale_stages(lock: dict, params: dict, defined: list[str]) -> list[str]:
    """The stages of `defined` that `lock` (dvc.lock, parsed) lacks, or records with other values than
    `params`, or as reading a file whose hash is not the one the stage producing it recorded."""
    recorded_stages = (lock or {}).get("stages") or {}
    stages = {name: recorded_stages[name] for name in defined if name in recorded_stages}
    stale = [name for name in defined if name not in recorded_stages]
    produced = {o["path"]: o.get("md5") for s in stages.values() for o in s.get("outs") or []}
    for name, stage in stages.items():
        recorded = (stage.get("params") or {}).get("params.yaml") or {}
        moved = [
            d["path"]
            for d in stage.get("deps") or []
            if d["path"] in produced and d.get("md5") != produced[d["path"]]
        ]
        if moved or any(not _same(dig(params, k), v) for k, v in recorded.items()):
            stale.append(name)
    return stale


def git_reader(rev: str, path: str) -> str | None:
    """A file as the workspace holds it (rev `workspace`) or as commit `rev` does."""
    if rev == "workspace":
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
    result = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def is_stale(rev: str, read: Reader = git_reader) -> bool:
    """True when `rev`'s lock shows a stage that did not run with that revision's inputs; a
    revision without a dvc.lock has run nothing, so its reports are not its own either."""
    texts = [read(rev, path) for path in ("dvc.lock", "params.yaml", "dvc.yaml")]
    if None in texts:
        return True
    lock, params, dvc_file = (yaml.safe_load(text) or {} for text in texts)
    return bool(stale_stages(lock, params, defined_stages(dvc_file, params)))
