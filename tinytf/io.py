"""Atomic file writes and checksums.

Every output goes to a temporary file in the same directory and is renamed into place,
so an interrupted or failing stage never leaves a half-written file behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tinytf.errors import DataError

_UMASK = os.umask(0)
os.umask(_UMASK)


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.

    Under torchrun only rank 0 renames: the other ranks run the same code (so their control
    flow matches) but their copies are dropped, and no two processes replace one file."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except PermissionError:
        raise _unwritable(target) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        try:
            # mkstemp makes the file 0600; give it the permissions a plain open() would have
            os.chmod(tmp, 0o666 & ~_UMASK)
            if os.environ.get("RANK", "0") == "0":  # tinytf.train.distributed.is_main, without torch
                os.replace(tmp, target)
        except PermissionError:
            raise _unwritable(target) from None
    finally:
        tmp.unlink(missing_ok=True)


def _unwritable(target: Path) -> DataError:
    # the first folder on the way that exists is the one whose permissions stop us
    folder = next(p for p in (target.parent, *target.parent.parents) if p.exists())
    return DataError(
        f"{folder}: cannot write {target} (permission denied); make the folder writable "
        f"(chmod u+w {folder}) or run as a user who may write there"
    )


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_parquet(path: str | Path, frame) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def write_npy(path: str | Path, array) -> None:
    import numpy as np

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, array)
