#!/usr/bin/env bash
# Reproduce the one-GPU NCCL failure scenarios on the GPU machine and keep
# what a user would have: the combined console output of torchrun.
# Usage (on the GPU machine): bash tests/zoo/gpu/capture.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
run() {  # run NAME NPROC [VAR=VALUE...]
  local name=$1 nproc=$2; shift 2
  echo "== $name" >&2
  env ZOO_SCENARIO="$name" "$@" timeout 150 torchrun --nproc-per-node "$nproc" \
    --master-port $((29500 + RANDOM % 1000)) "$here/job.py" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.exit"
}
{ nvidia-smi --version; python -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; } > "$out/versions.txt" 2>&1
run duplicate_gpu 2
run bad_ifname 1 NCCL_SOCKET_IFNAME=nosuch0
run invalid_ordinal 1
run no_gpus 1 CUDA_VISIBLE_DEVICES=
run device_assert 1
run env_typo 1 NCCL_DEBUG=INFO NCCL_SOCKET_IFNAMES=eth0 NCCL_ALGO=Bogus
# another process holds most of the GPU's memory while the job allocates
python -c "import torch,time; x=torch.empty(int(120*(1<<30)),dtype=torch.uint8,device='cuda'); print('holder ready',flush=True); time.sleep(60)" > "$out/holder.txt" 2>&1 &
holder=$!
sleep 15
run oom_foreign 1
nvidia-smi > "$out/oom_foreign.nvidia-smi.txt" 2>&1
kill $holder 2>/dev/null
wait $holder 2>/dev/null
# the job's own memory: it asks for more than the GPU has, nobody else on it
run oom_self 1 NCCL_DEBUG=INFO
nvidia-smi > "$out/oom_self.nvidia-smi.txt" 2>&1
# a healthy job, with nvidia-smi taken while it holds memory (its own PID listed)
run busy_self 1 NCCL_DEBUG=INFO &
job=$!
sleep 18
nvidia-smi > "$out/busy_self.nvidia-smi.txt" 2>&1
wait $job
# a kernel that writes far outside its buffer, before the collective
run illegal_access 1
# the watchdog fires on a collective stuck behind a long kernel; the flight
# recorder dumps into the output folder (one file per rank)
run watchdog_timeout 1 TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 \
  TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$out/fr_rank"
ls -la "$out" >&2
