"""Writes of files a user owns (params.yaml, dvc.yaml, a copy under data/raw/), all or nothing:
`open(path, "w")` empties the file first, so a kill or a full disk could leave it empty. The new
text goes to a temporary file beside it, is synced, then renamed over it. tinytf.io does the same
for outputs; this one also keeps the file's mode and writes through a symlink to the file it names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tinytf.errors import DataError
from tinytf.io import FULL


def write_bytes(path: str | Path, data: bytes) -> None:
    """Replace `path` by `data` atomically; on any failure `path` is as it was and the error is raised."""
    _replace(path, lambda handle: handle.write(data))


def copy_file(source: str | Path, target: str | Path) -> None:
    """Copy `source` onto `target` atomically, keeping the source's times (as shutil.copy2)."""

    def fill(handle) -> None:
        with open(source, "rb") as src:
            shutil.copyfileobj(src, handle, 1 << 20)

    _replace(target, fill, times_of=source)


def _replace(path: str | Path, fill, times_of: str | Path | None = None) -> None:
    target = Path(os.path.realpath(path))  # a symlinked params.yaml stays a symlink
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename makes it the file
        if mode is not None:
            os.chmod(tmp, mode)
        else:  # mkstemp makes 0600; a new file gets what open() would give it
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        if times_of is not None:
            shutil.copystat(times_of, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """The rename itself on disk (a crash right after it could otherwise bring the old file back)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the rename is done all the same
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def not_written(path: str | Path, then: str, error: type[Exception] = DataError) -> Iterator[None]:
    """An OSError in the block becomes one line: `path`, why it was not written, then `then`."""
    try:
        yield
    except OSError as exc:
        raise error(f"{path}: not written ({why(exc)}){then}") from None


def why(exc: BaseException) -> str:
    """A failed write's cause in a few words, with the fix for the usual ones."""
    if isinstance(exc, OSError) and exc.errno in FULL:
        import errno

        fix = "raise the file-size limit (ulimit -f)" if exc.errno == errno.EFBIG else "free disk space"
        return f"{exc.strerror}; {fix}"
    if isinstance(exc, PermissionError):
        return "permission denied; make it and its folder writable"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"
