"""DVC stage `report`: see `tinytf.report.build_report`; reads upstream outputs only."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(["report", *sys.argv[1:]]))
