#!/usr/bin/env bash
# The GPU preset's study in one call, for a machine with CUDA but neither dvc nor mlflow: every
# stage of dvc.yaml after `tokenize`, in dvc.yaml's order, through `python -m tinytf.cli run STAGE`
# with TINYTF_TRACKING=0 and every value of presets/${PRESET:-gpu}.yaml passed as --set.
#   ${OUT:-gpu-study}/timings.txt   one line per stage (wall seconds) and the total
#   ${OUT:-gpu-study}/report/       the generated report (reports/ without presets/)
#   ${OUT:-gpu-study}/logs/         each stage's output; env.txt: torch, device, GPU
#   ${OUT:-gpu-study}/gpu_use.txt   the GPU's utilisation and memory per stage (nvidia-smi sampled
#                                   each second into gpu_use.csv; benchmarks/gpu_use.py)
#   ${OUT:-gpu-study}/verdict.md    does our pretrained model beat TF-IDF + LR with all labels, over
#                                   seeds and over test items (benchmarks/study_verdict.py)
#   ${OUT:-gpu-study}/params.yaml   the params the stages ran with: `tinytf preset NAME --export
#                                   --from ${OUT:-gpu-study}` commits the report after checking them
# and one record in benchmarks/results/gpu_study.jsonl ($TINYTF_BENCH_RESULTS names another folder).
# Run it from the repository root once `prepare` and `tokenize` have run with the same preset:
# `--prepare` runs just those two, on any machine (no GPU needed), and copies their outputs
# data/tokens, data/tokenizer.json, data/prepared/sentiment, data/reports/data.json and
# data/reports/tokenize.json (git-ignored, DVC-cached) into ${INPUTS:-gpu-study-inputs}/, one folder
# to carry, which the study copies into place over what the checkout has. A preset with the `hf`
# start (minilm) also gets its checkpoint there, in fp16 (benchmarks/hf_carry.py says why), and
# the study's runs use that copy (hf.checkpoint). Like `tinytf run`, the
# stages write into the checkout's data/ (and `report` publishes data/reports/ into reports/).
# Without CUDA it refuses unless --cpu (or TINYTF_STUDY_CPU=1) allows it: the test
# runs it so on the tiny preset.
#
#     bash benchmarks/gpu_study.sh --prepare                       (CPU machine; TINYTF_MIRROR: docs/data.md)
#     bash benchmarks/gpu_study.sh [--cpu] [--set KEY=VALUE ...]   (--set: after the preset's values)
set -uo pipefail
out=${OUT:-gpu-study}
preset=${PRESET:-gpu}
python=${PYTHON:-python3}
allow_cpu=${TINYTF_STUDY_CPU:-0}
mode=study
extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --cpu) allow_cpu=1 ;;
        --prepare) mode=prepare ;;
        --set) [ $# -ge 2 ] || { echo "gpu_study: --set needs KEY=VALUE" >&2; exit 2; }
               extra+=(--set "$2"); shift ;;
        *) echo "gpu_study: unknown argument '$1'; usage: gpu_study.sh [--prepare] [--cpu] [--set KEY=VALUE ...]" >&2
           exit 2 ;;
    esac
    shift
done
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export TINYTF_TRACKING=0  # no MLflow: the stages' outputs and the report are the record
inputs=${INPUTS:-gpu-study-inputs}
carried="data/tokens data/tokenizer.json data/prepared/sentiment data/reports/data.json data/reports/tokenize.json"
if [ "$mode" = study ] && [ -d "$inputs" ]; then
    for path in $carried; do  # what --prepare bundled: its data card and tokenizer report go with its tokens
        [ -e "$inputs/$path" ] || continue  # a bundle of the checkpoint alone leaves the checkout's
        rm -rf "$path" && mkdir -p "$(dirname "$path")" && cp -R "$inputs/$path" "$path"
    done
fi

