"""The finished runs of a fine-tuning stage that did not finish, kept so that starting it again
trains only the rest (`--state`). Stored under a key of everything their numbers depend on (params,
resolved runtime, data and checkpoint bytes, tinytf's code). The files are pickles the stage wrote
itself, in a git-ignored folder of the workspace: read only from there, as the code that reads them is.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import sys
from pathlib import Path
from typing import Any

from tinytf.io import atomic_path, sha256_file


def store_key(settings: dict, files: list[Path]) -> str:
    """sha256 over `settings` (params, runtime) and the bytes of `files` (data, checkpoints)."""
    from tinytf.train.pretrain import code_fingerprint

    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for path in sorted(files):
        digest.update(f"{path}\0{sha256_file(path)}\0".encode())
    digest.update(code_fingerprint().encode())
    return digest.hexdigest()[:16]


class RunStore:
    """Results under `folder/<key>/`; None as folder keeps nothing."""

    def __init__(self, folder: str | Path | None, key: str):
        self.root = None if folder is None else Path(folder)
        self.folder = None if self.root is None else self.root / key

    def _path(self, spec: Any) -> Path:
        name = hashlib.sha256(repr(spec).encode()).hexdigest()[:16]
        return self.folder / f"{name}.pkl"

    def load(self, spec: Any) -> Any | None:
        if self.folder is None or not self._path(spec).exists():
            return None
        try:
            stored = pickle.loads(self._path(spec).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
            print(
                f"note: {self._path(spec)} unreadable ({type(exc).__name__}); that run trains again",
                file=sys.stderr,
            )
            return None
        return stored["result"] if stored.get("spec") == repr(spec) else None

    def save(self, spec: Any, result: Any) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(self._path(spec)) as tmp:  # a kill mid-write leaves no half a result
            tmp.write_bytes(pickle.dumps({"spec": repr(spec), "result": result}))

    def clear(self) -> None:
        """Every store under the folder, this key's and older ones: the stage's outputs now hold it."""
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
