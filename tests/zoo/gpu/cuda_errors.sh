#!/usr/bin/env bash
# Real CUDA errors as PyTorch prints them, for the differential's CUDA families
# (knowledge.cuda_errors.symptom_class): a device ordinal the process cannot see
# (cuda_device) and a kernel's device-side assertion (cuda_fault), each in a
# torchrun job of one rank so the launcher's summary is there too.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/cuda_errors.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 NCCL_CUMEM_ENABLE=0
python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda)" > "$out/versions.txt" 2>&1
cat > /tmp/ordinal.py <<'PY'
import os, torch
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]) + 3)  # one GPU: ordinal 3 does not exist
torch.ones(1, device="cuda")
PY
timeout 120 torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) /tmp/ordinal.py \
  > "$out/invalid_ordinal.txt" 2>&1
echo "exit $?" >> "$out/invalid_ordinal.txt"
cat > /tmp/assert.py <<'PY'
import torch
table = torch.zeros(4, device="cuda")
index = torch.tensor([10], device="cuda")  # out of range: the gather kernel asserts
print(table[index].sum().item())
PY
timeout 120 torchrun --nproc-per-node 1 --master-port $((29500 + RANDOM % 1000)) /tmp/assert.py \
  > "$out/device_assert.txt" 2>&1
echo "exit $?" >> "$out/device_assert.txt"
