"""DVC stage(s) `finetune`: see `tinytf.pipeline` and the `finetune:` section of params.yaml."""

import sys

from tinytf.cli import main

if __name__ == "__main__":
    sys.exit(main(["finetune", *sys.argv[1:]]))
