"""Named presets, run the DVC way: `presets/NAME.yaml` holds partial params, and
`tinytf preset NAME` runs them as a DVC experiment, `dvc exp run -S key=value ...`.

params.yaml in git is never rewritten by a preset: the experiment records the preset's values,
so `dvc exp show` and `dvc params diff` show exactly what it changed, and `dvc exp apply` or
`dvc exp branch` keeps it. Everything after the name goes to `dvc exp run` (`--temp` leaves the
workspace as it is, `--queue` queues the run, `-S key=value` overrides the preset, a stage name
runs up to that stage). The preset is validated against params.yaml before DVC starts, so a bad
key stops with its name and the preset's file, not in the middle of a pipeline.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tinytf.config import load_params
from tinytf.errors import ParamsError


def available(preset_dir: Path) -> list[str]:
    return sorted(p.stem for p in preset_dir.glob("*.yaml"))


def _leaves(values: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_leaves(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def preset_values(name: str, preset_dir: str | Path = "presets") -> dict:
    """The preset's values by dotted key."""
    preset_dir = Path(preset_dir)
    path = preset_dir / f"{name}.yaml"
    if not path.exists():
        raise ParamsError(
            f"{path}: no preset '{name}'; available: {', '.join(available(preset_dir)) or 'none'}"
        )
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(values, dict):
        raise ParamsError(f"{path}: expected a mapping of params sections")
    return _leaves(values)


def set_args(
    name: str, params_file: str | Path = "params.yaml", preset_dir: str | Path = "presets"
) -> list[str]:
    """`-S key=value` arguments of `dvc exp run` for the preset, checked against params_file first."""
    values = preset_values(name, preset_dir)
    try:
        load_params(params_file, values)
    except ParamsError as exc:
        raise ParamsError(f"preset {Path(preset_dir) / f'{name}.yaml'}: {exc}") from None
    # JSON is YAML, which is how DVC reads a -S value: lists, numbers and strings stay themselves
    return [arg for key, value in values.items() for arg in ("-S", f"{key}={json.dumps(value)}")]


def run_preset(name: str, dvc_args: list[str], params_file: str | Path, preset_dir: str | Path) -> int:
    """Run the preset as a DVC experiment; returns dvc's exit status."""
    arguments = set_args(name, params_file, preset_dir)
    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    command = [dvc, "exp", "run", *arguments, *dvc_args]
    print("tinytf: " + " ".join(command[1:]), file=sys.stderr)
    return subprocess.run(command).returncode
