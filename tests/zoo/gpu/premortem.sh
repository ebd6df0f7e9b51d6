#!/usr/bin/env bash
# The one-GPU watchdog case under `nccl-doctor run` with the pre-mortem: a ~90 s kernel queued
# ahead of an all_reduce whose group timeout is 60 s; `--stall 5` must capture (stacks, the
# flight recorder through its pipe, nvidia-smi) and name the pending all_reduce long before the
# watchdog fires. Usage (GPU machine, repo root): bash tests/zoo/gpu/premortem.sh OUT
set -u
# shellcheck source=tests/zoo/gpu/setup.sh
. "$(dirname "$0")/setup.sh"
start=$(date +%s)
WD_TIMEOUT_S=${WD_TIMEOUT_S:-60} WD_SLEEP_S=${WD_SLEEP_S:-90} PYTHONPATH=$PWD/src timeout 300 \
  python3 -m nccl_doctor run --stall "${STALL:-5}" --dir "$out/premortem" -- \
  torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) "$here/watchdog.py" \
  > "$out/premortem.stdout" 2> "$out/premortem.stderr"
echo "exit $? after $(( $(date +%s) - start )) s" > "$out/premortem.exit"
ls -laR "$out" > "$out/listing.txt" 2>&1
