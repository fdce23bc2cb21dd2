"""tinytf.system.collector: a stage process imports without the garbage collector, does its work with it
(its workers too), freezes its heap before exit; other processes keep Python's own collector."""

import gc
import json
import os
import subprocess
import sys
import textwrap

from tests.helpers.paths import REPO
from tinytf.system import collector

# what a stage script does: `import common` first, then its main through common.run
STAGE = """
import gc, json, sys
sys.path.insert(0, 'stages')
import common
at_import = gc.isenabled()

def main():
    seen.update(at_import=at_import, in_main=gc.isenabled(), frozen=gc.get_freeze_count())
    built.extend([i] for i in range(20_000))  # lists: always tracked by the collector

seen, built = {}, []
common.run(main)
seen["frozen_by_exit"] = gc.get_freeze_count() - seen["frozen"]
print(json.dumps(seen))
"""


def run_stage(script: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, env={**os.environ, **env}
    )


def test_a_stage_imports_without_the_collector_and_works_with_it():
    out = run_stage(STAGE)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["at_import"] is False
    assert seen["in_main"] is True
    assert seen["frozen"] > 10_000  # what the imports built (yaml, tinytf), never walked again
    assert seen["frozen_by_exit"] >= 20_000  # and what main built, before the interpreter's teardown


def test_default_leaves_the_collector_alone():
    seen = json.loads(run_stage(STAGE, TINYTF_GC="default").stdout)
    assert seen == {"at_import": True, "in_main": True, "frozen": 0, "frozen_by_exit": 0}


def test_a_bad_value_is_one_line_naming_the_variable():
    out = run_stage(STAGE, TINYTF_GC="off")
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        == "tinytf: error: TINYTF_GC='off': expected 'pause' (the default) or 'default' (Python's own)"
    )
    assert out.stdout == ""


def test_outside_a_stage_nothing_changes():
    # this test process never called pause_for_imports: pausing and freezing are no-ops here
    frozen = gc.get_freeze_count()
    with collector.paused():
        assert gc.isenabled()
    collector.freeze_for_exit()
    assert gc.get_freeze_count() == frozen


def test_in_a_stage_paused_freezes_what_the_block_built():
    script = STAGE.replace(
        "def main():",
        textwrap.dedent("""
        def main():
            from tinytf.system import collector
            before = gc.get_freeze_count()
            with collector.paused():
                inside = gc.isenabled()
                kept = [[i] for i in range(50_000)]
            print(json.dumps({"inside": inside, "after": gc.isenabled(),
                              "grew": gc.get_freeze_count() - before >= 50_000}))
            return
        """).strip()
        + "\n\ndef unused():",
    )
    seen = json.loads(run_stage(script).stdout)
    assert seen == {"inside": False, "after": True, "grew": True}


def collector_state(state, item):
    return gc.isenabled(), gc.get_freeze_count()


def test_a_stage_worker_works_with_the_collector_on(tmp_path):
    # a spawned worker imports the stage's script, and with it `common`, which pauses the collector
    script = tmp_path / "stage.py"
    script.write_text(
        textwrap.dedent(f"""
        import json
        import sys
        sys.path.insert(0, {str(REPO / "stages")!r})
        import common
        import torch
        from tinytf.train.workers import Workers
        from tests.unit.system.test_collector import collector_state

        def main():
            with Workers(torch.device("cpu"), dict, (), "runs") as pool:
                print(json.dumps(pool.map(collector_state, [0, 1], cost=float)))

        if __name__ == "__main__":
            common.run(main)
        """)
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "TINYTF_WORKERS": "2", "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    for enabled, frozen in json.loads(out.stdout):
        assert enabled is True
        assert frozen > 100_000
