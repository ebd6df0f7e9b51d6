#!/usr/bin/env bash
# Messages PyTorch itself prints around a distributed job, captured as a real torch prints
# them (for the signature catalogue's torch entries and the differential's classes):
#   fork_reinit.txt    CUDA touched in a forked child after the parent initialised it
#   not_destroyed.txt  a healthy one-rank NCCL job that exits without destroy_process_group
#   store_connect.txt  a rank whose store (tcp:// init) nobody serves: the client times out
#   port_in_use.txt    torchrun on a port another process already listens on
#   world_short.txt    a store waiting for two ranks when only one was started
# Usage (GPU machine, repo root): bash tests/zoo/gpu/torch_messages.sh OUTDIR
set -u
out=${1:?output folder}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 NCCL_CUMEM_ENABLE=0
python3 -c "import torch;print('torch',torch.__version__,'cuda',torch.version.cuda,'nccl',torch.cuda.nccl.version())" > "$out/versions.txt" 2>&1
port() { echo $((29500 + RANDOM % 1000)); }
work=$(mktemp -d)

cat > "$work/fork.py" <<'PY'
import multiprocessing as mp
import torch
def child():
    torch.ones(1, device="cuda")
if __name__ == "__main__":
    torch.ones(1, device="cuda")  # the parent initialises CUDA
    ctx = mp.get_context("fork")
    p = ctx.Process(target=child)
    p.start(); p.join()
    print("child exit code", p.exitcode)
PY
timeout 120 python3 "$work/fork.py" > "$out/fork_reinit.txt" 2>&1
echo "exit $?" >> "$out/fork_reinit.txt"

cat > "$work/nodestroy.py" <<'PY'
import os, torch, torch.distributed as dist
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl")
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
print("all_reduce ok", t.item())
PY
timeout 120 torchrun --nproc-per-node 1 --master-port "$(port)" "$work/nodestroy.py" \
  > "$out/not_destroyed.txt" 2>&1
echo "exit $?" >> "$out/not_destroyed.txt"

cat > "$work/client.py" <<'PY'
import datetime, sys, torch.distributed as dist
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=1,
                        world_size=2, timeout=datetime.timedelta(seconds=10))
PY
timeout 120 python3 "$work/client.py" "$(port)" > "$out/store_connect.txt" 2>&1
echo "exit $?" >> "$out/store_connect.txt"

p=$(port)
python3 -c "import socket,time;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',$p));s.listen();time.sleep(60)" &
holder=$!
sleep 1
timeout 120 torchrun --nproc-per-node 1 --master-port "$p" "$work/nodestroy.py" \
  > "$out/port_in_use.txt" 2>&1
echo "exit $?" >> "$out/port_in_use.txt"
kill $holder 2>/dev/null

cat > "$work/short.py" <<'PY'
import datetime, os, torch.distributed as dist
os.environ["WORLD_SIZE"] = "2"  # the job believes in two ranks; torchrun started one
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
PY
timeout 120 torchrun --nproc-per-node 1 --master-port "$(port)" "$work/short.py" \
  > "$out/world_short.txt" 2>&1
echo "exit $?" >> "$out/world_short.txt"
rm -rf "$work"
