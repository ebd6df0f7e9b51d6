"""The classic presentations, told in a reporter's words with no log line of the failure.

Each is a mechanism an expert reads from the words alone (or from one line a parser does not
type): /dev/shm's size given, or Docker's 64 MB where the container was started without sizing
it; a container that sees no GPU at all; a setting the job failed without until it was made,
or one that avoids it; WSL under an unclassified failure; an RDMA port down, polling or
flapping; a launcher around a script that spawns its own workers; clocks held down; a PCIe
link trained below its width; an NCCL setting carried in from another machine; "stuck at" in
Chinese; an Xid by its number; a small locked-memory limit; the fabric manager named; the
host's network that works; a node that never joined; one node upgraded; a newer NCCL that
fixes it; a second NCCL preloaded; NVLink shown inactive; an RDMA failure after the job ran; a
registration refused with EFAULT; and what made it work (shared memory, another port, equal
batches). Each has the sentences that must leave it silent, and every diagnosis case runs the
whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import facts_of
from nccl_doctor.signs.settings import settings_that_worked
from tests.helpers import critical_ids, cue_says, diagnose_text, ranked_without_critical


def _top(tmp_path: Path, text: str, k: int = 3) -> list[str]:
    return diagnose_text(tmp_path, text).top(k)


# -- /dev/shm's size in words -------------------------------------------------------------

_DOCKER_NCCL = (
    "Running the training inside a docker container (docker run --gpus all) fails with an NCCL "
    "error as soon as it uses 2 GPUs. "
)


@pytest.mark.parametrize(
    "said",
    [
        "I did not pass --shm-size or --ipc=host.",
        "df -h /dev/shm shows 64M.",
        "the container's shm is only 64MB",
        "容器的共享内存只有64M。",
        "The pod's /dev/shm is the default 64Mi emptyDir.",
    ],
)
def test_a_small_dev_shm_said_puts_shared_memory_first(tmp_path: Path, said: str) -> None:
    assert _top(tmp_path, _DOCKER_NCCL + said)[0] == "nccl.shm"
    # the words alone, with nothing said of /dev/shm, do not (a container's failure in words
    # is as often something else)
    assert _top(tmp_path, _DOCKER_NCCL)[0] != "nccl.shm"


@pytest.mark.parametrize(
    "said",
    [
        # a size of 1 GiB and more weighs it down; a command line's --shm-size is the
        # container-start reading's, not this one's (with --ipc=host it is not even the size)
        "/dev/shm is 16G on the host.",
        "docker run --ipc=host --shm-size=2gb image",
        # a kernel's shared memory is CUDA's, per block
        "shared memory per block: 48 KB",
    ],
)
def test_a_large_or_unrelated_size_does_not_blame_shared_memory(tmp_path: Path, said: str) -> None:
    assert _top(tmp_path, _DOCKER_NCCL + said)[0] != "nccl.shm"


# -- a container that sees no GPU -------------------------------------------------------

_NO_GPU = (
    "Inside the container nvidia-smi is not found and torch sees no GPU, although the host has "
    "8 GPUs and the nvidia-container-toolkit is installed."
)


def test_a_container_that_sees_no_gpu_was_given_none(tmp_path: Path) -> None:
    ranked = ranked_without_critical(tmp_path, _NO_GPU)
    assert ranked[0] == "driver.container"
    assert cue_says("no_gpu_seen", "In the docker container torch.cuda.device_count() returns 0.")
    assert cue_says("no_gpu_seen", "without --gpus pytorch reports zero GPUs")


@pytest.mark.parametrize(
    "said",
    [
        # NCCL says "no device found" of a network device
        "NCCL fails with no device found for NCCL_IB_HCA=mlx5_5",
        "torch.cuda.device_count() returns 2 but I have 4 GPUs",
        "nvidia-smi shows no processes running",
    ],
)
def test_fewer_gpus_or_a_network_device_is_not_no_gpu(said: str) -> None:
    assert not cue_says("no_gpu_seen", said)


def test_outside_a_container_no_gpu_does_not_name_the_container(tmp_path: Path) -> None:
    ranked = ranked_without_critical(tmp_path, "torch sees no GPU on my workstation.")
    assert "driver.container" not in ranked[:1]


# -- a setting it failed without --------------------------------------------------------


def test_failing_until_a_setting_was_made_points_where_it_steers(tmp_path: Path) -> None:
    said = "Our RoCE cluster fails with NCCL IB errors until we set NCCL_IB_GID_INDEX=3."
    assert _top(tmp_path, said)[0] == "net.ib_config"
    waited = "The job failed with an NCCL error; it waits until NCCL_TIMEOUT=1800 passes."
    assert _top(tmp_path, waited)[0] != "net.ib_config"


# -- WSL under a failure of no class ------------------------------------------------------


def test_an_unclassified_failure_under_wsl_is_wsl(tmp_path: Path) -> None:
    said = (
        "Multi-GPU training on Windows 11 with WSL2 and two RTX 3090 fails with an NCCL error, "
        "single GPU works."
    )
    assert _top(tmp_path, said)[0] == "driver.wsl"
    native = said.replace("Windows 11 with WSL2", "Ubuntu 22.04")
    assert "driver.wsl" not in _top(tmp_path, native)


# -- an RDMA port without a link ----------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "ibstat on node 2 shows State: Down, Physical state: Polling on mlx5_1.",
        "the IB link keeps flapping on one node",
        "checking ibstatus showed the port state Down on mlx5_2",
        "we saw flapping ports on the leaf switch",
        # up on the wire, no subnet manager: INIT
        "ibv_devinfo shows port state PORT_INIT on every node after the outage",
        "ibstat 里每个口 Physical state 都是 LinkUp，但是 State 是 Initializing",
    ],
)
def test_a_port_said_down_points_at_the_link(tmp_path: Path, said: str) -> None:
    assert cue_says("ib_port_down", said)
    hang = "Two node training is very slow and then hangs; " + said
    assert _top(tmp_path, hang)[0] == "net.ib_link"


def test_jobs_that_time_out_across_a_port_said_down(tmp_path: Path) -> None:
    # a plural subject is still the job timing out: the watchdog's stall
    said = "Jobs crossing node-7 time out; ibstatus showed the port state Down on mlx5_2."
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses[0].symptom.startswith("a collective timed out")
    assert report.top(1) == ["net.ib_link"]


@pytest.mark.parametrize(
    "said",
    [
        "ibstat shows State: Active, Physical state: LinkUp on every port",
        "2: eth1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc mq state DOWN mode DEFAULT",
        "we shut the port down for maintenance last week",
        "ibstat shows State: Active after the subnet manager finished initializing the fabric",
    ],
)
def test_a_port_up_or_an_ethernet_state_is_not_said_down(said: str) -> None:
    assert not cue_says("ib_port_down", said)


@pytest.mark.parametrize(
    "said",
    [
        "ibstat on node-37: mlx5_2 shows Rate: 100 while every other port is at 200.",
        "port 1 of mlx5_3 came up at 100 Gb/s instead of 200",
        "node-37 的 mlx5_2 那个口 Rate 显示是 100，其它口都是 200。",
    ],
)
def test_a_port_said_slower_than_its_siblings_points_at_the_link(tmp_path: Path, said: str) -> None:
    assert cue_says("ib_port_slow", said)
    slow = "Training on 16 nodes is 30% slower whenever node-37 is in the list. " + said
    assert _top(tmp_path, slow)[0] == "net.ib_link"


@pytest.mark.parametrize(
    "said",
    [
        "ibstat shows Rate: 200 on every port of every node",
        # a training speed beside a port, a bus bandwidth in bytes
        "MASTER_PORT is 29500 and the job runs at 100 it/s instead of 200",
        "the IB busbw speed is 100 GB/s vs 200 on the other pair",
    ],
)
def test_ports_at_one_rate_or_other_speeds_are_not_a_slow_port(said: str) -> None:
    assert not cue_says("ib_port_slow", said)


# -- launchers nested -------------------------------------------------------------------


def test_a_launcher_around_mp_spawn_is_a_double_launch(tmp_path: Path) -> None:
    said = (
        "We started the script with torchrun --nproc_per_node 8 and inside the script we also "
        "call mp.spawn for 8 processes, now there are 64 processes and it hangs."
    )
    assert _top(tmp_path, said)[0] == "launch.duplicate_launch"


@pytest.mark.parametrize(
    "said",
    [
        "I replaced mp.spawn with torchrun and it still hangs.",
        "We moved from torchrun to mp.spawn to launch 8 processes.",
        "torchrun --nproc_per_node 8 train.py hangs at the first all_reduce.",
    ],
)
def test_one_launcher_or_one_swapped_for_another_is_not_nested(said: str) -> None:
    assert not cue_says("nested_launch", said)


# -- clocks held down, a link trained narrow -----------------------------------------------


def test_clocks_held_down_are_a_slow_job_of_heat_or_power(tmp_path: Path) -> None:
    said = (
        "GPU clocks drop to 800 MHz during training; nvidia-smi -q shows Clocks Throttle "
        "Reasons: HW Slowdown Active, and the GPUs are at 88C."
    )
    assert _top(tmp_path, said)[0] == "gpu.thermal_power"
    assert not critical_ids(diagnose_text(tmp_path, said))
    assert not cue_says("gpu_throttled", "HW Slowdown : Not Active")
    assert not cue_says("gpu_throttled", "        HW Slowdown                       : Not Active")


@pytest.mark.parametrize(
    ("said", "hot"),
    [
        ("GPU 6 sits at 88C while the others are around 65-70C", True),
        ("my card hits 95 °C after ten minutes", True),
        ("temps around 101 degrees on the hottest card", True),
        ("the GPUs run at 72C, as they always did", False),
        ("we set the fan curve to reach 100% at 85C, GPU utilisation is 100%", False),
        ("GPU 3 shows 88% utilisation", False),
    ],
)
def test_a_gpu_at_its_slowdown_temperature_is_held_down(said: str, hot: bool) -> None:
    assert cue_says("gpu_throttled", said) is hot


def test_a_pcie_link_below_its_width_is_the_slow_node(tmp_path: Path) -> None:
    said = (
        "nvidia-smi -q shows Link Width Current x4 instead of x16 on GPU 1 and the job is much "
        "slower on that node."
    )
    assert _top(tmp_path, said)[0] == "gpu.pcie_degraded"
    assert not cue_says("pcie_downtrained", "the card runs at x16, Gen4, as expected")


def test_pcie_hardware_changed_on_a_slow_node_weighs_for_its_link(tmp_path: Path) -> None:
    said = (
        "all_reduce_perf on server B gives half the bus bandwidth of the identical server A, no "
        "errors, training on B is 40% slower. The vendor replaced the GPU in slot 5 and one of "
        "the risers on B last month. "
        "Setting the PCIe ACS off in the BIOS changed nothing."
    )
    top = _top(tmp_path, said)
    assert top[0] == "gpu.pcie_degraded"
    # ACS said to be off is no ACS under the GPUs
    p2p = next(h for h in diagnose_text(tmp_path, said).hypotheses if h.id == "nccl.p2p")
    assert all("PCIe ACS, an IOMMU" not in r for r in p2p.for_)
    assert not cue_says("pcie_hardware", "The servers are identical, same BIOS and driver.")


# -- a setting from elsewhere -----------------------------------------------------------


def test_an_nccl_setting_from_another_cluster_is_the_setting(tmp_path: Path) -> None:
    said = (
        "We had NCCL_IB_HCA=mlx5_5 exported in our .bashrc from an old cluster; on the new "
        "cluster NCCL fails with no device found."
    )
    assert _top(tmp_path, said)[0] == "nccl.env"
    assert not cue_says("inherited_setting", "We set NCCL_IB_HCA=mlx5_0 for this cluster.")


# -- stuck, in Chinese ------------------------------------------------------------------


def test_stuck_at_in_chinese_is_a_hang(tmp_path: Path) -> None:
    said = "两台机器多机训练卡在初始化, 机器上有多个网卡。"
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert report.hypotheses[0].symptom.startswith("the job hangs")
    # a count of cards is no hang ("two cards in one machine", "the card at GPU 0")
    cards = "两张卡在同一台机器上, 显卡在0号位置, 训练报错 NCCL error。"
    assert not diagnose_text(tmp_path, cards).hypotheses[0].symptom.startswith("the job hangs")


# -- an Xid by its number -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("and dmesg shows Xid 79 on one GPU.", "gpu.lost"),
        ("and the kernel log has XID 48 on GPU 3.", "gpu.ecc"),
        ("and the node logged Xid: 74 before it.", "gpu.nvlink"),
    ],
)
def test_an_xid_named_by_number_is_read_by_its_meaning(
    tmp_path: Path, said: str, meant: str
) -> None:
    crash = "After a few hours the training crashes with NCCL communicator was aborted, "
    bare = ranked_without_critical(tmp_path, crash + "nothing else in the logs.")
    assert meant not in bare[:1]
    assert meant in ranked_without_critical(tmp_path, crash + said)[:3]


def test_an_informational_xid_or_a_bare_word_names_no_fault(tmp_path: Path) -> None:
    crash = "After a few hours the training crashes with NCCL communicator was aborted, "
    base = ranked_without_critical(tmp_path, crash + "nothing else in the logs.")
    # Xid 154 only says the recovery action changed; "XID" with no number is no code
    for said in ("and dmesg shows Xid 154.", "and we grep for XID errors daily."):
        assert ranked_without_critical(tmp_path, crash + said) == base


# -- locked memory, the fabric manager, the host's network ------------------------------


def test_a_small_locked_memory_limit_is_the_rdma_set_up(tmp_path: Path) -> None:
    said = "ulimit -l is 64 on the compute nodes and NCCL fails to use InfiniBand."
    assert _top(tmp_path, said)[0] == "net.ib_config"
    for unlimited in ("docker run --ulimit memlock=-1 image", "ulimit -l unlimited"):
        assert not cue_says("memlock_small", unlimited)


def test_the_fabric_manager_named_under_a_failure(tmp_path: Path) -> None:
    said = (
        "The nvidia-fabricmanager version differs from the driver version after an update; "
        "every CUDA program fails with an error."
    )
    assert "gpu.fabric_manager" in _top(tmp_path, said)[:2]
    assert not cue_says(
        "fabric_manager_said", "Fabric Manager: 580.65.06 (running, State: Completed)"
    )
    # one said not to run is the failure itself
    assert cue_says("fabric_manager_said", "nvidia-fabricmanager is not running on the node")


def test_a_job_that_works_on_the_host_network(tmp_path: Path) -> None:
    said = "NCCL hangs in Kubernetes with the Calico network; with hostNetwork: true it works."
    assert _top(tmp_path, said)[0] == "net.socket_interface"
    assert not cue_says("host_network_fixes", "we run the pods with hostNetwork: true")
    assert not cue_says("host_network_fixes", "with hostNetwork: true it still doesn't work")


# -- who joined, what changed, how many nodes -------------------------------------------


def test_a_node_that_never_joined_is_the_rendezvous(tmp_path: Path) -> None:
    said = (
        "Only one of the two nodes started the job (the other node's torchrun crashed), and the "
        "first node waits at rendezvous forever."
    )
    assert _top(tmp_path, said)[0] == "launch.rendezvous"
    assert not cue_says("rendezvous_wait", "the rendezvous completed and training started")


def test_software_changed_on_one_node_only_is_a_version_mismatch(tmp_path: Path) -> None:
    said = "After upgrading PyTorch on only one of the two nodes, multi-node training hangs."
    assert _top(tmp_path, said)[0] == "nccl.version_mismatch"
    both = "After upgrading PyTorch on both nodes, multi-node training hangs."
    assert not cue_says("one_node_changed", both)


def test_more_than_one_node_spans_nodes_and_an_index_is_no_negation(tmp_path: Path) -> None:
    said = (
        "The training hangs when using more than one node, a single node works fine. Each node "
        "has several network interfaces."
    )
    assert cue_says("multi_node", said)
    assert _top(tmp_path, said)[0] in ("net.socket_interface", "net.unreachable")
    # "process 0 waits forever" is process number 0 waiting, not "0 waits"
    waits = "Process 0 waits forever at init_process_group; the other node cannot reach it."
    assert diagnose_text(tmp_path, waits).hypotheses[0].symptom.startswith("the job hangs")


# -- a newer release, a second NCCL, a setting that avoids it, a link inactive ------------


def test_a_newer_nccl_that_fixes_a_hang_is_an_nccl_bug(tmp_path: Path) -> None:
    said = "Training hangs on H100 with NCCL 2.19.3 when CUDA graphs are enabled; 2.20.5 fixes it."
    assert _top(tmp_path, said)[0] == "nccl.internal"
    bare = "Training hangs on H100 with NCCL 2.19.3 when CUDA graphs are enabled."
    assert _top(tmp_path, bare)[0] != "nccl.internal"


def test_an_nccl_put_in_front_of_pytorchs_own(tmp_path: Path) -> None:
    assert cue_says("other_nccl_loaded", "we LD_PRELOAD the system libnccl.so.2 from /usr/lib")
    # nccl-tests and plugins run with NCCL's folder on the library path as a matter of course
    assert not cue_says(
        "other_nccl_loaded", "mpirun -x LD_LIBRARY_PATH=/opt/nccl/lib ./all_reduce_perf"
    )


def test_a_setting_that_avoids_it_made_it_work(tmp_path: Path) -> None:
    said = (
        'NCCL fails on our DGX H100 with "NVLS multicast ... failed"; NCCL_NVLS_ENABLE=0 avoids it.'
    )
    assert _top(tmp_path, said)[0] == "nccl.nvls"
    # said of a setting that changed nothing, it is no setting that worked
    for no_help in (
        "We set NCCL_P2P_DISABLE=1 but it did not avoid it.",
        "The hang persists; NCCL_P2P_DISABLE=1 never avoids the error.",
    ):
        path = tmp_path / "said.txt"
        path.write_text(no_help + "\n")
        assert settings_that_worked(facts_of(read_paths([str(path)]))) == ()


def test_nvlinks_shown_inactive_a_few_words_on(tmp_path: Path) -> None:
    said = (
        "nvidia-smi nvlink --status shows GPU 4 links as inactive after a reboot and all_reduce "
        "bandwidth drops by half."
    )
    assert _top(tmp_path, said)[0] == "gpu.nvlink"
    assert not cue_says(
        "nvlink_unused", "nvidia-smi nvlink --status shows every GPU's links as active at 25 GB/s"
    )


# -- an RDMA failure after the job ran ----------------------------------------------------


def test_an_rdma_failure_after_hours_is_the_transport_not_the_set_up(tmp_path: Path) -> None:
    late = (
        "After 2 hours of training, NCCL reports NET/IB : Got completion from peer 10.0.0.5<1234> "
        "with error 12, opcode 0, len 0, vendor err 129 and the job aborts."
    )
    early = late.replace("After 2 hours of training, NCCL", "At start-up NCCL")
    after = ranked_without_critical(tmp_path, late)
    assert after[0] == "net.ib_transport"
    assert "net.ib_config" not in after[:3]
    assert "net.ib_config" in ranked_without_critical(tmp_path, early)[:3]


# -- a memory registration refused --------------------------------------------------------

_REG_MR = (
    "node1:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
    "node1:1234:1300 [0] misc/ibvwrap.cc:66 NCCL WARN Call to ibv_reg_mr failed with error {err}\n"
    "node1:1234:1300 [0] NCCL INFO transport/net_ib.cc:1076 -> 2\n"
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error.\n"
)


def test_a_registration_refused_with_efault_is_gpudirect_rdma(tmp_path: Path) -> None:
    # NCCL's own WARN: the GDR rule reads it (critical); the ranked causes agree
    assert _top(tmp_path, _REG_MR.format(err="Bad address"))[0] == "net.gdr"
    # the same title in words ("ibv_reg_mr_iova2 failed with error Bad address")
    said = "Title: ibv_reg_mr_iova2 failed with error Bad address multiple times\non my 3090 env"
    assert _top(tmp_path, said)[0] == "net.gdr"
    # a memlock limit answers ENOMEM: the set-up, not the GPU path
    assert _top(tmp_path, _REG_MR.format(err="Cannot allocate memory"))[0] == "net.ib_config"


# -- what made it work ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "cause"),
    [
        ("adding --ipc=host to docker run fixed it.", "nccl.shm"),
        ("increasing --shm-size to 16g fixed it.", "nccl.shm"),
        ("changing --master_port to 29501 fixed it.", "launch.port_in_use"),
    ],
)
def test_what_made_it_work_names_the_cause(tmp_path: Path, said: str, cause: str) -> None:
    failed = "The job in the container failed at start with an NCCL error; "
    assert _top(tmp_path, failed + said)[0] == cause
    assert _top(tmp_path, failed + "nothing we changed made a difference.")[0] != cause


def test_equal_batches_that_made_it_work_name_the_uneven_ranks(tmp_path: Path) -> None:
    said = (
        "DDP hangs at the end of the epoch; using drop_last=True in the DistributedSampler "
        "fixed it."
    )
    assert _top(tmp_path, said)[0] == "app.collective_mismatch"
    assert not cue_says("even_batches_worked", "We use drop_last=True and it still hangs.")
    assert not cue_says("port_change_worked", "We changed the port to 29501 and it still fails.")
    assert not cue_says("port_change_worked", "Changing the port to 29501 did not work.")
    assert not cue_says("shm_fix_worked", "--shm-size=16g does not fix it")


@pytest.mark.parametrize(
    "said",
    [
        "DDP training hangs after a while. Setting num_workers=0 in the DataLoader fixed it.",
        "The 8-GPU job hangs at start. With more than one shard file the problem is solved.",
        "Training hangs with 4 GPUs; it works once we set persistent_workers=False.",
    ],
)
def test_a_data_loading_change_that_made_it_work_names_the_ranks_input(
    tmp_path: Path, said: str
) -> None:
    assert cue_says("data_loading_worked", said)
    assert _top(tmp_path, said)[0] == "app.hang"


@pytest.mark.parametrize(
    "said",
    [
        "DDP training hangs at start. Setting num_workers=0 did not fix it.",
        "DDP training hangs at start; it still hangs with num_workers=0.",
        "DDP training hangs at start with num_workers=8 and 4 shards.",
    ],
)
def test_data_loading_named_without_a_fix_leaves_the_hang_to_its_other_cues(
    tmp_path: Path, said: str
) -> None:
    assert not cue_says("data_loading_worked", said)
    assert _top(tmp_path, said)[0] != "app.hang"
