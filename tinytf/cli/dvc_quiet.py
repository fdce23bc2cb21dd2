"""`python -m tinytf.cli.dvc_quiet ARGS`: `dvc ARGS` less one warning, for `tinytf exp` and `preset`.

`dvc exp run` warns "No file hash info found for '<path>'. It won't be created." for every output
dvc.lock has no entry for yet: exactly what the experiment is about to make (dozens in a fresh
clone). DVC has no setting for it, so a filter on the two loggers that say it drops that message.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

MESSAGE = "No file hash info found for "
LOGGERS = ("dvc_data.index.checkout", "dvc_data.hashfile.checkout")


def dvc_executable() -> str:
    """The `dvc` beside this Python (its venv) when it is not on PATH."""
    return shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")


def command() -> list[str]:
    """This module where DVC is importable here, else `dvc` (warnings and all)."""
    return [sys.executable, "-m", __name__] if importlib.util.find_spec("dvc") else [dvc_executable()]


def main(argv: list[str]) -> int:
    import logging  # here: `tinytf --help` reaches this module and should not import it

    for name in LOGGERS:
        logging.getLogger(name).addFilter(lambda record: not record.getMessage().startswith(MESSAGE))
    from dvc.cli import main as dvc_main

    return dvc_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
