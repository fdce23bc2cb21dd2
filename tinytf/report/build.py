"""The report stage's core: reports/README.md, tables/*.{md,csv}, plots/*.png and dvc/*.csv from
the upstream stages' files only (no training, no timestamps). `read` the facts, `derive` the
README's view from them and `render` it; the tables and plots are the sections'."""

from __future__ import annotations

import json
from pathlib import Path

from tinytf.io import staged, write_json, write_text
from tinytf.params.config import Params
from tinytf.report.artifacts import Plot, Table
from tinytf.report.derive import derive
from tinytf.report.dvc_views import headline, plot_views
from tinytf.report.facts import STAGE_FILES, Listing
from tinytf.report.publish import publish
from tinytf.report.read import read
from tinytf.report.render import render, write_view
from tinytf.report.sections import sections


def build_report(params: Params, root: str | Path = ".", out_dir: str | Path = "reports") -> list[Path]:
    """Write the README, tables and plots under `out_dir` (relative to `root`); returns the paths written."""
    root = Path(root)
    out = Path(out_dir) if Path(out_dir).is_absolute() else root / out_dir
    # read and check every input first: a malformed file stops the build before anything is written
    facts = read(root, params)
    items = sections(facts, params)
    tables = [(t.link, f"**{t.title}** — {t.sentence}") for t in items if isinstance(t, Table)]
    plots = [(p.link, p.sentence) for p in items if isinstance(p, Plot)]
    listing = Listing(facts.missing, facts.notes, tables, plots, facts.published)
    # the README is rendered from what readme.json holds (plain JSON), so a committed README can be
    # checked against its view (tests/contract/test_committed_reports.py)
    view = json.loads(json.dumps(derive(facts, params, listing)))
    files: dict[str, tuple] = {}  # path under out -> (writer, content)
    for item in items:  # in the README's order
        if isinstance(item, Table):
            files[item.link] = (write_text, item.markdown())
            files[f"tables/{item.name}.csv"] = (write_text, item.frame.to_csv(index=False))
        else:
            files[item.link] = (lambda path, p=item: p.draw(*p.args, path), None)
    files["headline.json"] = (write_json, headline(facts))
    for name, frame in plot_views(facts).items():
        files[f"dvc/{name}.csv"] = (write_text, frame.to_csv(index=False))
    files["README.md"] = (write_text, render(view))
    files["readme.json"] = (write_view, view)
    # written beside `out`, then put in place together (tinytf.io.staged): a failure leaves the last
    # report whole; tables/, plots/ and dvc/ are replaced whole, so no file of an earlier build stays
    with staged([out], "report") as staging:
        for folder in ("tables", "plots", "dvc"):
            (staging[out] / folder).mkdir()
        for rel, (writer, content) in files.items():
            writer(staging[out] / rel, *([] if content is None else [content]))
        publish(root / STAGE_FILES, staging[out])
    return [out / rel for rel in files]
