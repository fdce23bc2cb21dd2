"""A stage imports the tinytf beside its script, not the installed one: `dvc exp run --temp` runs a
copy of the repository, and with an editable install its stages once imported the workspace's code
(a stage of the copy failed on a name the workspace had since moved), while its dvc.lock recorded
the copy's."""

import shutil
import subprocess
import sys

from tests.helpers.paths import REPO


def test_a_stage_in_a_copy_of_the_repository_imports_the_copys_tinytf(tmp_path):
    copy = tmp_path / "copy"
    for folder in ("stages", "tinytf"):
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    # a stage as dvc.yaml runs one, from the root: `import common` first, then tinytf
    (copy / "stages" / "probe.py").write_text("import common\nimport tinytf\n\nprint(tinytf.__file__)\n")
    done = subprocess.run(
        [sys.executable, "stages/probe.py"], cwd=copy, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(copy / "tinytf" / "__init__.py"), done.stdout
