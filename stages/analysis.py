"""DVC stages `probes` and `complexity` (seeds 004 §1 and 003): see `tinytf.pipeline`."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
