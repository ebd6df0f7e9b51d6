"""Circumstances a reporter tells, read through the whole pipeline: each reading fires on the
words that carry it and stays silent on the words that only look like them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nccl_doctor.facts.store import asked
from tests.helpers import cue_says, diagnose_text

_TIMEOUT = (
    "[rank1]:[E311 18:44:02.112221785 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=4471, OpType=BROADCAST, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600024 milliseconds before timing out.\n"
    "[rank2]:[E311 18:44:02.112093402 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=4471, OpType=BROADCAST, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600019 milliseconds before timing out.\n"
    "[rank3]:[E311 18:44:02.112347016 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=4471, OpType=BROADCAST, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
)


def test_the_rank_said_to_sit_at_a_prompt_is_a_long_step_not_a_death(tmp_path: Path) -> None:
    said = (
        "torchrun --nproc-per-node 4 chat.py: rank 0 reads input() and broadcasts it. Output of "
        "ranks 1-3 (rank 0 printed nothing):\n" + _TIMEOUT + "When I come back to the terminal "
        'rank 0 is still sitting at the "You: " prompt.\n'
    )
    report = diagnose_text(tmp_path, said)
    assert report.top(1) == ["app.hang"]
    # without the words, the rank that never reported is the one that died first
    alone = "torchrun --nproc-per-node 4 chat.py\nOutput of ranks 1-3:\n" + _TIMEOUT
    assert diagnose_text(tmp_path, alone).top(1) == ["launch.rank_crash"]


def test_a_local_rank_that_died_of_a_signal_before_the_timeouts_is_the_cause(
    tmp_path: Path,
) -> None:
    said = (
        "On node 1 all four ranks print the usual Watchdog caught collective operation timeout. "
        "On node 2, about 30 minutes before node 1's timeouts, the torchrun agent logged that "
        "local_rank 2 failed with exitcode -11, and then the agent sent SIGTERM to the other "
        "three local ranks.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["launch.rank_crash"]


def test_a_nested_engine_launch_leads_its_oom(tmp_path: Path) -> None:
    said = (
        "I start my script with `torchrun --nproc-per-node 4 batch_infer.py`, and inside the "
        'script I create `LLM(model="meta-llama/Llama-3.1-70B-Instruct", '
        "tensor_parallel_size=4)`. It dies with CUDA out of memory while loading.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["launch.duplicate_launch"]
    told = said.replace(
        "tensor_parallel_size=4",
        "tensor_parallel_size=4, distributed_executor_backend='external_launcher'",
    )
    assert "launch.duplicate_launch" not in diagnose_text(tmp_path, told).top(1)


def test_an_xid_named_beside_a_kernel_fault_is_the_gpus(tmp_path: Path) -> None:
    said = (
        'One of the four MPI ranks logs a CUDA "unspecified launch failure" from inside a '
        "kernel, the others then sit in the all-reduce. At the same second the kernel log has "
        "several NVRM Xid 119 lines for the GPU that rank 2 was using.\n"
    )
    report = diagnose_text(tmp_path, said)
    assert report.top(1) == ["gpu.xid"]
    assert report.findings[0].severity.value == "warning"
    # an application's own Xid (13) is its kernel's fault, not the GPU's; no failure, no finding
    app = said.replace("Xid 119", "Xid 13")
    assert [f.id for f in diagnose_text(tmp_path, app).findings][:1] != ["gpu.xid"]
    calm = "We saw an NVRM Xid 119 on this node last year; training runs fine since.\n"
    assert not [f for f in diagnose_text(tmp_path, calm).findings if f.id == "gpu.xid"]


@pytest.mark.parametrize(
    "said",
    [
        (
            "torch.cuda.is_available() returns False and every rank reports CUDA error: "
            "unknown error. lsmod | grep nvidia lists nvidia, nvidia_modeset and nvidia_drm, "
            "but no nvidia_uvm.\n"
        ),
        (
            "两个进程都在第一次用 GPU 的时候报 CUDA error: unknown error。我们自己的镜像上 "
            "ls /dev/nvidia* 只有 nvidia0、nvidiactl，没有 nvidia-uvm。\n"
        ),
    ],
)
def test_the_uvm_module_said_missing_explains_999(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said).top(1) == ["driver.uvm"]


def test_the_uvm_module_said_loaded_is_no_uvm_finding(tmp_path: Path) -> None:
    said = (
        "Every rank reports CUDA error: unknown error. lsmod shows nvidia_uvm is loaded and "
        "/dev/nvidia-uvm exists.\n"
    )
    assert "driver.uvm" not in [f.id for f in diagnose_text(tmp_path, said).findings]


def test_mig_devices_said_by_their_prefix_explain_the_ordinal(tmp_path: Path) -> None:
    said = (
        "Rank 1 fails immediately at torch.cuda.set_device(1) complaining about an invalid "
        "device ordinal, and torch.cuda.device_count() prints 1. CUDA_VISIBLE_DEVICES holds "
        "identifiers that start with MIG- followed by a UUID.\n"
    )
    report = diagnose_text(tmp_path, said)
    assert report.top(1) == ["gpu.mig"]
    whole = said.replace(
        "identifiers that start with MIG- followed by a UUID", "0,1 as numbers; MIG is disabled"
    )
    assert "gpu.mig" not in diagnose_text(tmp_path, whole).top(1)


def test_the_driver_halves_said_to_differ_lead(tmp_path: Path) -> None:
    said = (
        "Since Monday torch.cuda.is_available() returns False on gpu14, and nvidia-smi prints "
        "one line complaining that the driver and the library versions don't match.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["driver.version_mismatch"]
    upgraded = (
        "Since Monday torch.cuda.is_available() returns False on gpu14. unattended-upgrades "
        "upgraded nvidia-driver-550 from 550.90.07 to 550.127.05 on Saturday. uptime says 41 "
        "days, so the node hasn't been rebooted since.\n"
    )
    assert diagnose_text(tmp_path, upgraded).top(1) == ["driver.version_mismatch"]
    assert cue_says("driver_upgraded", "We upgraded the nvidia driver to 550 last week.")
    assert not cue_says(
        "driver_upgraded", "We upgraded the nvidia driver to 550 and then rebooted the node."
    )
    assert not cue_says("driver_halves_differ", "The driver and the library versions match.")


def test_the_driver_halves_told_in_chinese_japanese_and_korean(tmp_path: Path) -> None:
    chinese = (
        "周一开始 gpu14 上每个 rank 都 CUDA 初始化失败。周六驱动被自动升级了 (nvidia-driver-550 "
        "550.90.07 -> 550.127.05)，机器一直没有重启。\n"
    )
    assert diagnose_text(tmp_path, chinese).top(1) == ["driver.version_mismatch"]
    japanese = (
        "各 rank が CUDA の初期化で失敗します。"
        "ドライバとライブラリのバージョンが一致しないと出ます。\n"
    )
    assert diagnose_text(tmp_path, japanese).top(1) == ["driver.version_mismatch"]
    assert cue_says("driver_halves_differ", "nvidia-smi 说驱动和库的版本不匹配")
    assert cue_says(
        "driver_halves_differ", "드라이버와 라이브러리 버전이 일치하지 않는다고 나옵니다"
    )
    assert not cue_says("driver_halves_differ", "ドライバとライブラリのバージョンは一致しています")
    assert cue_says(
        "driver_upgraded", "nvidia-driver-535 のパッケージが 535.183.01 に上がっていました"
    )
    assert cue_says("driver_upgraded", "上周我更新了显卡驱动")
    assert not cue_says("driver_upgraded", "驱动升级之后重启了机器")
    assert not cue_says("driver_upgraded", "ドライバを更新して再起動しました")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("服务器还没有重启", True),
        ("サーバ自体は再起動していません", True),
        ("서버는 재부팅하지 않았습니다", True),
        ("昨天已经重启过服务器", False),
        # a wish, not what happened
        ("できれば再起動せずに直したいです", False),
    ],
)
def test_a_machine_not_rebooted_in_other_languages(text: str, says: bool) -> None:
    assert cue_says("not_rebooted", text) is says


def test_the_loader_workers_shared_memory_is_the_hosts(tmp_path: Path) -> None:
    said = (
        "Since moving to Docker one rank dies: its message says a DataLoader worker was killed "
        "by a bus error and mentions insufficient shared memory. df -h /dev/shm shows 64M. "
        "With num_workers=0 it never crashes.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["host.resources"]
    assert not cue_says("loader_shm", "The DataLoader uses 8 workers and pinned memory.")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("nc -zv to the peer's eth1 address (192.168.1.3) on any port just times out.", True),
        ("在第二台上 telnet 172.16.3.21 29500 一直卡着连不上。", True),
        ("nc -zv 10.0.0.2 29500 works from both nodes.", False),
        ("telnet to port 29500 connects fine.", False),
    ],
)
def test_a_port_probed_and_not_reached(text: str, says: bool) -> None:
    assert cue_says("port_probe_fails", text) is says


def test_a_reporters_guess_is_not_what_they_saw(tmp_path: Path) -> None:
    said = (
        "Two nodes fail at the first collective inside Docker with an NCCL unhandled system "
        "error; a warning says ibv_reg_mr failed with Cannot allocate memory. I guessed it's "
        "GPUDirect RDMA not working inside the container. Inside the container ulimit -l "
        "says 64.\n"
    )
    report = diagnose_text(tmp_path, said)
    assert "net.gdr" not in [f.id for f in report.findings]
    assert report.top(1) == ["net.ib_config"]


def test_a_failure_retold_beside_a_quoted_notice_is_still_read(tmp_path: Path) -> None:
    said = (
        'Two-node training starts, NCCL init completes (the INFO log says "Using network IB"), '
        "and then at the first all-reduce the ranks fail with NCCL warnings about a completion "
        "with status=12 from the peer, then ncclRemoteError. With NCCL_IB_DISABLE=1 it trains, "
        "but much slower over TCP.\n"
    )
    report = diagnose_text(tmp_path, said)
    assert (
        report.hypotheses[0].symptom != "the job or a benchmark is slow, with no error (the "
        "reporter's words)"
    )
    assert report.top(1)[0].startswith("net.")


def test_a_nodes_missing_launcher_named_by_the_host(tmp_path: Path) -> None:
    said = (
        "The batch script calls torchrun --nnodes=2 directly and the rendezvous times out. "
        "All lines in the log come from gn031; I never see gn032 in any log line. I ssh'd to "
        "gn032 while the job was running and there was no python process at all. I asked the "
        "admins about a firewall and they say there is none between compute nodes.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["launch.rendezvous"]
    assert not cue_says(
        "traffic_filtered", "I asked the admins about a firewall and they say there is none."
    )


def test_a_link_width_retold_max_first(tmp_path: Path) -> None:
    assert cue_says("pcie_downtrained", "GPU 1 reports Link Width Max 16x and Current 8x.")
    assert cue_says(
        "pcie_downtrained", "the max link width is 16x but the current link width is 8x"
    )
    assert not cue_says("pcie_downtrained", "Link Width Max 8x and Current 8x on every GPU.")
    assert not cue_says("pcie_downtrained", "Current 8x, Max 8x: the slot is x8 by design.")


def test_a_guess_opens_its_clause_only() -> None:
    text = "I guessed it's GPUDirect RDMA, but it fails on a single GPU too."
    guess = re.search("GPUDirect RDMA", text)
    fails = re.search("fails on a single GPU", text)
    assert guess is not None
    assert fails is not None
    assert asked(text, guess)
    assert not asked(text, fails)
    found = "I figured out that only node 3 fails."
    only = re.search("only node 3", found)
    assert only is not None
    assert not asked(found, only)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("torchrun x.py, and the script makes LLM(model=m, tensor_parallel_size=4)", True),
        ("torchrun x.py; inside it sgl.Engine(model_path=m, tp_size=2)", True),
        # a training framework's tensor-parallel size: the launcher starts those ranks
        ("deepspeed train.py with tp_size=2 in the config", False),
        ("torchrun --nproc-per-node 8 pretrain.py --tensor_parallel_size=2", False),
    ],
)
def test_an_engine_that_starts_its_own_workers(text: str, says: bool) -> None:
    assert cue_says("nested_launch", text) is says


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("the node hasn't been rebooted since", True),
        ("we didn't reboot after the update", True),
        ("uptime says 41 days", True),
        ("I rebooted the node twice", False),
    ],
)
def test_a_machine_not_rebooted(text: str, says: bool) -> None:
    assert cue_says("not_rebooted", text) is says


def test_glibcs_heap_check_is_an_abort_and_a_newer_nccl_that_exits_cleanly_names_nccl(
    tmp_path: Path,
) -> None:
    said = (
        "nccl-tests on 2 nodes with the module nccl/2.16.2 complete, then a process aborts at "
        "exit:\n"
        "free(): corrupted unsorted chunks\n"
        "[gn12:204711] *** Process received signal ***\n"
        "[gn12:204711] Signal: Aborted (6)\n"
        "With the module nccl/2.18.5-cuda12.2 the same run exits cleanly.\n"
    )
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses[0].symptom == "a rank aborted (SIGABRT)"
    assert report.top(1) == ["nccl.internal"]
    assert cue_says("version_said", "With NCCL 2.18.5 the same run exits cleanly.")
    assert not cue_says("version_said", "The run exits cleanly every time.")


def test_the_uvm_nodes_said_not_there(tmp_path: Path) -> None:
    said = (
        "On gpu-c05 torch.cuda.is_available() returns False with the CUDA unknown error "
        "warning. On gpu-c05 the two nvidia-uvm entries are simply not there, and lsmod shows "
        "nothing called nvidia_uvm.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["driver.uvm"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("It has a block of ENV lines at the top: NCCL_DEBUG=INFO, NCCL_P2P_DISABLE=1.", True),
        ("The base image sets ENV NCCL_IB_DISABLE=1 for some reason.", True),
        ("The ENV lines only set HF_HOME and OMP_NUM_THREADS.", False),
        ("We export NCCL_DEBUG=INFO to see what happens.", False),
    ],
)
def test_an_images_env_lines_are_a_setting_from_elsewhere(text: str, says: bool) -> None:
    assert cue_says("inherited_setting", text) is says


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("两台机器的安全组不是同一个，第一台的安全组入方向只放行了 22 端口和 ICMP。", True),
        ("两台机器的安全组已经全部放行了。", False),
    ],
)
def test_a_security_group_said_in_chinese(text: str, says: bool) -> None:
    assert cue_says("traffic_filtered", text) is says


def test_a_version_that_decides_whether_cuda_starts_is_the_runtime_not_nccl(
    tmp_path: Path,
) -> None:
    said = (
        "With the new env (torch 2.3.1+cu121) torch.cuda.is_available() is False. "
        "My old env with torch 1.12+cu113 works fine on the same nodes.\n"
    )
    assert cue_says("version_said", said)
    ranked = [h.id for h in diagnose_text(tmp_path, said).hypotheses]
    assert ranked[0] == "driver.cuda_mismatch"
    # CUDA did not start: no NCCL code ran, so neither an NCCL bug nor two NCCL builds
    assert "nccl.internal" not in ranked
    assert "nccl.version_mismatch" not in ranked
    # where NCCL ran, the same words still point at its release
    hang = "DDP training hangs at the first all_reduce. With NCCL 2.18.1 it works fine.\n"
    assert diagnose_text(tmp_path, hang).hypotheses[0].id == "nccl.internal"


def test_a_topology_file_nobody_set_leads_nccl_settings(tmp_path: Path) -> None:
    said = (
        "deepspeed --num_gpus 2 train.py fails at the first collective with ncclSystemError "
        "inside our container. In the NCCL INFO output I can see NCCL_TOPO_FILE and "
        'NCCL_GRAPH_FILE being "set by environment", pointing to files under /opt/vendor/, but '
        "I never set those.\n"
    )
    assert cue_says("topology_file_said", said)
    assert cue_says("inherited_setting", said)
    assert [h.id for h in diagnose_text(tmp_path, said).hypotheses][:1] == ["nccl.env"]
    # a question about setting one is neither
    asked = "Should we set NCCL_TOPO_FILE explicitly for gn12?"
    assert not cue_says("topology_file_said", asked)
    assert not cue_says("inherited_setting", "We set NCCL_SOCKET_IFNAME=eth0 ourselves.")


def test_a_crash_that_comes_without_nccl_too_is_the_ranks_own(tmp_path: Path) -> None:
    said = (
        "DDP on 4x RTX 3090 dies at random: one rank first, exitcode -11, Signal 11 (SIGSEGV), no "
        "Python traceback. When I ran the dataloader alone in a loop (no GPU, no DDP) it also "
        "crashed once with a segmentation fault.\n"
    )
    assert cue_says("crashes_without_nccl", said)
    ranked = [h.id for h in diagnose_text(tmp_path, said).hypotheses]
    assert ranked[0] == "launch.rank_crash"
    assert "nccl.version_mismatch" not in ranked[:2]
    # a plan to try it, or a run alone that worked, is not one
    assert not cue_says("crashes_without_nccl", "I will run the dataloader alone and see.")
    assert not cue_says("crashes_without_nccl", "The dataloader alone runs for hours fine.")


@pytest.mark.parametrize(
    ("said", "alike"),
    [
        ("Every line on both machines starts with localhost as the host name.", True),
        ("The two servers' hostnames are identical (both cloned from one image).", True),
        (
            (
                "The ring says rank 3 to rank 4 goes via P2P/IPC even though rank 4 is on the "
                "other server."
            ),
            True,
        ),
        ("gpu01 and gpu02 have their own hostnames and NET/IB channels between them.", False),
        ("Ranks 0-3 talk via P2P/IPC on the same server, as expected.", False),
        # two replicas placed on one machine print its one name: that is one host
        ("Replica 1 printed the same hostname and GPU UUIDs as replica 0.", False),
    ],
)
def test_two_machines_nccl_may_take_for_one(said: str, alike: bool) -> None:
    assert cue_says("hosts_look_alike", said) is alike


def test_machines_that_look_alike_lead_with_the_host_identity(tmp_path: Path) -> None:
    said = (
        "Two identical 4x V100 servers each train fine alone; 2 nodes x 4 procs die at the DDP "
        "constructor with NCCL 'unhandled cuda error'. Every line on both machines starts with "
        "localhost as the host name, and the ring says rank 3 to rank 4 goes via P2P/IPC even "
        "though rank 4 is on the other server.\n"
    )
    assert [h.id for h in diagnose_text(tmp_path, said).hypotheses][:1] == ["nccl.host_identity"]
