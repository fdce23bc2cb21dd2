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


def reset_peak() -> bool:
    """Linux: writing 5 to clear_refs resets the process's peak resident size (VmHWM) to now."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def high_water_mark() -> int:
    """The peak resident size since the last reset, in bytes (VmHWM of /proc/self/status)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def main(store: str) -> None:
    import mlflow

    mlflow.set_tracking_uri(store)
    model = mlflow.pyfunc.load_model("models:/tinytf-sentiment@champion")
    process = psutil.Process()
    model.predict(pd.DataFrame({"text": ["a gripping film"] * 8}))  # warm: lazy imports, first batch
    gc.collect()
    texts = at_the_limit()
    before = process.memory_info().rss
    # the request's own peak: loading the model may have peaked higher, and ru_maxrss keeps that
    reset = reset_peak()
    model.predict(pd.DataFrame({"text": texts}))
    peak = high_water_mark() if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gc.collect()
    after = process.memory_info().rss
    mib = 2**20
    sizes = {"bytes": sum(len(t.encode()) for t in texts), "rows": len(texts)}
    print(json.dumps({**sizes, "before_mib": before / mib, "peak_mib": peak / mib, "after_mib": after / mib}))


if __name__ == "__main__":
    main(sys.argv[1])
