"""DVC's experiment queue, run the way a user runs it, with every worker gone afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from .repo import GIT, dvc


def run_two_queued_experiments(workspace: Path, tracking_uri: str | None = None) -> None:
    """Queue two experiments that re-run only evaluate and report (so they overlap in time:
    evaluate.bootstrap_resamples 300 and 400, named boot300 / boot400) and run them at once."""
    subprocess.run([*GIT, "add", "-A"], cwd=workspace, check=True, capture_output=True)
    # the queue runs from a commit: an empty one where nothing changed since the last
    subprocess.run(
        [*GIT, "commit", "--allow-empty", "-qm", "tiny pipeline"],
        cwd=workspace,
        check=True,
        capture_output=True,
    )
    for resamples in (300, 400):
        dvc(
            workspace,
            "exp",
            "run",
            "--queue",
            "-n",
            f"boot{resamples}",
            "-S",
            f"evaluate.bootstrap_resamples={resamples}",
            tracking_uri=tracking_uri,
        )
    try:
        # DVC forks each worker from this command, and a worker that misses its shutdown message
        # never exits: with a pipe this call once hung the suite past CI's 90 minutes
        dvc(
            workspace,
            "queue",
            "start",
            "-j",
            "2",
            tracking_uri=tracking_uri,
            log=workspace / "queue-start.log",
        )
        deadline = time.monotonic() + 600
        while True:
            status = queue_status(workspace)
            if "Queued" not in status and "Running" not in status:
                break
            assert time.monotonic() < deadline, status + worker_logs(workspace)
            time.sleep(3)
        assert status.count("Success") == 2, status + worker_logs(workspace)
    finally:
        kill_queue_workers(workspace)


def queue_status(workspace: Path) -> str:
    """`dvc queue status`, asked again where it fails on DVC's race: it reads a task's JSON info
    file while the queue is writing it ("unexpected error - Extra data", treeverse/dvc#8014; here
    also "Expecting value: line 1 column 1"). Any other failure fails the test at once."""
    for attempt in range(5):
        result = dvc(workspace, "queue", "status", check=False)
        output = result.stdout + result.stderr
        if result.returncode == 0:
            return result.stdout
        raced = re.search(r"unexpected error - (Expecting value|Extra data)", output)
        assert raced and attempt < 4, output
        time.sleep(1)
    raise AssertionError("unreachable")


CELERY_DIR = ".dvc/tmp/exps/celery"  # where DVC's queue keeps its broker, worker info files and logs


def running_queue_worker_pids(workspace: Path) -> list[int]:
    """The pids of DVC's queue workers that have not exited: dvc_task's ManagedProcess records
    each worker's pid in an info file, and its return code there once it exits."""
    import json

    infos = [json.loads(f.read_text()) for f in (workspace / CELERY_DIR).glob("dvc-exp-worker-*.json")]
    return [info["pid"] for info in infos if info.get("returncode") is None]


def kill_queue_workers(workspace: Path) -> None:
    """Kill every queue worker still running with its process group (each worker runs in a group
    of its own), so no worker outlives its test, whether it missed its shutdown message or hung."""
    import signal

    for pid in running_queue_worker_pids(workspace):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass  # it exited since its info file was read


def worker_logs(workspace: Path) -> str:
    """The queue workers' own logs, for a failure message."""
    logs = sorted((workspace / CELERY_DIR).glob("**/*.out"))
    return "".join(f"\n--- {log.name} ---\n{log.read_text()[-3000:]}" for log in logs)
