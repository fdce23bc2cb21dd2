"""One README section rendered from a part of its view, for the tests of a sentence: the parts
a test leaves out are absent (None, or no entries)."""

from __future__ import annotations

from tinytf.report.render import render

EMPTY = {
    "answer": dict(vs_tfidf=None, pretraining=None, probe=None, served=None, figure=None),
    "headline": dict(
        metrics=None, champion=None, majority_test=None, tfidf=None, finetune=None, pretrain=None, model=None
    ),
    "transfer": dict(
        protocol=None, vs_tfidf=[], vs_scratch=[], trend=None, probe=None, baselines=None, snapshots=None
    ),
}


def section_lines(name: str, **parts) -> list[str]:
    """The lines templates/<name>.md.j2 writes from `parts` of its view."""
    return render({name: {**EMPTY[name], **parts}}, f"{name}.md.j2").splitlines()
