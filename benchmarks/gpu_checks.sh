#!/usr/bin/env bash
# The speed issue's GPU checks in one call, for a machine with CUDA (a GPU runner, a lent GPU):
#   the pretraining benchmark with the nanoGPT-style peer at the GPU preset's shape and at 6x384
#   (the targets' shapes, first) and then at the default and seed-lab shapes; the classifier step benchmark; one classifier
#   epoch as a finetune run trains it.
# Each output is kept in ${OUT:-gpu-checks}/<check>.txt, nvidia-smi's line in gpu.txt. Run it
# from the repository root once data/tokens and data/tokenizer.json exist (`dvc repro tokenize`,
# or copied from a machine that ran it): without them the pretraining benchmark trains on random
# ids and the epoch check stops.
# It needs torch with CUDA, pandas, pyarrow, tokenizers and PyYAML, not dvc or mlflow. Each check
# stops after ${CHECK_TIMEOUT:-240} s, so one that hangs leaves time for the others.
#
# Names after the script run just those checks (a short device call):
#
#     bash benchmarks/gpu_checks.sh [pretrain_gpu pretrain_6x384 pretrain classifier classifier_epoch]
set -uo pipefail
out=${OUT:-gpu-checks}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1  # a check stopped by its timeout keeps every line it printed
python=${PYTHON:-python3}
all="pretrain_gpu pretrain_6x384 pretrain classifier classifier_epoch"
wanted=" ${*:-$all} "
for name in $wanted; do
    case " $all " in *" $name "*) ;; *) echo "gpu_checks: no check '$name'; the checks: $all" >&2; exit 2 ;; esac
done

missing=$("$python" -c 'import torch; print("" if torch.cuda.is_available() else "torch sees no CUDA device")' 2>&1 | tail -n 1)
if [ -n "$missing" ]; then
    echo "gpu_checks: $missing ($python); on a CPU, run the benchmarks themselves" >&2
    exit 2
fi
mkdir -p "$out"
status=0
check() {
    local name=$1
    shift
    case $wanted in *" $name "*) ;; *) return 0 ;; esac
    echo "== $name: $*"
    timeout "${CHECK_TIMEOUT:-240}" "$python" "$@" 2>&1 | tee "$out/$name.txt"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "== $name: exit status $rc" | tee -a "$out/$name.txt"
        status=1
    fi
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
check pretrain_gpu benchmarks/pretrain_throughput.py --shapes gpu --nanogpt --rounds 3
check pretrain_6x384 benchmarks/pretrain_throughput.py --shapes 6x384 --nanogpt --rounds 3
check pretrain benchmarks/pretrain_throughput.py --shapes default,seed-lab --nanogpt --rounds 3
check classifier benchmarks/classifier_throughput.py --rounds 3
check classifier_epoch benchmarks/classifier_epoch.py --repeats 2
exit $status
