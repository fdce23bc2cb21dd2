"""DVC stage `variants` (a matrix cell) and `variants_table`: see `tinytf.variants`."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
