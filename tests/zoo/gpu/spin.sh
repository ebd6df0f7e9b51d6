#!/usr/bin/env bash
# What GPU utilisation reads while a rank waits inside an NCCL collective (its kernel polls)
# and while it waits on the host (the c10d store): spin.py, two ranks on the one GPU.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/spin.sh OUT
set -u
# shellcheck source=tests/zoo/gpu/setup.sh
. "$(dirname "$0")/setup.sh"
for mode in kernel host; do
  env SPIN_MODE=$mode SPIN_SMI="$out/$mode.smi.txt" NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo timeout 150 \
    torchrun --nproc-per-node 2 --master-port $((29500 + RANDOM % 1000)) "$here/spin.py" \
    > "$out/$mode.log" 2>&1
  echo "exit $?" >> "$out/$mode.log"
done
grep -h '"gpu_util_percent"' "$out"/kernel.log "$out"/host.log > "$out/util.jsonl"
