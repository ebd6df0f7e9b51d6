#!/usr/bin/env bash
# Torch's symmetric memory misused on one GPU (symm_mem.py): two ranks on one device, sizes
# that differ between ranks, an unknown TORCH_SYMMMEM backend, a tensor that is not symmetric
# memory. Each case's console goes to OUT/NAME.log with its exit code.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/symm_mem.sh OUT
set -u
# shellcheck source=tests/zoo/gpu/setup.sh
. "$(dirname "$0")/setup.sh"
tr() {  # tr NAME [VAR=VALUE...]: one torchrun of symm_mem.py, its console in NAME.log
  local name=$1; shift
  env "$@" timeout 120 torchrun --nproc-per-node 2 --master-port $((29500 + RANDOM % 1000)) \
    "$here/symm_mem.py" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
}
tr overlap SM_CASE=overlap
tr sizes SM_CASE=sizes TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1
tr backend SM_CASE=overlap TORCH_SYMMMEM=NVSHMEMX
tr foreign SM_CASE=foreign TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1
tr allowed SM_CASE=overlap TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1
