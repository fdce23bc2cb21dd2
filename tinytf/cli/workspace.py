"""What `tinytf exp` and `tinytf preset` do to the workspace: one of them at a time (a lock), and
a workspace `-S` written into params.yaml as one changed line.

DVC writes a `-S` into params.yaml before it runs anything, a temporary or queued experiment too
(it stashes the workspace with the value in, then puts the file back). Two runs started together
in one workspace each rewrite the file under the other, and one runs with the other's values. The
lock is taken before anything writes params.yaml and held until DVC returns; a second run is
refused in one line, the file as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from tinytf.errors import TinyTFError

LOCK = Path(".dvc/tmp/tinytf-exp.lock")  # under .dvc/tmp/, which DVC's own .gitignore leaves out


@contextlib.contextmanager
def workspace_lock(root: str | Path = ".") -> Iterator[Path]:
    """Hold the workspace's experiment lock (fcntl.flock, released when the process ends, even
    killed); TinyTFError naming the holder when another process has it."""
    root = Path(root)
    if not (root / ".dvc").is_dir():
        raise TinyTFError(
            f"{root.resolve()}: no .dvc/ here: run tinytf exp and preset from the repository root"
        )
    path = root / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another tinytf exp or preset"
            raise TinyTFError(
                f"{path}: {holder} is running in this workspace; wait for it to end (nothing ran; "
                "params.yaml is as it was), or run the two in clones of their own"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"tinytf exp or preset (pid {os.getpid()})")
        handle.flush()
        try:
            yield path
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
