"""The one next check per catalogue id: a command whose answer confirms or clears it."""

from __future__ import annotations

#: id -> (command to run, what its answer tells)
NEXT_CHECK: dict[str, tuple[str, str]] = {
    "nccl.shm": (
        "df -h /dev/shm   (inside the container)",
        "64M means Docker's default: rerun with --shm-size=8g or --ipc=host",
    ),
    "nccl.p2p": (
        "NCCL_P2P_DISABLE=1 <your command>; nvidia-smi topo -p2p r",
        "passing with P2P off, or 'NS' in the matrix, confirms P2P; then check ACS/IOMMU",
    ),
    "net.socket_interface": (
        "NCCL_DEBUG=INFO <your command> 2>&1 | grep -E 'Bootstrap|NET/Socket'; ip -br addr",
        "the interface NCCL picked must be one every node can reach; set NCCL_SOCKET_IFNAME",
    ),
    "net.unreachable": (
        "nc -zv $MASTER_ADDR $MASTER_PORT   (from every node)",
        "a refused or timed-out connection confirms a firewall, route or wrong address",
    ),
    "net.ib_config": (
        "ulimit -l; ibv_devinfo; show_gids",
        "memlock below 'unlimited', or RoCE without the right NCCL_IB_GID_INDEX, confirms it",
    ),
    "net.ib_transport": (
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET <your command>; perfquery -x   (per port)",
        "completion errors or rising symbol/link-down counters point at the link",
    ),
    "net.ib_link": ("ibstatus", "a port not ACTIVE/LinkUp, or below its rate, confirms it"),
    "net.gdr": ("lsmod | grep -E 'nvidia_peermem|nv_peer_mem'", "no module: GPUDirect RDMA is off"),
    "host.resources": (
        (
            "dmesg -T | grep -iE 'killed process|out of memory|blocked for more'; ulimit -a; "
            "free -g; df -h"
        ),
        "an OOM-killer line, an exhausted limit, a full disk or a stalled one confirms it",
    ),
    "launch.rank_crash": (
        "torchrun --log-dir logs -r 3 -t 3 ...  (or each rank's or JAX task's own stderr)",
        "the first rank's own error is the cause; the others only report it",
    ),
    "launch.rendezvous": (
        "check --nnodes, --node_rank and that every node started; count 'joined' lines",
        "a node that never started or a wrong world size confirms it",
    ),
    "launch.port_in_use": ("ss -ltnp | grep $MASTER_PORT", "a listener already there confirms it"),
    "launch.duplicate_launch": (
        "ps -ef | grep -E 'torchrun|python' on each node",
        "two launchers or twice the ranks confirms it",
    ),
    "nccl.version_mismatch": (
        "python -c 'import torch;print(torch.cuda.nccl.version())' on every node; ldd/LD_PRELOAD",
        "different versions, or a system libnccl shadowing torch's, confirms it",
    ),
    "nccl.internal": (
        "NCCL_DEBUG=INFO <your command> 2>&1 | grep -E 'NCCL version|WARN'",
        "a WARN naming an internal assertion on a release with a known fix confirms it",
    ),
    "nccl.env": ("env | grep -E '^(NCCL|TORCH_NCCL)_'", "a misspelt or invalid value confirms it"),
    "nccl.duplicate_gpu": (
        "print(rank, torch.cuda.current_device()) in each rank",
        "two ranks on one device confirms it",
    ),
    "cuda.device_visibility": (
        "echo $CUDA_VISIBLE_DEVICES; nvidia-smi -L; print(torch.cuda.device_count())",
        "fewer devices than local ranks, or an ordinal past the count, confirms it",
    ),
    "gpu.contention": (
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
        "a process that is not the job on the job's GPUs confirms it",
    ),
    "gpu.oom": (
        "torch.cuda.memory_summary() at the failing step; lower the batch size",
        "the job's own allocations near the total confirm it",
    ),
    "gpu.xid": ("dmesg -T | grep -i xid", "an Xid at the failure time confirms a GPU fault"),
    "gpu.ecc": (
        "nvidia-smi -q -d ECC,ROW_REMAPPER",
        "uncorrectable errors or pending remaps confirm it",
    ),
    "gpu.lost": ("nvidia-smi", "'ERR!' or a missing GPU confirms it"),
    "gpu.fabric_manager": (
        "systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -A2 Fabric",
        "a stopped service or a fabric state other than Completed confirms it",
    ),
    "driver.uvm": (
        "lsmod | grep nvidia_uvm; ls -l /dev/nvidia-uvm",
        "no module or node confirms it",
    ),
    "driver.version_mismatch": (
        "cat /proc/driver/nvidia/version; nvidia-smi",
        "'Driver/library version mismatch' confirms it: reboot or reload the modules",
    ),
    "driver.cuda_mismatch": (
        "nvidia-smi (CUDA Version) against python -c 'import torch;print(torch.version.cuda)'",
        "torch's CUDA newer than the driver's confirms it",
    ),
    "driver.container": (
        "ls -l /dev/nvidia*; nvidia-smi   (inside the container and on the host)",
        "devices or libraries present on the host but not inside confirm it",
    ),
    "driver.wsl": ("uname -r", "'microsoft' in the kernel name: WSL limits apply"),
    "app.hang": (
        "py-spy dump --pid <each rank's pid>; TORCH_FR_BUFFER_SIZE=2000 for the flight recorder",
        "the rank whose stack is not in the collective is the one behind",
    ),
    "app.collective_mismatch": (
        "TORCH_DISTRIBUTED_DEBUG=DETAIL <your command>",
        "a 'Detected mismatch between collectives' error names the ranks and the calls",
    ),
    "app.param_mismatch": (
        "print(sum(p.numel() for p in model.parameters())) on each rank",
        "different counts confirm it",
    ),
    "app.unused_params": (
        "DDP(..., find_unused_parameters=True) or TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "the error naming unused parameters confirms it",
    ),
    "cuda.illegal_access": (
        "CUDA_LAUNCH_BLOCKING=1 <your command>; compute-sanitizer",
        "the first faulting kernel names the bug",
    ),
    "cuda.device_assert": (
        "CUDA_LAUNCH_BLOCKING=1 <your command>",
        "the assertion's file:line names the index or label that is out of range",
    ),
    "gpu.nvlink": (
        "nvidia-smi nvlink -s; nvidia-smi nvlink -e",
        "inactive links or errors confirm it",
    ),
    "gpu.pcie_degraded": (
        "nvidia-smi -q -d PCIE   (under load)",
        "a current link gen/width below the maximum confirms it",
    ),
    "gpu.thermal_power": (
        "nvidia-smi -q -d PERFORMANCE",
        "active thermal or power slowdown reasons confirm it",
    ),
    "gpu.mig": ("nvidia-smi -L", "MIG devices listed confirm it"),
    "gpu.compute_mode": (
        "nvidia-smi -q -d COMPUTE",
        "'Exclusive_Process' or 'Prohibited' confirms it",
    ),
    "nccl.host_identity": (
        "hostname; cat /proc/sys/kernel/random/boot_id   (on every node)",
        "two nodes with one name or boot id confirm it",
    ),
    "nccl.nvls": ("NCCL_NVLS_ENABLE=0 <your command>", "passing without NVLS confirms it"),
}
