"""`tinytf deps`: dvc.yaml's code deps, computed instead of typed.

The closure is found by the standard library's `modulefinder`, which reads every code object, so
an import inside a function counts: it over-approximates one run, the safe side for deps. Its
search path holds only the project, so third-party imports are not followed.
"""

from __future__ import annotations

import modulefinder
import re
from pathlib import Path

import yaml

from tinytf.cli import files
from tinytf.errors import ParamsError
from tinytf.params.pipeline import dvc_stages


def closure(script: Path, root: Path) -> set[Path]:
    """Every project file `script` reaches, itself included, as paths relative to `root`."""
    root = root.resolve()
    script = script if script.is_absolute() else root / script
    finder = modulefinder.ModuleFinder(path=[str(script.parent), str(root)])
    finder.run_script(str(script))
    files = {Path(m.__file__).resolve() for m in finder.modules.values() if m.__file__}
    return {f.relative_to(root) for f in files if f.is_relative_to(root)}


def is_code(path: str) -> bool:
    return path.endswith(".py") and path.startswith(("stages/", "tinytf/"))


def scripts_of(stage: dict) -> list[Path]:
    """The stage script and every module its commands run (`python -m tinytf.params.check`)."""
    commands = [stage["cmd"]] if isinstance(stage["cmd"], str) else stage["cmd"]
    scripts = []
    for words in (command.split() for command in commands):
        scripts += [Path(w) for w in words if w.startswith("stages/") and w.endswith(".py")]
        modules = [b for a, b in zip(words, words[1:], strict=False) if a == "-m"]
        scripts += [Path(*m.split(".")).with_suffix(".py") for m in modules]
    return scripts


def code_deps(stage: dict, root: Path) -> list[str]:
    """The sorted project files the stage's commands reach."""
    return sorted({p.as_posix() for script in scripts_of(stage) for p in closure(script, root)})


def differences(root: Path = Path("."), dvc_file: str = "dvc.yaml") -> dict[str, tuple[list, list]]:
    """Per stage whose deps are wrong: (files reached but not listed, code listed but not reached)."""
    stages = _stages(root / dvc_file)
    out = {}
    for name, stage in stages.items():
        reached = set(code_deps(stage, root))
        listed = {d for d in stage.get("deps", []) if isinstance(d, str)}
        missing = sorted(reached - listed)
        stale = sorted(d for d in listed if is_code(d) and d not in reached)
        if missing or stale:
            out[name] = (missing, stale)
    return out


# where a stage's generated code deps start: its data deps come first, so the data flow reads top down
MARKER = "      # code: every project module the commands reach (tinytf deps --write)"


def _laid_out(block: list[str], stage: dict, root: Path) -> list[str]:
    """The stage's block with its deps as data deps, the marker, then the sorted code deps."""
    if "    deps:" not in block:
        return block
    first = block.index("    deps:") + 1
    last = first
    while last < len(block) and (block[last].startswith("      - ") or block[last] == MARKER):
        last += 1  # the deps list: one `- path` a line, up to the next key
    listed = [line for line in block[first:last] if line != MARKER]
    data = [line for line in listed if not is_code(line.removeprefix("      - ").strip())]
    code = [f"      - {p}" for p in code_deps(stage, root)]
    return block[:first] + data + ([MARKER] + code if code else []) + block[last:]


def write(root: Path = Path("."), dvc_file: str = "dvc.yaml") -> list[str]:
    """Rewrite every stage's code deps to its closure, after its data deps; the stages changed."""
    path = root / dvc_file
    stages = _stages(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    changed = []
    for name, stage in stages.items():
        start = lines.index(f"  {name}:")
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"^ {0,2}\S", lines[i])), len(lines))
        block = _laid_out(lines[start:end], stage, root)
        if block != lines[start:end]:
            lines[start:end] = block
            changed.append(name)
    if not changed:
        return []
    with files.not_written(path, ", so it is as it was; run this again", ParamsError):
        files.write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))  # never half a dvc.yaml
    return sorted(changed)


def _stages(path: Path) -> dict:
    try:
        return dvc_stages(path)
    except (OSError, yaml.YAMLError) as exc:
        raise ParamsError(f"{path}: cannot read it ({exc})") from None


def deps_command(write_file: bool) -> int:
    """Print what differs (exit 1), or nothing (exit 0); with --write, fix it and say where."""
    if write_file:
        for name in write():
            print(f"dvc.yaml: stage {name}: code deps rewritten")
        return 0
    wrong = differences()
    for name, (missing, stale) in wrong.items():
        if missing:
            print(f"dvc.yaml: stage {name} imports {', '.join(missing)}, not listed as deps")
        if stale:
            print(f"dvc.yaml: stage {name} lists {', '.join(stale)}, which it never imports")
    if wrong:
        print("tinytf deps --write fixes them", flush=True)
    return 1 if wrong else 0
