"""`pretrain.launcher`: the program that starts the pretrain stage, as a list of arguments, never
shell text (where `python; touch X` would run as a command): dvc.yaml runs `python stages/pretrain.py`,
which starts itself again under the launcher (tinytf.train.distributed.relaunch). Only torchrun with
the flags below is accepted, each value a plain word.
"""

from __future__ import annotations

import re

from tinytf.errors import ParamsError

# torchrun's flags a single- or multi-node DDP run needs (torch.distributed.run --help); both
# spellings torchrun takes, `--flag=value` only, so a value can never be taken for another flag
FLAGS_WITH_VALUE = set(
    "nproc_per_node nnodes node_rank master_addr master_port rdzv_backend rdzv_endpoint rdzv_id "
    "max_restarts monitor_interval".split()
)
FLAGS_ALONE = {"standalone"}
VALUE = re.compile(r"[A-Za-z0-9_.:-]{1,100}")  # a number, host:port, backend name or run id
EXAMPLE = "[torchrun, --nproc_per_node=8]"


def check_launcher(value: object, key: str, file: str) -> list[str]:
    """The launcher as a list of arguments: [] (plain python) or ["torchrun", "--flag=value", ...]."""
    if isinstance(value, str):
        raise ParamsError(
            f"{file}: {key}: a list of arguments, not a string (got {value!r}); "
            f"write [] for python or e.g. {EXAMPLE}"
        )
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParamsError(f"{file}: {key}: expected a list of strings such as {EXAMPLE}, got {value!r}")
    if not value:
        return []
    if value[0] != "torchrun":
        raise ParamsError(f"{file}: {key}: the first argument must be torchrun, got {value[0]!r}")
    for arg in value[1:]:
        if not arg.startswith("--"):
            raise ParamsError(f"{file}: {key}: {arg!r} is not a --flag; e.g. {EXAMPLE}")
        name, eq, val = arg[2:].partition("=")
        name = name.replace("-", "_")
        if name in FLAGS_ALONE and not eq:
            continue
        if name not in FLAGS_WITH_VALUE or not eq:
            known = ", ".join(f"--{f}=VALUE" for f in sorted(FLAGS_WITH_VALUE)) + ", --standalone"
            raise ParamsError(f"{file}: {key}: {arg!r} is not an allowed torchrun flag; allowed: {known}")
        if not VALUE.fullmatch(val):
            raise ParamsError(
                f"{file}: {key}: {arg!r}: the value must be letters, digits, '.', ':', '_' or '-'"
            )
    return list(value)