# Everything checked before the first stage; one line names what is missing. Prints the stages
# to run, then the preset's KEY=VALUE pairs, one a line.
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
plan=$("$python" - "$preset" "$allow_cpu" "$mode" "${extra[@]}" 2> "$errors" <<'EOF'
import importlib.util
import json
import sys
from pathlib import Path

preset, allow_cpu, prepare, extra = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "prepare", sys.argv[5::2]


def refuse(line):
    print(f"MISSING {line}")
    sys.exit(2)


if not Path("dvc.yaml").exists():
    refuse("no dvc.yaml here: run from the repository root")
for module in ("torch", "numpy", "pandas", "pyarrow", "tokenizers", "yaml", "sklearn", "scipy", "matplotlib"):
    if importlib.util.find_spec(module) is None:
        refuse(f"the Python module '{module}' is not installed ({sys.executable})")
import torch  # noqa: E402
import yaml  # noqa: E402

if not torch.cuda.is_available() and not allow_cpu and not prepare:
    refuse(f"torch {torch.__version__} sees no CUDA device; --cpu or TINYTF_STUDY_CPU=1 runs the study on the CPU")
from tinytf.params.config import load_params  # noqa: E402
from tinytf.errors import TinyTFError  # noqa: E402
from tinytf.cli.presets import preset_values  # noqa: E402
from tinytf.params.schema import parse_overrides  # noqa: E402

try:
    values = preset_values(preset)
    params = load_params("params.yaml", values | parse_overrides(extra))
except TinyTFError as exc:
    refuse(f"preset {preset}: {exc}")
needed = [] if prepare else ["data/tokenizer.json", "data/tokens/corpus/train.npy", "data/tokens/sentiment",
          "data/prepared/sentiment", "data/reports/data.json", "data/reports/tokenize.json"]  # fmt: skip
absent = [path for path in needed if not Path(path).exists()]
if absent:
    refuse(f"no {', '.join(absent)}: run `bash benchmarks/gpu_study.sh --prepare` first (prepare and tokenize "
           f"with the preset's values) or bring their outputs")  # fmt: skip
tokenized = {} if prepare else json.loads(Path("data/reports/tokenize.json").read_text())
if not prepare and tokenized.get("vocab_size") != params.tokenize.vocab_size:
    print(f"gpu_study: warning: data/tokenizer.json has {tokenized.get('vocab_size')} tokens, preset {preset} asks "
          f"for {params.tokenize.vocab_size}: were prepare and tokenize run with its values?", file=sys.stderr)  # fmt: skip
stages = list(yaml.safe_load(Path("dvc.yaml").read_text())["stages"])
cut = stages.index("tokenize") + 1
print(" ".join(stages[:cut] if prepare else stages[cut:]))
uses_hf = "hf" in params.finetune.starts or params.grid.start == "hf"
print(f"hf={params.hf.checkpoint if uses_hf else ''}")  # the checkpoint --prepare bundles, if any
for key, value in values.items():
    print(f"{key}={json.dumps(value)}")
EOF
)
status=$?
if [ $status -ne 0 ]; then
    line=$(printf '%s\n' "$plan" | grep -m1 '^MISSING ' | sed 's/^MISSING //')
    echo "gpu_study: ${line:-the check before the stages failed: $(tail -n 1 "$errors")}" >&2
    exit 2
fi
cat "$errors" >&2  # the check's warnings
read -r -a stages <<< "$(printf '%s\n' "$plan" | head -n 1)"
hf=$(printf '%s\n' "$plan" | sed -n 2p | sed 's/^hf=//')
sets=()
while IFS= read -r pair; do
    [ -n "$pair" ] && sets+=(--set "$pair")
done < <(printf '%s\n' "$plan" | tail -n +3)
if [ "$mode" = study ] && [ -n "$hf" ] && [ -d "$inputs/hf" ]; then
    # the checkpoint --prepare bundled in fp16 (benchmarks/hf_carry.py): the runs name it
    carried_hf=$(find "$inputs/hf" -mindepth 1 -maxdepth 1 -type d -name '*.fp16' | head -n 1)
    [ -n "$carried_hf" ] && sets+=(--set "hf.checkpoint=$carried_hf")
fi
sets+=("${extra[@]}")

mkdir -p "$out/logs"
[ "${STUDY_RESUME:-0}" = 1 ] || : > "$out/timings.txt"  # resuming: the earlier call's lines stay
"$python" -c 'import sys, torch
cuda = torch.cuda.is_available()
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, device", torch.cuda.get_device_name(0) if cuda else "cpu")' \
    > "$out/env.txt" 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >> "$out/env.txt" 2>/dev/null
echo "gpu_study: preset $preset, stages: ${stages[*]}" | tee -a "$out/env.txt"
# the params the stages run with (params.yaml, the preset's values, then each --set):
# `tinytf preset NAME --export --from $out` checks them before it commits the report
"$python" - "$out/params.yaml" "${sets[@]}" <<'EOF' || exit 1
import sys
from pathlib import Path

import yaml

from tinytf.params.schema import parse_overrides, read_yaml, set_dotted

raw = read_yaml(Path("params.yaml"))
for key, value in parse_overrides(sys.argv[3::2]).items():
    set_dotted(raw, key, value)
