"""`tinytf dag`: README.md's graph of the pipeline is the one dvc.yaml gives now."""

import re

import pytest
import yaml

from tests.helpers.paths import REPO
from tinytf.cli.dag import (
    BEGIN,
    COMMAND,
    END,
    mermaid,
    parse_mermaid,
    pipeline_dag,
    readme_block,
    reduced,
    with_block,
)
from tinytf.errors import DataError

# `dvc dag --mermaid --collapse-foreach-matrix` of a four-stage pipeline whose first stage every
# other one reads, as DVC prints it (nodes in name order)
DVC_MERMAID = """flowchart TD
\tnode1["check"]
\tnode2["grid"]
\tnode3["prepare"]
\tnode4["report"]
\tnode1-->node2
\tnode1-->node3
\tnode1-->node4
\tnode2-->node4
\tnode3-->node2
\tnode3-->node4
"""


def test_the_graph_keeps_only_the_edges_no_longer_path_implies_and_counts_matrix_cells():
    names, edges = parse_mermaid(DVC_MERMAID)
    assert names == ["check", "grid", "prepare", "report"] and len(edges) == 6
    assert reduced(edges) == {("check", "prepare"), ("prepare", "grid"), ("grid", "report")}
    block = mermaid(["check", "prepare", "grid", "report"], reduced(edges), {"grid": 4, "prepare": 1})
    assert block.splitlines() == [
        "```mermaid",
        "flowchart TD",
        "    check --> prepare",
        '    prepare --> grid["grid (×4)"]',
        "    grid --> report",
        "```",
    ]
    assert mermaid(["a", "b"], set(), {}).splitlines()[2:4] == ["    a", "    b"]  # no edges: still there


def test_the_block_goes_between_the_markers_and_only_there():
    readme = f"# t\n\nbefore\n{BEGIN}\nold graph\n{END}\nafter\n"
    new = with_block(readme, "```mermaid\nflowchart TD\n```")
    assert new == f"# t\n\nbefore\n{BEGIN}\n```mermaid\nflowchart TD\n```\n{END}\nafter\n"
    assert readme_block(new) == "```mermaid\nflowchart TD\n```" and with_block(new, readme_block(new)) == new
    with pytest.raises(DataError, match="lacks the markers"):
        with_block("# no graph here\n", "x")


def test_the_readme_shows_the_graph_dvc_yaml_gives_now():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    now = pipeline_dag(REPO)  # reads dvc.yaml and params.yaml as they are at test time
    assert readme_block(readme) == now, (
        f"README.md's pipeline graph is not the one dvc.yaml gives: run `{COMMAND}` and commit README.md"
    )
    # every stage of dvc.yaml is a node, each matrix collapsed into one
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert set(re.findall(r"(?:^    |--> |& )(\w+)", now, flags=re.M)) == set(stages)
    assert "@" not in now
