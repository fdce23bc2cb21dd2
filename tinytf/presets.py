"""Named presets: partial params files in `presets/` merged into `params.yaml`.

`tinytf preset tiny` makes the pipeline run in seconds (the end-to-end tests use it);
larger presets size the study for GPU runners. The merge keeps params.yaml's comments
(ruamel round-trip), and the merged result is validated before the file is replaced.
"""

from __future__ import annotations

import io
from pathlib import Path

from ruamel.yaml import YAML

from tinytf.config import load_params
from tinytf.errors import ParamsError
from tinytf.io import write_text


def available(preset_dir: Path) -> list[str]:
    return sorted(p.stem for p in preset_dir.glob("*.yaml"))


def _merge(target, updates, prefix: str = "") -> None:
    for key, value in updates.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            if key not in target or not isinstance(target[key], dict):
                target[key] = {}
            _merge(target[key], value, f"{dotted}.")
        else:
            target[key] = value


def apply_preset(
    name: str, params_file: str | Path = "params.yaml", preset_dir: str | Path = "presets"
) -> None:
    params_file, preset_dir = Path(params_file), Path(preset_dir)
    preset = preset_dir / f"{name}.yaml"
    if not preset.exists():
        raise ParamsError(
            f"{preset}: no preset '{name}'; available: {', '.join(available(preset_dir)) or 'none'}"
        )
    if not params_file.exists():
        raise ParamsError(f"{params_file}: file not found")
    yaml = YAML()  # round-trip mode keeps comments and key order
    doc = yaml.load(params_file.read_text(encoding="utf-8"))
    _merge(doc, YAML(typ="safe").load(preset.read_text(encoding="utf-8")) or {})
    buffer = io.StringIO()
    yaml.dump(doc, buffer)
    candidate = params_file.with_name(f".{params_file.name}.preset-check")
    candidate.write_text(buffer.getvalue(), encoding="utf-8")
    try:
        load_params(candidate)  # refuse a preset that would make params.yaml invalid
    except ParamsError as exc:
        raise ParamsError(f"preset {preset}: {exc}".replace(str(candidate), str(params_file))) from None
    finally:
        candidate.unlink(missing_ok=True)
    write_text(params_file, buffer.getvalue())
