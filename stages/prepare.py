"""DVC stage `prepare`: see `tinytf.pipeline.prepare_stage` and the `prepare:` section of params.yaml."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(["prepare", *sys.argv[1:]]))
