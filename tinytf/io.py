"""Atomic file writes, staged outputs and checksums: every output is written beside its target and
renamed into place (`staged`: all of a stage's outputs together), so an interrupted or failing stage
leaves the previous outputs whole, never a half-written file."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tinytf.errors import DataError, OutputError

_UMASK = os.umask(0)
os.umask(_UMASK)


# a full disk, a quota, or a file-size limit (ulimit -f; Python ignores SIGXFSZ, so the write fails
# with EFBIG instead of killing the process): one line naming the output, the previous one kept
FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def full_disk_message(exc: OSError, target: str | Path | None = None) -> str:
    where = target or exc.filename or "an output"
    hint = "raise the file-size limit (ulimit -f)" if exc.errno == errno.EFBIG else "free disk space"
    return f"{where}: cannot write it ({exc.strerror}); {hint} and run again; the previous outputs are kept"


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def is_main_rank() -> bool:
    """tinytf.train.distributed.is_main, without torch: under torchrun only rank 0 writes."""
    return os.environ.get("RANK", "0") == "0"


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds. Under
    torchrun only rank 0 renames: the other ranks run the same code, their copies dropped."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except PermissionError:
        raise _unwritable(target) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            yield tmp
        except OSError as exc:
            if exc.errno in FULL:
                raise OutputError(full_disk_message(exc, target)) from None
            raise
        try:
            # mkstemp makes the file 0600; give it the permissions a plain open() would have
            os.chmod(tmp, 0o666 & ~_UMASK)
            if is_main_rank():
                os.replace(tmp, target)
        except PermissionError:
            raise _unwritable(target) from None
    finally:
        tmp.unlink(missing_ok=True)


def _unwritable(target: Path) -> DataError:
    # the first folder on the way that exists is the one whose permissions stop us
    folder = next(p for p in (target.parent, *target.parent.parents) if p.exists())
    return _unwritable_folder(folder, f" {target}")


def _unwritable_folder(folder: Path, what: str = "") -> DataError:
    return DataError(
        f"{folder}: cannot write{what} (permission denied); make the folder writable "
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

    with atomic_path(path) as tmp, open(tmp, "wb") as handle:  # np.save would add .npy to a path
        np.save(handle, array)


@contextlib.contextmanager
def staged(folders: Iterable[str | Path], tag: str) -> Iterator[dict[Path, Path]]:
    """Yield an empty staging folder beside each of `folders` (one disk, so renames). Only when the
    block succeeds does each top-level entry written replace its namesake whole (no stale file
    survives), every folder's entries together or none. `tag` names the writer (a stage, a matrix
    cell), so two writers beside one folder stage apart."""
    rank = "" if is_main_rank() else f".rank{os.environ['RANK']}"
    staging = {Path(f): Path(f).parent / f".{Path(f).name}.{tag}{rank}.staging.tmp" for f in folders}
    for target in staging:  # refuse before any work, not after it
        for folder in (target, target.parent):
            if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
                raise _unwritable_folder(folder)
    for target, folder in staging.items():
        shutil.rmtree(folder, ignore_errors=True)  # a killed run's
        try:
            folder.mkdir(parents=True)
        except PermissionError:
            raise _unwritable(target) from None
    try:
        yield staging
        if is_main_rank():
            moves = [
                (entry, target / entry.name) for target, s in staging.items() for entry in sorted(s.iterdir())
            ]
            _swap_in(moves)
    finally:
        for folder in staging.values():
            shutil.rmtree(folder, ignore_errors=True)


def _swap_in(moves: list[tuple[Path, Path]]) -> None:
    """Rename each new entry onto its target, keeping the old one aside until all are in; any
    failure puts every old entry back. Permissions are checked first, so the usual failure
    (a folder made read-only) replaces nothing."""
    for _, target in moves:
        _check_replaceable(target)
    done: list[tuple[Path, Path, Path | None]] = []  # (new entry, target, the old one set aside)
    try:
        for entry, target in moves:
            old = target.parent / f".{target.name}.old.tmp"
            _remove(old)  # a killed swap's
            kept = old if target.exists() or target.is_symlink() else None
            if kept:
                os.rename(target, old)
            done.append((entry, target, kept))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(entry, target)
    except OSError as exc:
        for entry, target, kept in reversed(done):
            if not entry.exists() and target.exists():
                os.rename(target, entry)  # back into staging, which is removed
            if kept:
                os.rename(kept, target)
        raise OutputError(f"{exc}; the previous outputs are kept as they were") from None
    for _, _, kept in done:
        if kept:
            _remove(kept)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _check_replaceable(target: Path) -> None:
    """Replacing `target` renames in its folder and, for a folder, empties it afterwards."""
    folders = [target.parent] if target.parent.exists() else []
    if target.is_dir() and not target.is_symlink():
        folders += [target, *(p for p in target.rglob("*") if p.is_dir() and not p.is_symlink())]
    for folder in folders:
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(
                f"{folder}: not writable, so {target} cannot be replaced; the previous outputs are "
                "kept as they were and the new ones were not written"
            )
