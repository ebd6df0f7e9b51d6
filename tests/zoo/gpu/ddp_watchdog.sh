#!/usr/bin/env bash
# The flight recorder's stack of a timed-out collective, two ways: DDP's gradient all-reduce
# (issued by torch during backward) and the job's own all_reduce called from a helper; and
# the line printed with the recorder off. Usage (GPU machine, repo root):
# bash tests/zoo/gpu/ddp_watchdog.sh OUT
set -u
out=${1:?output folder}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{ nvidia-smi --version; python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; } > "$out/versions.txt" 2>&1
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
