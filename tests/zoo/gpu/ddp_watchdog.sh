#!/usr/bin/env bash
# The flight recorder's stack of a timed-out collective, two ways: DDP's gradient all-reduce
# (issued by torch during backward) and the job's own all_reduce called from a helper; and
# the line printed with the recorder off. Usage (GPU machine, repo root):
# bash tests/zoo/gpu/ddp_watchdog.sh OUT
set -u
# shellcheck source=tests/zoo/gpu/setup.sh
. "$(dirname "$0")/setup.sh"
tr() {  # tr NAME [VAR=VALUE...]: one torchrun of ddp_watchdog.py, its console in NAME.log
  local name=$1; shift
  env "$@" TORCH_NCCL_DUMP_ON_TIMEOUT=0 timeout 170 \
    torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) "$here/ddp_watchdog.py" \
    > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
}
tr ddp WD_TIMEOUT_S=8 WD_SLEEP_S=30 TORCH_FR_BUFFER_SIZE=2000
tr plain WD_PLAIN=1 WD_TIMEOUT_S=8 WD_SLEEP_S=30 TORCH_FR_BUFFER_SIZE=2000
tr no_recorder WD_PLAIN=1 WD_TIMEOUT_S=8 WD_SLEEP_S=30 TORCH_FR_BUFFER_SIZE=0
