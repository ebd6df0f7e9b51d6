#!/usr/bin/env bash
# Pairs of runs of one small job on the GPU machine, for `diagnose --against`:
# the same job with NCCL_DEBUG=INFO, once as is, once with one variable changed
# (a failing NCCL_SOCKET_IFNAME, NCCL_P2P_DISABLE=1, NCCL_NVLS_ENABLE=0).
# Each run keeps what a user would attach: torchrun's combined output and the
# launching shell's NCCL_/TORCH_/CUDA_ variables as `env` prints them.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/against.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO
{ nvidia-smi --version; python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; } > "$out/versions.txt" 2>&1
# shellcheck source=tests/zoo/gpu/zoo_run.sh
. "$here/zoo_run.sh"
run() { zoo_run "$out" "$1" plain "${@:2}"; }  # run NAME [VAR=VALUE...]
run good
run good_p2p_off NCCL_P2P_DISABLE=1
run good_nvls_off NCCL_NVLS_ENABLE=0
run bad_ifname NCCL_SOCKET_IFNAME=nosuch0
nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
