"""DVC stage(s) `grid`: see `tinytf.pipeline` and the `grid:` section of params.yaml."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
