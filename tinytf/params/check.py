"""`python -m tinytf.params.check [FILE]` (and `tinytf check`): validate a params file and stop.

DVC puts the matrix values of `grid` and `variants` into their shell lines, and `dvc exp run -S`
writes its values into params.yaml first. So those stages run this as a command of its own
before the line that carries the values: a value that is not a number or a known name (`SGD;
touch X`) stops the cell here, in one line naming the key, before any shell reads it. The
Makefile's `repro` runs it before `dvc repro`, whose own reading of params.yaml an alias bomb
would hold for minutes (tinytf.params.schema.read_yaml refuses one at once).
"""

from __future__ import annotations

import argparse
import sys

from tinytf.errors import TinyTFError
from tinytf.params.config import load_params
from tinytf.params.schema import parse_overrides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinytf.params.check", description=__doc__)
    parser.add_argument("file", nargs="?", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        load_params(args.file, parse_overrides(args.overrides))
    except TinyTFError as exc:
        print(f"tinytf: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
