"""DVC stage `tokenize` (a script named tokenize.py would shadow the stdlib module): see `tinytf.pipeline.tokenize_stage`."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(["tokenize", *sys.argv[1:]]))
