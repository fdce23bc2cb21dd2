"""`tinytf dag`: the pipeline's graph as a Mermaid flowchart, for README.md.

`dvc dag` draws every edge, most of them implied by others (check_params precedes everything).
This reads `dvc dag --mermaid --collapse-foreach-matrix`, keeps only the edges no longer path
implies (the transitive reduction), and names each matrix by its cells' count, e.g. `grid (×4)`.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import yaml

from tinytf.cli import dvc_quiet
from tinytf.cli.freshness import defined_stages
from tinytf.errors import DataError

BEGIN = "<!-- dag: made from dvc.yaml by `tinytf dag --write-readme`; edit that, not this -->"
END = "<!-- /dag -->"
COMMAND = "tinytf dag --write-readme"


def parse_mermaid(text: str) -> tuple[list[str], set[tuple[str, str]]]:
    """The stage names and (from, to) edges of `dvc dag --mermaid`'s output."""
    labels = dict(re.findall(r'^\s*(\w+)\["(.*)"\]\s*$', text, flags=re.M))
    edges = {(labels[a], labels[b]) for a, b in re.findall(r"^\s*(\w+)\s*-->\s*(\w+)\s*$", text, flags=re.M)}
    return list(labels.values()), edges


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges no path of two or more edges implies (the graph is acyclic, as DVC's is)."""
    after: dict[str, set[str]] = {}
    for a, b in edges:
        after.setdefault(a, set()).add(b)

    def below(node: str) -> set[str]:
        seen, todo = set(), [node]
        while todo:
            for nxt in after.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {(a, b) for a, b in edges if not any(b in below(c) for c in after[a] - {b})}


def mermaid(order: list[str], edges: set[tuple[str, str]], cells: dict[str, int]) -> str:
    """A fenced Mermaid flowchart, a line per stage with its edges out (`a --> b & c`), in `order`;
    a matrix is labelled with its count of cells where it first appears."""
    labelled: set[str] = set()

    def node(name: str) -> str:
        if cells.get(name, 1) <= 1 or name in labelled:
            return name
        labelled.add(name)
        return f'{name}["{name} (×{cells[name]})"]'

    lines = ["```mermaid", "flowchart TD"]
    touched = {name for edge in edges for name in edge}
    for name in order:
        targets = [b for b in order if (name, b) in edges]
        if targets:
            lines.append(f"    {node(name)} --> " + " & ".join(node(b) for b in targets))
        elif name not in touched:
            lines.append(f"    {node(name)}")
    lines.append("```")
    return "\n".join(lines)


def pipeline_dag(root: Path) -> str:
    """The README's block for the repository at `root`: `dvc dag` read, reduced and labelled."""
    result = subprocess.run(
        [dvc_quiet.dvc_executable(), "dag", "--mermaid", "--collapse-foreach-matrix"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"dvc dag failed: {last}")
    names, edges = parse_mermaid(result.stdout)
    dvc_file = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    cells = Counter(stage.split("@")[0] for stage in defined_stages(dvc_file, params))
    order = [name for name in dvc_file["stages"] if name in names]
    order += [name for name in names if name not in order]
    return mermaid(order, reduced(edges), cells)


def readme_block(readme: str) -> str | None:
    """What README.md holds between the markers, None without them."""
    if BEGIN not in readme or END not in readme:
        return None
    return readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def with_block(readme: str, block: str) -> str:
    """README.md's text with `block` between the markers."""
    if readme_block(readme) is None:
        raise DataError(f"README.md lacks the markers {BEGIN} and {END} around the pipeline's graph")
    head, rest = readme.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}"


def dag_command(write_readme: bool, root: Path = Path(".")) -> None:
    block = pipeline_dag(root)
    if not write_readme:
        print(block)
        return
    path = root / "README.md"
    text = path.read_text(encoding="utf-8")
    new = with_block(text, block)
    if new != text:
        path.write_text(new, encoding="utf-8")
    print(f"{path}: the pipeline's graph {'rewritten' if new != text else 'already current'}")
