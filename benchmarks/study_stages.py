"""Run dvc.yaml's stages as `dvc repro` would, without dvc: each stage (`python -m tinytf.cli run
STAGE --set ...`) starts once every stage whose outputs it reads has ended, up to --jobs at once.
gpu_study.sh uses it on a lent machine, where one tiny run cannot fill the GPU or the 16 cores,
and a device call has 10 minutes. A stage's order among the ready ones is dvc.yaml's.

    python benchmarks/study_stages.py --out DIR [--jobs N] STAGE ... [-- --set KEY=VALUE ...]

Writes DIR/logs/STAGE.log, appends "STAGE<TAB>start<TAB>end" (Unix seconds) to DIR/stages.tsv
and "stage STAGE: S s" to DIR/timings.txt as each ends, and the stage to DIR/done.txt once it
succeeded. The first failure stops the others (exit status 1), its log's tail printed. --resume
skips the stages done.txt lists: a study that a device call's limit stopped goes on in the next
call on the same machine (finetune itself keeps its finished runs: --state in dvc.yaml).

Why not `dvc repro`: the lent machine has no dvc; and dvc runs one stage at a time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import yaml


def _folder(path: str) -> str:
    """A path with `${...}` in it (a matrix cell's, or one element of a params list) reduced to the
    folder that holds it before its first `${`."""
    return path.split("${")[0].rsplit("/", 1)[0] if "${" in path else path


def _outs(stage: dict) -> list[str]:
    """A stage's output paths, a matrix cell's reduced to the folder before its first `${`."""
    return [_folder(next(iter(o)) if isinstance(o, dict) else o) for o in stage.get("outs", [])]


def needs(dvc_file: Path, names: list[str]) -> dict[str, set[str]]:
    """For each named stage, the named stages whose outputs it reads (a dep equal to, or inside or
    above, one of their outputs)."""
    stages = yaml.safe_load(dvc_file.read_text(encoding="utf-8"))["stages"]
    outs = {name: _outs(stages[name]) for name in names}

    def reads(dep: str, out: str) -> bool:
        return dep == out or dep.startswith(out.rstrip("/") + "/") or out.startswith(dep.rstrip("/") + "/")

    found = {}
    for name in names:
        deps = [_folder(next(iter(d)) if isinstance(d, dict) else d) for d in stages[name].get("deps", [])]
        found[name] = {
            other
            for other in names
            if other != name and any(reads(d, o) for d in deps for o in outs[other] if o)
        }
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="logs/, stages.tsv and timings.txt go here")
    parser.add_argument("--jobs", type=int, default=1, help="stages at once (default 1: dvc.yaml's order)")
    parser.add_argument("--dvc-file", type=Path, default=Path("dvc.yaml"))
    parser.add_argument("--resume", action="store_true", help="skip the stages DIR/done.txt lists")
    parser.add_argument("stages", nargs="+", help="the stages to run, in dvc.yaml's order")
    args = parser.parse_args(argv[:cut])
    sets = argv[cut + 1 :]
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: expected 1 or more")
    waiting = needs(args.dvc_file, args.stages)
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    ledger = args.out / "done.txt"
    done: set[str] = (
        set(ledger.read_text().split()) & set(args.stages) if args.resume and ledger.exists() else set()
    )
    if not args.resume:
        ledger.write_text("")
    if done:
        print(
            f"study: {len(done)} stage(s) done in an earlier call, skipped: {' '.join(sorted(done))}",
            flush=True,
        )
    order = [name for name in args.stages if name not in done]
    running: dict[str, tuple[subprocess.Popen, float]] = {}
    while order or running:
        for name in [n for n in order if waiting[n] <= done][: args.jobs - len(running)]:
            order.remove(name)
            # not `with`: the child holds the file, and this process closes its copy once started
            log = open(args.out / "logs" / f"{name}.log", "w", encoding="utf-8")  # noqa: SIM115
            command = [sys.executable, "-m", "tinytf.cli", "run", name, *sets]
            running[name] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), time.time())
            log.close()
        time.sleep(0.2)
        for name, (process, start) in list(running.items()):
            if process.poll() is None:
                continue
            end = time.time()
            del running[name]
            with open(args.out / "stages.tsv", "a", encoding="utf-8") as tsv:
                tsv.write(f"{name}\t{start:.3f}\t{end:.3f}\n")
            line = f"stage {name}: {end - start:.1f} s"
            if process.returncode:
                line += f", exit status {process.returncode}"
            print(line, flush=True)
            with open(args.out / "timings.txt", "a", encoding="utf-8") as timings:
                timings.write(line + "\n")
            if process.returncode:
                for other, _ in running.values():
                    other.terminate()
                tail = (args.out / "logs" / f"{name}.log").read_text(encoding="utf-8", errors="replace")
                print("\n".join(tail.splitlines()[-20:]), file=sys.stderr)
                print(f"gpu_study: stage {name} failed (exit status {process.returncode}); its output: "
                      f"{args.out}/logs/{name}.log", file=sys.stderr)  # fmt: skip
                return 1
            done.add(name)
            with open(ledger, "a", encoding="utf-8") as handle:
                handle.write(name + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
