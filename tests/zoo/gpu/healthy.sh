#!/usr/bin/env bash
# Healthy runs of a small DDP job on the GPU machine, at the verbosities users turn on
# when they debug (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=ALL, TORCH_DISTRIBUTED_DEBUG=DETAIL,
# TORCH_CPP_LOG_LEVEL=INFO), with cuMem at NCCL's default and turned off, then each log
# diagnosed by this checkout: every one must stay HEALTHY. Also one run wrapped by
# `nccl-doctor run`, and the NCCL version and cuMem lines the logs print.
# Usage (GPU machine, repo root): bash tests/zoo/gpu/healthy.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
{ nvidia-smi --version; python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())"; } > "$out/versions.txt" 2>&1
# shellcheck source=tests/zoo/gpu/zoo_run.sh
. "$here/zoo_run.sh"
run() {  # run NAME [VAR=VALUE...], then this checkout's diagnosis of its folder
  zoo_run "$out" "$1" train "${@:2}"
  python3 -m nccl_doctor diagnose "$out/$1" --format json > "$out/$1.report.json" 2> "$out/$1.report.err"
  echo "diagnose exit $?" >> "$out/$1.report.err"
}
run info_detail NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO
run info_all NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL TORCH_DISTRIBUTED_DEBUG=DETAIL
run cumem_off NCCL_DEBUG=INFO NCCL_CUMEM_ENABLE=0 TORCH_DISTRIBUTED_DEBUG=DETAIL
run warn_detail NCCL_DEBUG=WARN TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO
grep -h -i -E "NCCL version|cumem|ProcessGroupNCCL.*(NCCL version|created)" "$out"/*/train.log \
  | sort | uniq -c | sort -rn > "$out/version_cumem_lines.txt"
# the same healthy job wrapped by nccl-doctor run (its run folder, then its report)
NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL ZOO_SCENARIO=train timeout 200 \
  python3 -m nccl_doctor run --dir "$out/wrapped" -- torchrun --nproc-per-node 1 \
  --master-port $((29500 + RANDOM % 1000)) "$here/job.py" > "$out/wrapped.stdout" 2> "$out/wrapped.stderr"
echo "exit $?" > "$out/wrapped.exit"
python3 -m nccl_doctor diagnose "$out/wrapped" --format json > "$out/wrapped.report.json" 2>> "$out/wrapped.stderr"
