"""Names that params give to things outside tinytf, checked before a stage starts: torch.optim's
optimizers (read without importing torch) and MLflow's registered models (without importing mlflow,
which the core runs without)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from tinytf.errors import ParamsError

# a name MLflow registers and that tinytf's models:/NAME@ALIAS URIs and search filters can carry:
# MLflow refuses '/', ':', '%' and names that a path would normalise to another; '@' would split an
# alias URI and a quote break the filter `name = '...'`
REGISTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,255}")


def check_registry_name(name: str, key: str, file: str) -> None:
    if not REGISTRY_NAME.fullmatch(name) or ".." in name:
        raise ParamsError(
            f"{file}: {key}: {name!r} is not a registered model name: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 256 characters, no '..'"
        )


def optimizer_names() -> list[str]:
    """torch.optim's optimizer classes, read from its `__all__` without importing torch (a cost every
    matrix cell's params check would pay), else imported; tests/unit/params checks both agree."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("torch")
    try:
        init = Path(next(iter(spec.submodule_search_locations))) / "optim" / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        listed = next(
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
        )
        return [n for n in listed if n[:1].isupper() and n != "Optimizer"]
    except (TypeError, AttributeError, StopIteration, OSError, SyntaxError, ValueError):
        return optimizer_classes()


def optimizer_classes() -> list[str]:
    """The same list from the imported module."""
    import torch.optim

    return [
        n
        for n in dir(torch.optim)
        if isinstance(getattr(torch.optim, n), type)
        and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)
        and n != "Optimizer"
    ]


def check_optimizers(names: list[str], key: str, file: str) -> None:
    known = optimizer_names()
    for name in names:
        if name not in known:
            by_lower = {k.lower(): k for k in known}  # "adamw" should suggest AdamW, not Adam
            guess = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
            hint = f" (did you mean '{by_lower[guess[0]]}'?)" if guess else ""
            raise ParamsError(f"{file}: {key}: '{name}' is not a torch.optim optimizer{hint}")
