#!/usr/bin/env bash
# NCCL RAS (text and JSON, terse and verbose) and the flight recorder (JSON and pickle) of a
# one-rank job waiting in an all_reduce behind its own kernel. Usage (GPU machine, repo root):
# bash tests/zoo/gpu/ras.sh OUT
set -u
out=${1:?output folder}
mkdir -p "$out/ras"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCH_FR_BUFFER_SIZE=2000 RAS_OUT="$out/ras"
{ nvidia-smi --version; python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; command -v ncclras; } > "$out/ras/versions.txt" 2>&1
NCCL_DEBUG=INFO timeout 200 torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) \
  "$here/ras_job.py" > "$out/ras/job.log" 2>&1 &
job=$!
sleep "${RAS_AT_S:-20}"
timeout 30 ncclras > "$out/ras/ncclras.txt" 2>&1
timeout 30 ncclras -v > "$out/ras/ncclras-v.txt" 2>&1
for f in text json; do  # nccl-doctor's own client of the RAS socket (the binary may lack --format)
  PYTHONPATH=$PWD/src timeout 30 python3 -m nccl_doctor.run.ras "$f" > "$out/ras/ras-$f.txt" 2>&1
done
wait $job
echo "job exit $?" >> "$out/ras/job.log"
