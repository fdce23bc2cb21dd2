"""A stage run's record (`--record`, a DVC output): its wall time, the commit and the code changed from
it, the machine and the tools' versions, so the report says where and how long every output was made,
also when DVC restored it from its cache. Without torch: a GPU is named only if the stage used CUDA."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tinytf.system.cpu import bf16_units, cpu_model

# what a run's results depend on besides the data: a change here that is not committed is named
CODE = ("dvc.yaml", "params.yaml", "pyproject.toml", "stages", "tinytf", "presets")
TOOLS = ("torch", "dvc", "mlflow")
SHOWN_CHANGES = 10


def git(root: Path, *args: str, timeout: float = 20) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def code_state(root: Path) -> dict:
    """{"commit", "changed"}: HEAD, and the code files (CODE) that differ from it (a temporary DVC
    experiment's params.yaml, say); commit None outside a git checkout."""
    head = git(root, "rev-parse", "HEAD")
    status = git(root, "status", "--porcelain", "--untracked-files=no", "--", *CODE) or ""
    changed = sorted(line[3:] for line in status.splitlines() if line[3:])
    return {"commit": head.strip() if head else None, "changed": changed[:SHOWN_CHANGES]}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_used() -> str | None:
    """The CUDA device's name when this process used CUDA (torch already imported and initialised)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    return torch.cuda.get_device_name(torch.cuda.current_device())


def run_record(stage: str, seconds: float, root: Path | None = None) -> dict:
    return {
        "stage": stage,
        "seconds": round(seconds, 1),
        "finished": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **code_state(root or Path.cwd()),
        "machine": {
            "cpu": cpu_model(),
            "bf16_units": bf16_units(),
            "cores": os.cpu_count(),
            "gpu": gpu_used(),
        },
        "versions": {"python": platform.python_version(), **{tool: _version(tool) for tool in TOOLS}},
    }
