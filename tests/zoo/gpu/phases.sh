#!/usr/bin/env bash
# Tracebacks of PyTorch's start-up phases on the GPU machine, for the differential's
# phase table (differential/phases.py): CUDA's initialisation with no visible GPU, and
# DDP's construction when NCCL cannot build its communicator (a socket interface that
# does not exist). Each run keeps the process's whole output.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/phases.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 NCCL_CUMEM_ENABLE=0
python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())" > "$out/versions.txt" 2>&1
# CUDA_VISIBLE_DEVICES names no GPU: the first CUDA call fails in torch/cuda/__init__.py
CUDA_VISIBLE_DEVICES=7 timeout 120 python3 -c "import torch; torch.cuda.set_device(0)" > "$out/cuda_init.txt" 2>&1
echo "exit $?" >> "$out/cuda_init.txt"
# DDP over NCCL with an interface that does not exist: the communicator fails in DDP's construction
cat > /tmp/ddp_phase.py <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8).cuda(), device_ids=[0])
print("constructed")
PY
NCCL_SOCKET_IFNAME=nosuch0 NCCL_DEBUG=WARN timeout 150 torchrun --nproc-per-node 1 \
  --master-port $((29500 + RANDOM % 1000)) /tmp/ddp_phase.py > "$out/ddp_comm_init.txt" 2>&1
echo "exit $?" >> "$out/ddp_comm_init.txt"
