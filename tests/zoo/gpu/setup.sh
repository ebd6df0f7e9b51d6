# Sourced by the GPU zoo scripts (their first argument is the output folder): makes it, sets
# `here` to this folder, turns the NVLink multicast paths off (the device machine's README asks
# for it; a one-GPU machine has no NVSwitch) and records the versions in OUT/versions.txt.
# shellcheck shell=bash
out=${1:?output folder}
mkdir -p "$out"
# shellcheck disable=SC2034  # read by the scripts that source this
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{ nvidia-smi --version; python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; } > "$out/versions.txt" 2>&1
