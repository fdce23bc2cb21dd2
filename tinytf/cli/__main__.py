"""`python -m tinytf.cli`: the console script without its installed entry point."""

import sys

from tinytf.cli.main import main

sys.exit(main())
