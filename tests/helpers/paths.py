"""Where the repository and the course data are, for every test and helper."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = Path(os.environ.get("TINYTF_SHARED_DATA", REPO.parent / "shared" / "data"))
