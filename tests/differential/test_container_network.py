"""Nodes that talk from inside containers on a bridge network reach each other badly.

A container on Docker's default bridge has an address of its own, private to its
host; NCCL's and Gloo's first interface inside it (``eth0``) is that address, which
the other nodes cannot reach, so a job across nodes fails to connect unless the
interface is pinned or the container shares the host's network. Every case runs
the whole pipeline on a small bug report.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

#: PyTorch 2.1's report of NCCL's system error at the first collective.
SYSTEM_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled system error (run "
    "with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error.\n"
)


#: The reason the shift gives.
BRIDGE = "the nodes talk from inside containers with no host networking"
#: The reason a container's /dev/shm gives.
DOCKER_SHM = "Docker's /dev/shm is 64 MB"


def _report(tmp_path: Path, run: str) -> dict[str, tuple[float, str]]:
    """Each hypothesis: its probability and its reasons for, joined."""
    tmp_path.mkdir(exist_ok=True)
    report = diagnose_text(
        tmp_path,
        "Training on two machines, 8 GPUs each, fails at the first all_reduce.\n"
        f"{run}\n"
        "torchrun --nnodes 2 --nproc_per_node 8 --node_rank 0 --master_addr 10.1.0.4 "
        "--master_port 29500 train.py\n" + SYSTEM_ERROR,
    )
    return {h.id: (h.probability, "; ".join(h.for_)) for h in report.hypotheses}


def test_containers_on_a_bridge_network_across_nodes_weigh_the_interface(
    tmp_path: Path,
) -> None:
    boxed = _report(tmp_path, "docker run --gpus all --shm-size=16g -it my-train:latest bash")
    bare = _report(tmp_path / "bare", "")
    assert next(iter(boxed)) == "net.socket_interface"
    assert BRIDGE in boxed["net.socket_interface"][1]
    assert boxed["net.socket_interface"][0] > bare["net.socket_interface"][0]
    assert BRIDGE not in bare["net.socket_interface"][1]


def test_containers_on_the_hosts_network_do_not(tmp_path: Path) -> None:
    shared = _report(
        tmp_path, "docker run --gpus all --shm-size=16g --network=host -it my-train:latest bash"
    )
    assert BRIDGE not in shared["net.socket_interface"][1]


def test_a_container_started_with_its_shm_sized_is_not_dockers_64_mb(tmp_path: Path) -> None:
    sized = _report(tmp_path, "docker run --gpus all --ipc=host -it my-train:latest bash")
    default = _report(tmp_path / "default", "docker run --gpus all -it my-train:latest bash")
    assert DOCKER_SHM in default["nccl.shm"][1]
    assert DOCKER_SHM not in sized.get("nccl.shm", (0.0, ""))[1]
    assert sized.get("nccl.shm", (0.0, ""))[0] < default["nccl.shm"][0]
