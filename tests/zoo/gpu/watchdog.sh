#!/usr/bin/env bash
# The one-GPU watchdog timeout, captured the ways a user meets it: plain
# torchrun output, the flight recorder's dump on timeout, and the same job
# under `nccl-doctor run`. Usage (GPU machine, repo root): bash tests/zoo/gpu/watchdog.sh OUT
set -u
# shellcheck source=tests/zoo/gpu/setup.sh
. "$(dirname "$0")/setup.sh"
tr() {  # tr NAME [VAR=VALUE...]: one torchrun of watchdog.py
  local name=$1; shift
  mkdir -p "$out/$name"
  /usr/bin/time -f "wall %e s" env "$@" TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$out/$name/fr_rank" timeout 170 \
    torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) "$here/watchdog.py" \
    > "$out/$name/console.log" 2>&1
  echo "exit $?" > "$out/$name/exit.txt"
}
tr lazy WD_TIMEOUT_S=8 WD_SLEEP_S=40
tr eager WD_EAGER=1 WD_TIMEOUT_S=8 WD_SLEEP_S=40
tr lazy_info WD_TIMEOUT_S=8 WD_SLEEP_S=40 NCCL_DEBUG=INFO
# the same job under the wrapper (its own defaults for NCCL_DEBUG and the flight recorder)
PYTHONPATH=$PWD/src timeout 200 python3 -m nccl_doctor run --dir "$out/under_run" -- \
  env WD_TIMEOUT_S=8 WD_SLEEP_S=40 torchrun --nproc-per-node 1 \
  --master-port $((29500 + RANDOM % 1000)) "$here/watchdog.py" > "$out/under_run.stdout" 2> "$out/under_run.stderr"
echo "exit $?" > "$out/under_run.exit"
ls -laR "$out" > "$out/listing.txt" 2>&1
