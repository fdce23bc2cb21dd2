"""What the report writes besides the README: a table (Markdown with a CSV twin) or a plot,
each with the sentence the README lists it by. The section modules return them from the facts;
`tinytf.report.build` writes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd


class Table(NamedTuple):
    name: str  # tables/<name>.md and .csv
    title: str
    sentence: str
    frame: pd.DataFrame  # the CSV twin
    md: pd.DataFrame | None = None  # what the Markdown shows, where it formats the frame
    floatfmt: str | tuple[str, ...] = ".4g"

    @property
    def link(self) -> str:
        return f"tables/{self.name}.md"

    def markdown(self) -> str:
        shown = (self.frame if self.md is None else self.md).map(
            lambda v: v.replace("|", "\\|") if isinstance(v, str) else v
        )
        shown = shown.astype(object).where(shown.notna(), None)  # blank cells, not "nan"
        table = shown.to_markdown(index=False, floatfmt=self.floatfmt, intfmt=",", missingval="")
        return f"# {self.title}\n\n{self.sentence}\n\n{table}\n"


class Plot(NamedTuple):
    name: str  # plots/<name>.png
    sentence: str
    draw: Callable  # draw(*args, path)
    args: tuple

    @property
    def link(self) -> str:
        return f"plots/{self.name}.png"
