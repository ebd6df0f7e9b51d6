# shellcheck shell=bash
# Sourced by the zoo's scripts: one torchrun run of job.py as a user would attach it.
# zoo_run OUT NAME SCENARIO [VAR=VALUE...] writes OUT/NAME/{env.txt,train.log,exit.txt}:
# the launching shell's NCCL_/TORCH_/CUDA_/PYTORCH_ variables as `env` prints them,
# torchrun's combined output, and its exit status.
zoo_run() {
  local out=$1 name=$2 scenario=$3; shift 3
  local here; here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$out/$name"
  env "$@" sh -c 'env | grep -E "^(NCCL|TORCH|CUDA|PYTORCH)_" | sort' > "$out/$name/env.txt"
  env ZOO_SCENARIO="$scenario" "$@" timeout 150 torchrun --nproc-per-node 1 \
    --master-port $((29500 + RANDOM % 1000)) "$here/job.py" > "$out/$name/train.log" 2>&1
  echo "exit $?" > "$out/$name/exit.txt"
}
