"""The project files a stage script reaches through its imports, found by the standard
library's `modulefinder` (which reads every code object, so imports inside functions count:
a stage's closure over-approximates what one run executes, the safe side for deps).

Its search path holds only the project (the script's folder and the repository root), so
third-party and standard-library imports are not followed: they are not project files.
"""

from __future__ import annotations

import modulefinder
from pathlib import Path


def closure(script: Path, root: Path) -> set[Path]:
    """Every project file `script` reaches, itself included, as paths relative to `root`."""
    root = root.resolve()
    script = script if script.is_absolute() else root / script
    finder = modulefinder.ModuleFinder(path=[str(script.parent), str(root)])
    finder.run_script(str(script))
    files = {Path(m.__file__).resolve() for m in finder.modules.values() if m.__file__}
    return {f.relative_to(root) for f in files if f.is_relative_to(root)}