Path(sys.argv[1]).write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
EOF

now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
[ "${STUDY_RESUME:-0}" = 1 ] || : > "$out/stages.tsv"
smi=${NVIDIA_SMI:-nvidia-smi}
if [ "$mode" = study ] && command -v "$smi" > /dev/null; then
    # the GPU's use each second, summarised per stage at the end (benchmarks/gpu_use.py)
    "$smi" --query-gpu=timestamp,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits \
        -l 1 > "$out/gpu_use.csv" 2> /dev/null &
    sampler=$!
    trap 'kill "$sampler" 2> /dev/null; rm -f "$errors"' EXIT
fi
gpu_use() {  # the samples so far, per stage; a run stopped from outside leaves gpu_use.csv and stages.tsv
    [ -n "${sampler:-}" ] || return 0
    kill "$sampler" 2> /dev/null
    "$python" benchmarks/gpu_use.py "$out/gpu_use.csv" "$out/stages.tsv" --json "$out/gpu_use.json" | tee "$out/gpu_use.txt"
}
begin=$(now)
# every stage as soon as the ones it reads have ended, ${STUDY_JOBS:-1} at once (benchmarks/study_stages.py)
resume=(); [ "${STUDY_RESUME:-0}" = 1 ] && resume=(--resume)
"$python" benchmarks/study_stages.py --out "$out" --jobs "${STUDY_JOBS:-1}" "${resume[@]}" "${stages[@]}" -- "${sets[@]}"
if [ $? -ne 0 ]; then
    gpu_use
    exit 1
fi
if [ "$mode" = prepare ]; then
    rm -rf "$inputs"
    for path in $carried; do
        mkdir -p "$inputs/$(dirname "$path")" && cp -R "$path" "$inputs/$path"
    done
    if [ -n "$hf" ]; then  # its weights in fp16: a device call carries 64 MiB in all
        "$python" benchmarks/hf_carry.py "$hf" "$inputs/hf" || exit 1
    fi
    echo "gpu_study: prepare and tokenize done with preset $preset; what the GPU machine needs, in $inputs/:"
    du -sh $carried ${hf:+"$inputs/hf"}
    size=$(du -sm "$inputs" | cut -f1)
    # a device call carries 64 MiB in all: the bundle and the checkout's own files
    tracked=$( (git ls-files -z 2> /dev/null | du -cm --files0-from=- 2> /dev/null || echo 0) | tail -n 1 | cut -f1)
    echo "$inputs: $size MiB in all, beside the checkout's $tracked MiB; carry it: [\"$inputs\"]"
    [ $((size + tracked)) -lt 64 ] \
        || echo "gpu_study: warning: $inputs and the checkout are over the 64 MiB a device call carries" >&2
    exit 0
fi
echo "all ${#stages[@]} stages after tokenize: $(seconds "$begin" "$(now)") s" | tee -a "$out/timings.txt"
gpu_use
"$python" benchmarks/study_verdict.py --reports reports --out "$out/verdict.md" \
    || echo "gpu_study: no verdict: benchmarks/study_verdict.py failed" >&2

mkdir -p "$out/report"
for entry in reports/*; do
    [ "$(basename "$entry")" = presets ] || cp -R "$entry" "$out/report/"
done
echo "gpu_study: report in $out/report/README.md"
"$python" - "$out/timings.txt" "$preset" "${extra[@]}" <<'EOF'
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, "benchmarks")
from timing import record  # noqa: E402

timings, preset, extra = sys.argv[1], sys.argv[2], sys.argv[4::2]
lines = open(timings, encoding="utf-8").read().splitlines()
# a resumed study keeps an earlier call's lines, a failed stage's among them ("..., exit status N")
seconds = {line.split(":")[0].removeprefix("stage "): float(line.split()[-2]) for line in lines[:-1] if line.endswith(" s")}
device = "cuda" if torch.cuda.is_available() else "cpu"
figures = {"preset": preset, "total_s": float(lines[-1].split()[-2]), "stage_s": seconds}
out = Path(timings).parent
gpu_use, verdict = out / "gpu_use.json", out / "verdict.json"
figures["gpu_use"] = json.loads(gpu_use.read_text()) if gpu_use.exists() else {}
if verdict.exists():
    figures["verdict"] = json.loads(verdict.read_text()) | {"line": (out / "verdict.md").read_text().splitlines()[-1]}
record("gpu_study", f"{lines[-1]} ({preset} preset on {device})", figures,
       argparse.Namespace(preset=preset, overrides=extra), device)  # fmt: skip
EOF
