"""Memory of the served champion around one request at the total limit (issue 57), in a process
of its own: `python -m tests.helpers.serve_memory STORE` prints JSON with the resident memory
before the request, the process's peak, and after it (MiB)."""

from __future__ import annotations

import gc
import json
import resource
import sys

import pandas as pd
import psutil


def at_the_limit() -> list[str]:
    """Texts of MAX_CHARS characters each, MAX_REQUEST_BYTES in all: the largest request allowed."""
    from tinytf.data.texts import MAX_CHARS, MAX_REQUEST_BYTES

    word = "gripping dull film "
    text = (word * (MAX_CHARS // len(word) + 1))[:MAX_CHARS]
    return [text] * (MAX_REQUEST_BYTES // MAX_CHARS)


def main(store: str) -> None:
    import mlflow

    mlflow.set_tracking_uri(store)
    model = mlflow.pyfunc.load_model("models:/tinytf-sentiment@champion")
    process = psutil.Process()
    model.predict(pd.DataFrame({"text": ["a gripping film"] * 8}))  # warm: lazy imports, first batch
    gc.collect()
    before = process.memory_info().rss
    texts = at_the_limit()
    model.predict(pd.DataFrame({"text": texts}))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    gc.collect()
    after = process.memory_info().rss
    mib = 2**20
    sizes = {"bytes": sum(len(t.encode()) for t in texts), "rows": len(texts)}
    print(json.dumps({**sizes, "before_mib": before / mib, "peak_mib": peak / mib, "after_mib": after / mib}))


if __name__ == "__main__":
    main(sys.argv[1])
