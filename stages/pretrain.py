"""DVC stage `pretrain`: see `tinytf.pipeline.pretrain_stage` and the `model:` / `pretrain:` sections."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(["pretrain", *sys.argv[1:]]))
