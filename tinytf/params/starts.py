"""Every start a classifier takes, in the order every table, plot and headline file lists them, with
the names the report gives them; in params/, the lowest layer analysis, report and train import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Start:
    key: str  # as params.yaml, the summaries and the CSV columns spell it
    name: str  # in lists and tables ("the linear probe")
    subject: str  # a sentence's subject ("training from scratch")
    curve: bool = True  # a start of the labelled-data curve (finetune.starts)
    grid: bool = True  # a start the grid may fine-tune (grid.start)
    epochs: bool = True  # trained by epochs: it has fine-tuning curves (the probe is fitted once)


STARTS = (
    Start("pretrained", "pretrained", "the pretrained start"),
    Start("scratch", "scratch", "training from scratch"),
    # the curve's probe: a logistic regression on the frozen body's features, fitted, not trained
    Start("probe", "the linear probe", "the frozen probe", grid=False, epochs=False),
    # the grid's frozen body with a trained head; the curve has the probe instead
    Start("frozen", "frozen", "the frozen start", curve=False),
    Start("hf", "hf", "the hf start"),  # an external encoder (params.yaml `hf:`)
)

# what params.yaml may name (tinytf.params.config's Literal types), fixed when the module loads
CURVE_STARTS = tuple(s.key for s in STARTS if s.curve)
GRID_STARTS = tuple(s.key for s in STARTS if s.grid)


def table() -> dict[str, Start]:
    """The table by key, read when called (a test may put a start in STARTS)."""
    return {s.key: s for s in STARTS}


def present(keys) -> list[str]:
    """The table's starts among `keys`, in its order: a summary entry's keys hold its tests too."""
    keys = set(keys)
    return [s.key for s in STARTS if s.key in keys]


def ordered(keys) -> list[str]:
    """Every key of `keys` (all starts), the table's in its order, then any it lacks, sorted."""
    known = present(keys)
    return known + sorted(set(keys) - set(known))


def name(key: str) -> str:
    start = table().get(key)
    return start.name if start else key


def subject(key: str) -> str:
    start = table().get(key)
    return start.subject if start else f"the {key} start"


def trained(key: str) -> bool:
    """Trained by epochs (a start the table lacks counts as trained, as every new one so far)."""
    start = table().get(key)
    return start.epochs if start else True
