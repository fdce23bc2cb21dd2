"""tinytf's layers: imports run one way, nothing but the edge (`tracking`, the champion) touches mlflow, no import
circle, and the core imports and runs where mlflow and dvc are not installed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO

PACKAGE = REPO / "tinytf"
# beside the layers, importable by all
TOP = {"params", "system", "errors", "io"}
# what each layer may import besides itself and TOP (read: data and model at the bottom,
# report at the top; `tracking`, the CLI and stages/ sit at the edge, above everything)
ALLOWED = {
    "data": set(),
    "model": set(),
    "train": {"data", "model"},
    "analysis": {"data", "model"},
    "course": {"data", "model"},
    # the report quotes analysis's statistics (the power bound) rather than keeping a copy
    "report": {"data", "model", "analysis"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {m for m in found if m in modules or not m.startswith("tinytf")}


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_layers_import_only_downwards():
    wrong = []
    for name, path in MODULES.items():
        here = layer(name)
        if here not in ALLOWED:
            continue
        for target in imports_of(path):
            there = layer(target)
            if target.startswith("tinytf.") and there not in {here, *TOP, *ALLOWED[here]}:
                wrong.append(f"{name} imports {target}")
    assert not wrong, wrong


EDGE = {
    "tinytf.tracking.runs",
    "tinytf.tracking.connect",
    "tinytf.tracking.champion",
    "tinytf.tracking.champion_model",
    "tinytf.tracking.promotion",
    "tinytf.cli.serve",  # MLflow's scoring app behind tinytf's request checks
    "tinytf.tracking.store",
    "tinytf.tracking.study",
    "tinytf.tracking.finetune_runs",
    "tinytf.tracking.registry",  # evaluate's register-and-gate, over champion and promotion
}  # the modules that import mlflow


# the command line's entry: it reaches the edge's commands (lazily, or `serve`'s parser) but never
# imports mlflow itself
CLI_ENTRY = {"tinytf.cli.main", "tinytf.cli.parser"}


def test_only_the_edge_imports_mlflow_and_no_core_module_imports_the_edge():
    for name, path in MODULES.items():
        imported = imports_of(path)
        if name not in EDGE | CLI_ENTRY:
            assert not any(m == "mlflow" or m.startswith("mlflow.") for m in imported), name
            assert not imported & EDGE, name
        elif name in CLI_ENTRY:
            assert not any(m == "mlflow" or m.startswith("mlflow.") for m in imported), name
        if name != DVC_EDGE:
            assert not any(m == "dvc" or m.startswith("dvc.") for m in imported), name


# the one module that runs DVC in this process (`tinytf exp`/`preset`, to drop one warning): the
# rest of tinytf starts DVC as a command, so it imports and runs without DVC installed
DVC_EDGE = "tinytf.cli.dvc_quiet"


def test_no_import_circle():
    graph = {
        name: {m for m in imports_of(path) if m in MODULES and m != name} for name, path in MODULES.items()
    }
    # a package's __init__ is not a dependency of its own modules' imports here
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(trail[trail.index(nxt) :] + [nxt]))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])


def test_core_imports_without_mlflow_or_dvc():
    core = [
        m for m in MODULES if m not in EDGE | {DVC_EDGE} and not m.endswith(".__main__")
    ]  # __main__ runs the CLI
    code = (
        "import sys\n"
        "sys.modules['mlflow'] = None\n"  # makes `import mlflow` raise ImportError
        "sys.modules['dvc'] = None\n"
        f"for name in {core!r}:\n"
        "    __import__(name)\n"
        "from tinytf.model.architecture import ModelConfig\n"
        "from tinytf.model.transformer import TinyTransformer\n"
        "import torch\n"
        "model = TinyTransformer(ModelConfig(vocab_size=50, d_model=16, n_head=2, d_ff=32, n_layer=1))\n"
        "print(model.forward_lm(torch.randint(0, 50, (1, 8))).shape)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "torch.Size([1, 8, 50])" in result.stdout
