"""Readings the containers-and-clouds and first-run batteries asked for: each fires on a small
realistic report, and stays silent where its mechanism does not hold.

Every case runs the whole pipeline (``diagnose_text``) unless it checks one fact.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.run import CudaOutOfMemory
from nccl_doctor.facts.settings import taken
from nccl_doctor.signs.settings import settings_that_did_not_help, settings_that_worked
from tests.helpers import critical_ids, cue_says, diagnose_text, facts_text

# -- a setting said to make the job work: Chinese verbs, one sentence ---------------------------

_CN_P2P = (
    "单机 4 卡 A40 虚拟机，第一个 all_reduce 就卡住，30 分钟后 watchdog 超时。\n"
    "设置 NCCL_P2P_DISABLE=1 之后训练和 nccl-tests 都能正常跑完，只是带宽低一些。\n"
)


def test_a_chinese_sentence_that_the_job_runs_through_with_p2p_off(tmp_path: Path) -> None:
    [said] = settings_that_worked(facts_text(tmp_path, _CN_P2P))
    assert (said.name, said.value) == ("NCCL_P2P_DISABLE", "1")
    assert diagnose_text(tmp_path, _CN_P2P).top(1) == ["nccl.p2p"]


def test_a_chinese_sentence_that_it_still_hangs_with_p2p_off_is_no_workaround(
    tmp_path: Path,
) -> None:
    text = "设置 NCCL_P2P_DISABLE=1 之后还是卡住，单卡跑完全正常。\n"
    assert settings_that_worked(facts_text(tmp_path, text)) == ()


def test_a_setting_and_a_later_sentence_that_runs_work_are_not_one_claim(tmp_path: Path) -> None:
    text = (
        "NCCL_SOCKET_IFNAME=ens3f0np0 makes no difference (it was already choosing that "
        "interface). Single-node 4-GPU runs work on both machines.\n"
    )
    facts = facts_text(tmp_path, text)
    assert settings_that_worked(facts) == ()
    assert [s.name for s in settings_that_did_not_help(facts)] == ["NCCL_SOCKET_IFNAME"]


def test_a_dot_inside_a_sentence_keeps_the_setting_and_its_outcome_together(
    tmp_path: Path,
) -> None:
    text = "NCCL_P2P_DISABLE=1 (from docs.nvidia.com/deeplearning/nccl) fixed the hang.\n"
    [said] = settings_that_worked(facts_text(tmp_path, text))
    assert said.name == "NCCL_P2P_DISABLE"


# -- the initialisation said to get through: the hang is later -----------------------------------


def test_init_said_to_get_through_is_no_hang_of_the_initialisation(tmp_path: Path) -> None:
    for text in (
        "torchrun 起来之后，init_process_group 能正常过去，但是第一个 all_reduce 就卡住不动了。\n",
        (
            "The script gets through init_process_group and then hangs forever at the first "
            "all_reduce inside the DDP constructor.\n"
        ),
    ):
        report = diagnose_text(tmp_path, text)
        assert "launch.rendezvous" not in [f.id for f in report.findings], text


def test_init_said_not_to_get_through_is_the_initialisation_hang(tmp_path: Path) -> None:
    text = "两台机器训练，init_process_group 一直没通过，卡住了。\n"
    report = diagnose_text(tmp_path, text)
    assert "launch.rendezvous" in [f.id for f in report.findings]


# -- a terse question is a guess ------------------------------------------------------------------


def test_a_terse_question_is_asked_not_said() -> None:
    assert not cue_says("nvlink_unused", "Title: step time doubled, NCCL not using NVLink?")
    assert cue_says("nvlink_unused", "NCCL_DEBUG shows NCCL is not using NVLink at all.")
    # a why-question presupposes what it asks about
    assert cue_says("nvlink_unused", "Why is NCCL not using NVLink?")


# -- the firewall stopped is no filter ------------------------------------------------------------


def test_a_stopped_firewall_filters_nothing() -> None:
    assert not cue_says("traffic_filtered", "I also turned it off (systemctl stop firewalld).")
    assert not cue_says("traffic_filtered", "两台之间 ping 都正常，防火墙我也都关掉了。")
    assert cue_says("traffic_filtered", "The firewalld service runs with the default zone.")
    assert cue_says("traffic_filtered", "两台机器的防火墙都开着，只放行了 22 端口。")


# -- RDMA completions from a peer: the job spans nodes --------------------------------------------

_IB = (
    "aks-vmss000003:112:401 [3] transport/net_ib.cc:1333 NCCL WARN NET/IB : Got completion from "
    "peer 172.16.0.23<51044> with error 12, opcode 0, len 0, vendor err 129 (Send)\n"
    "$ ibstat mlx5_ib3\n"
    "CA 'mlx5_ib3'\n"
    "\tCA type: MT4124\n"
    "\tNumber of ports: 1\n"
    "\tPort 1:\n"
    "\t\tState: Down\n"
    "\t\tPhysical state: Polling\n"
    "\t\tRate: 10\n"
    "\t\tLink layer: InfiniBand\n"
)


def test_a_port_down_beside_a_peers_completion_error_is_the_link(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _IB)
    assert critical_ids(report)[:1] == ["net.ib_link"]
    assert "completion from peer 172.16.0.23" in report.findings[0].summary or any(
        "172.16.0.23" in c.text for c in report.findings[0].evidence
    )


def test_a_port_down_on_one_node_with_no_completion_error_is_information(tmp_path: Path) -> None:
    ports = _IB.split("\n", 1)[1]
    report = diagnose_text(tmp_path, "aks-vmss000003 runs the job alone.\n" + ports)
    assert "net.ib_link" not in critical_ids(report)


# -- WSL with P2P off said to work ----------------------------------------------------------------

_WSL = (
    "DDP with 2x RTX 4090 in Docker Desktop hangs at the first all_reduce. uname -r inside the "
    "container prints 5.15.153.1-microsoft-standard-WSL2.\n"
)


def test_wsl_and_p2p_off_said_to_work_is_wsl(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WSL + "If I add NCCL_P2P_DISABLE=1 the job runs.\n")
    assert critical_ids(report)[:1] == ["driver.wsl"]
    assert "nccl.p2p" not in [f.id for f in report.findings]


def test_wsl_without_the_workaround_is_no_root_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WSL)
    assert "driver.wsl" not in critical_ids(report)


def test_p2p_off_said_to_work_without_wsl_is_p2p(tmp_path: Path) -> None:
    text = "DDP with 2x RTX 4090 hangs at the first all_reduce. With NCCL_P2P_DISABLE=1 it runs.\n"
    report = diagnose_text(tmp_path, text)
    assert "driver.wsl" not in [f.id for f in report.findings]
    assert report.top(1) == ["nccl.p2p"]


# -- torch's OOM from inside a container lists the process under its host PID ------------------

_OOM = (
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a "
    "total capacity of 21.99 GiB of which 117.44 MiB is free. Process 31544 has 18.93 GiB memory "
    "in use. Process 31545 has 412.00 MiB memory in use. Process 31546 has {other} memory in use. "
    "Of the allocated memory 18.21 GiB is allocated by PyTorch, and 229.18 MiB is reserved by "
    "PyTorch but unallocated.\n"
)


def test_the_row_that_holds_pytorchs_reserve_is_the_process_itself(tmp_path: Path) -> None:
    [oom] = facts_text(tmp_path, _OOM.format(other="412.00 MiB")).of(CudaOutOfMemory)
    assert oom.process_mib == 18.93 * 1024
    assert oom.other_processes == ((31545, 412.0), (31546, 412.0))
    report = diagnose_text(tmp_path, _OOM.format(other="412.00 MiB"))
    assert critical_ids(report)[:1] == ["gpu.oom"]
    assert "gpu.contention" not in [f.id for f in report.findings]


def test_another_tenants_gigabytes_beside_it_are_contention(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _OOM.format(other="2.50 GiB"))
    assert critical_ids(report)[:1] == ["gpu.contention"]


def test_this_process_named_keeps_every_listed_row_another(tmp_path: Path) -> None:
    text = _OOM.format(other="412.00 MiB").replace(
        "Of the allocated",
        "Including non-PyTorch memory, this process has 1.20 GiB memory in use. Of the allocated",
    )
    [oom] = facts_text(tmp_path, text).of(CudaOutOfMemory)
    assert oom.process_mib == 1.2 * 1024
    assert [pid for pid, _ in oom.other_processes] == [31544, 31545, 31546]


# -- the host's own nvidia-smi fails too: the host's driver ---------------------------------------

_MISMATCH = (
    "docker run --gpus all fails: nvidia-container-cli: initialization error: nvml error: "
    "driver/library version mismatch\n"
    "Failed to initialize NVML: Driver/library version mismatch\n"
)


def test_a_mismatch_the_host_shows_too_is_the_hosts_driver(tmp_path: Path) -> None:
    text = "Title: containers fail to start, host nvidia-smi broken too\n" + _MISMATCH
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.version_mismatch"]


def test_a_mismatch_inside_the_container_alone_is_the_image(tmp_path: Path) -> None:
    text = (
        "Title: nvidia-smi fails inside our image, host nvidia-smi works fine\n"
        "$ docker exec -it trainer nvidia-smi\n"
        "Failed to initialize NVML: Driver/library version mismatch\n"
    )
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.container"]


def test_nvidia_container_clis_mismatch_is_the_hosts_driver(tmp_path: Path) -> None:
    assert critical_ids(diagnose_text(tmp_path, _MISMATCH))[:1] == ["driver.version_mismatch"]


# -- the DataLoader's shared memory, in a sentence that names NCCL -------------------------------


def test_the_dataloaders_shm_message_is_the_hosts_limit_even_beside_nccl(tmp_path: Path) -> None:
    text = (
        'The first error (rank 5) is from the DataLoader, not NCCL: it says "Unexpected bus '
        'error encountered in worker. This might be caused by insufficient shared memory (shm)".\n'
    )
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["host.resources"]


def test_nccls_own_shm_line_is_not_the_hosts_limit(tmp_path: Path) -> None:
    text = (
        "node1:2201:2280 [1] NCCL WARN Error: failed to extend /dev/shm/nccl-aDtJ4R to 9637892 "
        "bytes\n"
    )
    report = diagnose_text(tmp_path, text)
    assert "host.resources" not in critical_ids(report)


# -- settings said to stay in place for every run --------------------------------------------------


def test_settings_put_in_etc_environment_are_the_jobs_own(tmp_path: Path) -> None:
    text = (
        "On B I put a few NCCL variables into /etc/environment so every job gets them: "
        "NCCL_P2P_DISABLE=1, NCCL_IB_DISABLE=1 and NCCL_SOCKET_NTHREADS=4.\n"
    )
    facts = facts_text(tmp_path, text)
    assert (taken(facts, "NCCL_P2P_DISABLE"), taken(facts, "NCCL_SOCKET_NTHREADS")) == ("1", "4")


def test_settings_a_base_image_exports_in_profile_d_are_the_jobs_own(tmp_path: Path) -> None:
    text = (
        "Our cluster's base image exports a bunch of NCCL settings in /etc/profile.d: "
        "NCCL_DEBUG=WARN, NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1.\n"
    )
    facts = facts_text(tmp_path, text)
    assert (taken(facts, "NCCL_P2P_DISABLE"), taken(facts, "NCCL_IB_DISABLE")) == ("1", "1")
    # a profile file named with no setting in its sentence sets none
    other = "I checked /etc/profile.d and nothing there. Later I tried NCCL_P2P_DISABLE=1 once.\n"
    assert taken(facts_text(tmp_path, other), "NCCL_P2P_DISABLE") is None


def test_a_setting_tried_once_is_not_the_jobs_own(tmp_path: Path) -> None:
    text = "I tried NCCL_P2P_DISABLE=1 for one run and it made no difference.\n"
    assert taken(facts_text(tmp_path, text), "NCCL_P2P_DISABLE") is None


# -- the first error pinned on a rank that raised --------------------------------------------------

_TIMEOUTS = (
    "Around 30 minutes in, all ranks on node 1 die with ProcessGroupNCCL watchdog timeouts on an "
    "ALLREDUCE.\n"
)


def test_the_first_error_of_the_job_raised_by_one_rank_is_that_rank(tmp_path: Path) -> None:
    text = _TIMEOUTS + (
        "But the first error in the whole job is much earlier: rank 9 raised a FileNotFoundError "
        "for shard-00017.parquet.\n"
    )
    assert diagnose_text(tmp_path, text).top(1) == ["launch.rank_crash"]


def test_the_first_error_being_a_ranks_timeout_is_no_crash(tmp_path: Path) -> None:
    text = _TIMEOUTS + "The first error is on rank 3, which got the watchdog timeout first.\n"
    assert diagnose_text(tmp_path, text).top(1) != ["launch.rank_crash"]


# -- NCCL's "no socket interface" retold -----------------------------------------------------------

_NO_IFACE = (
    'Every job fails at the first collective with "internal error - please report this issue '
    'to the NCCL developers", and the last error line says the bootstrap found no socket '
    "interface.\n"
)


def test_no_socket_interface_retold_with_the_setting_is_the_interface(tmp_path: Path) -> None:
    text = "Our ~/.bashrc exports NCCL_SOCKET_IFNAME=eth0 and NCCL_DEBUG=INFO.\n" + _NO_IFACE
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["net.socket_interface"]
    assert "nccl.internal" not in [f.id for f in report.findings]


def test_no_socket_interface_retold_without_a_setting_names_no_interface(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _NO_IFACE)
    assert "net.socket_interface" not in [f.id for f in report.findings]


# -- the local rank passed as the global rank, quoted in a sentence -------------------------------


def test_a_quoted_call_with_the_local_rank_on_two_nodes_is_a_duplicate(tmp_path: Path) -> None:
    text = (
        "I launch torchrun --nnodes=2 --nproc_per_node=8 --node_rank=0/1 on both nodes. Inside "
        'the script I do init_process_group(backend="nccl", world_size=16, rank=local_rank), '
        "and then everything sits in init_process_group.\n"
    )
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["launch.duplicate_launch"]


def test_the_same_call_on_one_node_is_right(tmp_path: Path) -> None:
    text = (
        "I launch torchrun --nproc_per_node=8 on one node. Inside the script I do "
        'init_process_group(backend="nccl", world_size=8, rank=local_rank), and it hangs.\n'
    )
    assert "launch.duplicate_launch" not in [f.id for f in diagnose_text(tmp_path, text).findings]


# -- a client refused at its own loopback on a job across nodes -----------------------------------


def test_a_client_refused_at_localhost_across_nodes_is_the_master_address(tmp_path: Path) -> None:
    text = (
        "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_port=29500 train.py\n"
        "Node 2 keeps warning that the c10d client socket failed to connect to localhost:29500, "
        "Connection refused, and retries until the rendezvous times out.\n"
    )
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["launch.rendezvous"]


def test_the_same_refusal_on_one_node_is_no_wrong_master(tmp_path: Path) -> None:
    text = (
        "torchrun --standalone --nproc_per_node=8 train.py\n"
        "The c10d client socket failed to connect to localhost:29500, Connection refused.\n"
    )
    findings = diagnose_text(tmp_path, text).findings
    assert not any("its own machine" in f.summary for f in findings)
