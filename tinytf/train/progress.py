"""Runs done out of all and the time left, for the stages made of many runs (fine-tuning, the grid).

In a terminal, tqdm's bar; where stderr is piped a bar would be one long line of carriage returns,
so a plain line every few runs and at the last instead, with the same estimate (tqdm's `format_meter`).
"""

from __future__ import annotations

import math
import sys
import time

from tqdm import tqdm

LINE = "{desc}: {n_fmt}/{total_fmt} runs done, {elapsed} elapsed, about {remaining} left"
LINES = 10  # plain lines over a whole stage, about: every few runs, never a wall of them


class RunProgress:
    """`initial`: runs already done (kept from a stopped stage), counted as done but not in the pace."""

    def __init__(self, total: int, desc: str, initial: int = 0, file=None):
        self.total, self.desc, self.initial, self.done = total, desc, initial, initial
        self.file = file or sys.stderr
        self.every = max(1, math.ceil(total / LINES))
        self.started = time.perf_counter()
        self.bar = tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit="run",
            file=self.file,
            disable=None,  # no bar where the file is not a terminal: the lines below instead
            dynamic_ncols=True,
        )

    def update(self, n: int = 1) -> None:
        before, self.done = self.done, self.done + n
        self.bar.update(n)
        if (
            n
            and self.bar.disable
            and (self.done // self.every > before // self.every or self.done == self.total)
        ):
            print(self.line(), file=self.file, flush=True)

    def skip(self, n: int) -> None:
        """Runs kept from a stopped stage: counted, but not in the pace."""
        self.initial += n
        self.update(n)

    def line(self) -> str:
        return tqdm.format_meter(
            self.done,
            self.total,
            time.perf_counter() - self.started,
            prefix=self.desc,
            bar_format=LINE,
            initial=self.initial,
        )

    def close(self) -> None:
        self.bar.close()


def matrix_line(done: int, total: int, seconds: float) -> str:
    """Where a DVC matrix stands after its `done`-th cell (each cell is a stage of its own, so no bar
    spans them), and the time the rest take at this cell's pace."""
    left = total - done
    took = tqdm.format_interval(seconds)
    if not left:
        return f"{done}/{total} done ({took})"
    return f"{done}/{total} done ({took}); the {left} left, about {tqdm.format_interval(seconds * left)}"
