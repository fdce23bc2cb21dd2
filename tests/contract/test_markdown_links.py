"""Every relative link in committed Markdown resolves: the README, docs/, CONTRIBUTING.md and the
generated reports (reports/presets/*/README.md included), so that no text points at nothing."""

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

from tests.helpers.paths import REPO

# [text](target) or <img src="target">; a target with a scheme (https:, mailto:) or only an anchor
# is not a file
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<img[^>]*\ssrc=\"([^\"]+)\"")
EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:|#")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)  # a code block's brackets are code, not links


def committed_markdown() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / name for name in listed.stdout.split()]


def broken_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    targets = [m.group(1) or m.group(2) for m in LINK.finditer(text)]
    return [
        target
        for target in targets
        if not EXTERNAL.match(target) and not (path.parent / unquote(target.split("#")[0])).exists()
    ]


def test_every_relative_link_in_committed_markdown_resolves():
    files = committed_markdown()
    names = {p.relative_to(REPO).as_posix() for p in files}
    assert {"README.md", "CONTRIBUTING.md", "docs/data.md", "reports/README.md"} <= names
    assert any(name.startswith("reports/presets/") for name in names)
    broken = {p.relative_to(REPO).as_posix(): links for p in files if (links := broken_links(p))}
    assert broken == {}


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text(
        '[ok](there.md#top) [web](https://x.org) [gone](missing.md) <img src="gone.png">\n'
        "```\n[code](not-a-link.md)\n```\n"
    )
    assert broken_links(page) == ["missing.md", "gone.png"]


def test_no_text_installs_tinytf_from_pypi():
    """tinytf is not on PyPI: an extra comes from the clone (`pip install -e '.[server]'`)."""
    from_pypi = re.compile(r"pip install\s+['\"]?tinytf\b")
    wrong = [
        str(path.relative_to(REPO))
        for path in committed_markdown()
        if from_pypi.search(path.read_text("utf-8"))
    ]
    assert not wrong, (
        f"`pip install tinytf...` in {wrong}: tinytf is installed from its clone (pip install -e .)"
    )
