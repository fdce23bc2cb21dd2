"""The fine-tuning stage's runs in MLflow: one child run per run of the study, logged once the recipe
search has chosen, so that each says what it is for (`tinytf.role`, `tinytf.chosen`) under a name
no other run of the repro has, and a dropped candidate shows no test accuracy to pick on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tinytf.tracking.runs import TrackerCallback, stage_run
from tinytf.tracking.study import BEST_CHILD, NOTE

ROLE, CHOSEN = "tinytf.role", "tinytf.chosen"
FINETUNE_NOTE = (
    "The study's fine-tuning runs, one child each, tagged `tinytf.role`: `curve` (the label curve: "
    "every start x label count x seed, with the recipe chosen for it), `recipe_search` (the lr x "
    "dropout candidates the search tried and dropped: `tinytf.chosen` false, and no test accuracy, "
    "as the search chooses on validation only), `snapshot` (the pretrained start from each "
    "pretraining snapshot). To chart the label curve: filter `tags.tinytf.role = 'curve'`, then "
    "chart `test_accuracy` against Step, which is the run's label count (n_train), grouped by "
    "`tags.tinytf.start`. This run's `<start>_test_accuracy` is the curve's mean over seeds at the "
    "same steps; `best_validation_accuracy` is the best curve run's (tag `tinytf.best_child`)."
)


def finetune_role(tags: dict, chosen: bool) -> str:
    """`snapshot`, `curve` (a run of the label curve; a search run of the chosen recipe is one) or
    `recipe_search` (a candidate the search dropped)."""
    if tags["snapshot"] != "final":
        return "snapshot"
    return "curve" if chosen else "recipe_search"


def finetune_name(tags: dict, role: str) -> str:
    """A name no other run of the repro has: a dropped candidate by its lr and dropout, a curve run
    by its start, labels, seed and body, a snapshot run by the snapshot too."""
    name = f"finetune-{tags['start']}-{tags['labels']}-seed{tags['seed']}"
    if role == "recipe_search":
        return f"{name}-lr{_short(tags['lr'])}-dropout{_short(tags['dropout'])}"
    if tags.get("body") is not None:
        name += f"-body{tags['body']}"
    return name if role == "curve" else f"{name}-{tags['snapshot']}"


def _short(value) -> str:
    return "none" if value is None else f"{value:g}"


def _number(value) -> float | None:
    return None if value is None or value != value else float(value)  # NaN: a CSV's None


def _key(row: dict) -> tuple:
    lr, dropout = _number(row["lr"]), _number(row["dropout"])
    return (row["snapshot"], row["start"], str(row["labels"]), int(row["seed"]), lr, dropout)


class _Held:
    """One run's callback calls, kept (tinytf.train.finetune replays its workers' events into it)."""

    def __init__(self, tags: dict):
        self.tags, self.events, self.end = tags, [], {}

    def replay(self, events: list) -> None:
        self.events += events

    def on_end(self, metrics: dict) -> None:
        self.end.update(metrics)


class FinetuneChildren:
    """`callbacks_for` of `run_finetune` that holds each run's events until the recipe search has
    chosen: only then is a run known to be on the curve or a dropped candidate, which its name,
    tags and metrics say. `log` then makes one child run each of the stage's run."""

    def __init__(self):
        self.held: list[_Held] = []

    @contextlib.contextmanager
    def __call__(self, tags: dict) -> Iterator[list[_Held]]:
        held = _Held(dict(tags))
        self.held.append(held)
        yield [held]

    def log(self, runs, tracker) -> None:
        """One child run per held run of `runs` (runs.csv's frame), then the parent's note and best
        child through `tracker`, the stage's run. Metrics at step = n_train, the label count."""
        if not tracker.active:  # off, or failed once: said then, not again for each child
            return
        rows = {_key(row): row for row in runs.to_dict("records")}
        best: tuple[float, str] | None = None
        for held in self.held:
            row = rows.get(_key(held.tags), {})
            chosen = bool(row.get("chosen", False))
            role = finetune_role(held.tags, chosen)
            name = finetune_name(held.tags, role)
            with stage_run("finetune", {"finetune": held.tags}, run_name=name, nested=True) as run:
                tags = {f"tinytf.{key}": str(value) for key, value in held.tags.items()}
                run.set_tags(tags | {ROLE: role, CHOSEN: str(chosen).lower()})
                TrackerCallback(run).replay(held.events)
                metrics = {"validation_accuracy": row.get("validation_accuracy")}
                metrics |= held.end if chosen else {}  # a dropped candidate's test chose nothing
                steps = _number(row.get("n_train"))
                run.log_metrics(metrics, step=None if steps is None else int(steps))
            accuracy = _number(row.get("validation_accuracy"))
            if role == "curve" and accuracy is not None and (best is None or accuracy > best[0]):
                best = (accuracy, name)
        tracker.set_tags({NOTE: FINETUNE_NOTE} | ({BEST_CHILD: best[1]} if best else {}))
        if best:
            tracker.log_metrics({"best_validation_accuracy": best[0]})
