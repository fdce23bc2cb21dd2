"""`python -m tinytf.cli.dvc_quiet ARGS`: `dvc ARGS` less one warning, for `tinytf exp` and `preset`.

Before it reproduces anything, `dvc exp run` checks the declared outputs out into its copy
(allow_missing), and warns "No file hash info found for '<path>'. It won't be created." for each
one dvc.lock has no entry for: every output of stages that have not run with these params yet,
which is what the experiment is about to make. A fresh clone's first `tinytf preset tiny` printed
dozens. DVC has no setting for it, so a filter on the two loggers that say it drops that message
alone; DVC runs in this process, its terminal and every other line as `dvc` gives them.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import sys
from pathlib import Path

MESSAGE = "No file hash info found for "
LOGGERS = ("dvc_data.index.checkout", "dvc_data.hashfile.checkout")


def available() -> bool:
    """Whether this Python has DVC (else `tinytf` runs the `dvc` on PATH, warnings and all)."""
    return importlib.util.find_spec("dvc") is not None


def dvc_executable() -> str:
    """The `dvc` beside this Python (its venv) when it is not on PATH."""
    return shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")


def command() -> list[str]:
    """The command line that runs DVC: this module where DVC is importable here, else `dvc`."""
    return [sys.executable, "-m", __name__] if available() else [dvc_executable()]


def main(argv: list[str]) -> int:
    for name in LOGGERS:
        logging.getLogger(name).addFilter(lambda record: not record.getMessage().startswith(MESSAGE))
    from dvc.cli import main as dvc_main

    return dvc_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
