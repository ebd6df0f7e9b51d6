"""Readings the inference/frameworks and logs-only batteries asked for: each fires on a small
realistic report, and stays silent where its mechanism does not hold."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.context import context_of
from nccl_doctor.signs.settings import settings_said
from tests.helpers import critical_ids, cue_says, diagnose_text, facts_text

# -- two machines compared are no job across nodes ------------------------------------------------


def test_two_identical_workstations_compared_are_one_node_each(tmp_path: Path) -> None:
    text = (
        "We have two identical workstations with 4x RTX A6000 each. On workstation A an epoch "
        "takes 11 minutes, on workstation B 19 minutes; with a single GPU both machines are "
        "equally fast.\n"
    )
    assert not context_of(facts_text(tmp_path, text)).multi_node


def test_both_nodes_of_one_job_span_nodes(tmp_path: Path) -> None:
    text = "Our 2-node job hangs: both nodes stop at the first all_reduce.\n"
    assert context_of(facts_text(tmp_path, text)).multi_node


# -- nvidia-smi -q's link width retold ------------------------------------------------------------


def test_a_link_width_retold_below_its_max_is_a_degraded_link() -> None:
    said = "nvidia-smi -q shows GPU 2's link width is 8x current, 16x max."
    assert cue_says("pcie_downtrained", said)
    assert not cue_says("pcie_downtrained", "Every GPU shows 16x current, 16x max.")


# -- the machine went to sleep (Chinese) ----------------------------------------------------------


def test_a_machine_woken_from_sleep_is_the_uvm_module(tmp_path: Path) -> None:
    text = (
        "昨天晚上电脑自己进了睡眠，今天早上唤醒以后重新启动训练，torch 也不行：\n"
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
        "incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after "
        "program start. Setting the available devices to be zero.\n"
    )
    assert cue_says("after_suspend", "昨天晚上电脑自己进了睡眠，今天早上唤醒以后重新启动训练")
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.uvm"]


def test_the_same_error_without_a_sleep_is_no_suspend() -> None:
    assert not cue_says("after_suspend", "今天早上重新启动训练，两张卡都报 999。")
    assert not cue_says("after_suspend", "朝に学習を再開すると、両方のランクが 999 で止まります。")
    # a run resumed from its checkpoint is no machine resumed from sleep
    assert not cue_says("after_suspend", "I resumed training from the last checkpoint.")
    assert cue_says("after_suspend", "The workstation woke up from sleep this morning.")


def test_a_machine_woken_from_sleep_told_in_japanese_is_the_uvm_module(tmp_path: Path) -> None:
    said = "PCをスリープにして、朝に復帰させてから学習を再開すると"
    text = (
        f"{said}「CUDA unknown error - this may be due to an incorrectly set up environment」で"
        "始まる警告が出て、torch.cuda.is_available() が False になります。\n"
    )
    assert cue_says("after_suspend", said)
    assert cue_says("after_suspend", "밤에 PC를 절전 모드로 두고 아침에 다시 학습을 시작하면")
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report)[:1] == ["driver.uvm"]
    # the error quoted as the sentence quotes it, not the Japanese that follows
    assert "incorrectly set up environment') after the machine" in report.findings[0].summary


# -- error 35 in a container that has no driver at all --------------------------------------------

_NGC = (
    "== Triton Inference Server ==\n"
    "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n"
    "   Use the NVIDIA Container Toolkit to start this container with GPU support; see\n"
    "   https://docs.nvidia.com/datacenter/cloud-native/ .\n"
)
_E35 = (
    "E0614 08:31:05.918842 1 model_lifecycle.cc:621] failed to load 'preprocessing': CUDA failure "
    "35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0\n"
)


def test_error_35_where_the_container_got_no_driver_is_the_container(tmp_path: Path) -> None:
    text = "We start it with docker compose on the new host.\n" + _NGC + _E35
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.container"]


def test_error_35_with_a_driver_reached_is_the_driver_too_old(tmp_path: Path) -> None:
    text = "We start it with docker compose on the old host (driver 470).\n" + _E35
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.cuda_mismatch"]


# -- WSL ------------------------------------------------------------------------------------------


def test_an_nccl_hang_told_under_a_shown_wsl_kernel_is_wsl(tmp_path: Path) -> None:
    text = (
        "Inside Ubuntu uname -r reports 5.15.153.1-microsoft-standard-WSL2. With 2 GPUs the "
        "NCCL all-reduce hangs forever after Init COMPLETE; one GPU trains fine.\n"
    )
    report = diagnose_text(tmp_path, text)
    wsl = [f for f in report.findings if f.id == "driver.wsl"]
    assert [f.severity.value for f in wsl] == ["warning"]
    assert report.top(1) == ["driver.wsl"]


def test_the_same_hang_without_wsl_is_no_wsl(tmp_path: Path) -> None:
    text = "With 2 GPUs the NCCL all-reduce hangs forever after Init COMPLETE.\n"
    assert "driver.wsl" not in [f.id for f in diagnose_text(tmp_path, text).findings]


_P2P_FAIL = (
    "DESKTOP-4KQ7R2M:2185:2229 [1] NCCL INFO Channel 00/0 : 1[2000] -> 0[1000] via P2P/IPC\n"
    "DESKTOP-4KQ7R2M:2185:2229 [1] transport/p2p.cc:274 NCCL WARN Cuda failure 'invalid "
    "argument'\n"
)


def test_wsl_shown_by_the_machine_beside_a_p2p_failure_is_the_root(tmp_path: Path) -> None:
    text = "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n" + _P2P_FAIL
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["driver.wsl"]


def test_wsl_only_said_beside_a_p2p_failure_is_a_warning(tmp_path: Path) -> None:
    text = "I think this is on WSL.\n" + _P2P_FAIL
    report = diagnose_text(tmp_path, text)
    assert "driver.wsl" not in critical_ids(report)


# -- settings said in a sentence ------------------------------------------------------------------


def test_a_colon_after_a_value_is_punctuation(tmp_path: Path) -> None:
    text = "- NCCL_P2P_DISABLE=1: it starts and serves correctly, but slower.\n"
    said = {(s.name, s.value) for s in settings_said(facts_text(tmp_path, text))}
    assert said == {("NCCL_P2P_DISABLE", "1")}
    report = diagnose_text(tmp_path, text)
    assert not any("not a plain integer" in f.summary for f in report.findings)


def test_p2p_level_loc_turns_p2p_off(tmp_path: Path) -> None:
    loc = "a100-srv3:90412:90412 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n"
    nvl = loc.replace("LOC", "NVL")
    assert context_of(facts_text(tmp_path, loc)).p2p_disabled
    assert not context_of(facts_text(tmp_path, nvl)).p2p_disabled


def test_a_compose_files_environment_is_the_jobs_own(tmp_path: Path) -> None:
    text = (
        "The environment section of the compose file has HF_HOME, NCCL_P2P_DISABLE=1 and "
        "NCCL_IB_DISABLE=1, same as on the old machine.\n"
    )
    assert context_of(facts_text(tmp_path, text)).p2p_disabled


# -- status 12 to a peer whose worker died first is no GID problem --------------------------------

_ROCE = (
    "gpu-a:2203:2204 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.30.1.11<0>\n"
    "gpu-a:2203:2204 [3] NCCL WARN NET/IB : Got completion from peer 10.30.1.12<60833> with "
    "status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.30.1.11 "
    "remoteGids::ffff:10.30.1.12\n"
)
_DIED = (
    "[rank11]: Traceback (most recent call last):\n"
    '[rank11]:   File "/workspace/sft/data.py", line 77, in __getitem__\n'
    '[rank11]:     with open(self.index[idx]["image"], "rb") as f:\n'
    "[rank11]: FileNotFoundError: [Errno 2] No such file or directory: "
    "'/data/local_cache/shard_0137/img_00412881.jpg'\n"
    "E0925 22:14:04.902000 140021349271360 torch/distributed/elastic/multiprocessing/api.py:833] "
    "failed (exitcode: 1) local_rank: 3 (pid: 77214) of binary: /usr/bin/python\n"
)


def test_status_12_to_a_peer_that_died_first_is_not_the_gid(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _DIED + _ROCE)
    assert "net.ib_config" not in [f.id for f in report.findings]
    assert critical_ids(report)[:1] == ["launch.rank_crash"]


def test_status_12_on_roce_with_no_death_is_still_the_gid(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "The first step fails on 2 RoCE nodes:\n" + _ROCE)
    assert critical_ids(report)[:1] == ["net.ib_config"]


# -- the OOM's other PIDs are the launcher's own workers ------------------------------------------

_OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
    "total capacity of 23.68 GiB of which 11.06 MiB is free. Process 41771 has 5.84 GiB memory "
    "in use. Process 41772 has 5.87 GiB memory in use. Including non-PyTorch memory, this "
    "process has 5.86 GiB memory in use. Of the allocated memory 5.39 GiB is allocated by "
    "PyTorch, and 12.00 MiB is reserved by PyTorch but unallocated.\n"
)
_SIGTERM = (
    "[2024-04-29 17:06:20,811] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending "
    "process {pid} closing signal SIGTERM\n"
)


def test_pids_the_launcher_signals_are_the_jobs_own_ranks(tmp_path: Path) -> None:
    text = _OOM + _SIGTERM.format(pid=41771) + _SIGTERM.format(pid=41772)
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report)[:1] == ["gpu.oom"]
    assert "gpu.contention" not in [f.id for f in report.findings]


def test_pids_nobody_signals_are_other_tenants(tmp_path: Path) -> None:
    assert critical_ids(diagnose_text(tmp_path, _OOM))[:1] == ["gpu.contention"]


# -- a DataLoader wrapper's chained cause ---------------------------------------------------------

_WRAPPED = (
    "[rank6]: Traceback (most recent call last):\n"
    '[rank6]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/'
    'signal_handling.py", line 73, in handler\n'
    "[rank6]:     _error_if_any_worker_fails()\n"
    "[rank6]: RuntimeError: DataLoader worker (pid 2388104) is killed by signal: {signal}. \n"
    "[rank6]: \n"
    "[rank6]: The above exception was the direct cause of the following exception:\n"
    "[rank6]: \n"
    "[rank6]: Traceback (most recent call last):\n"
    '[rank6]:   File "/workspace/lm/train.py", line 311, in main\n'
    "[rank6]:     batch = next(train_iter)\n"
    "[rank6]: RuntimeError: DataLoader worker (pid(s) 2388104) exited unexpectedly\n"
    "E0109 02:13:04.218000 2387511 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 6 (pid: 2387536) of binary: /opt/conda/bin/python\n"
    "[rank9]:[E109 02:23:03.671204518 ProcessGroupNCCL.cpp:616] [Rank 9] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=86921, OpType=ALLREDUCE, NumelIn=41943040, "
    "NumelOut=41943040, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n"
)


def test_a_wrapper_raised_from_a_workers_segfault_is_that_ranks_crash(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WRAPPED.format(signal="Segmentation fault"))
    assert critical_ids(report)[:1] == ["launch.rank_crash"]


def test_a_wrapper_raised_from_a_killed_worker_is_the_hosts_memory(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WRAPPED.format(signal="Killed"))
    assert "launch.rank_crash" not in critical_ids(report)


# -- false alarms: events of the fabric's state, a job cancelled from outside ------------------

_EVENT = (
    "gpu-k03:771204:771301 [0] transport/net_ib.cc:95 NCCL WARN NET/IB : Got async event : {e}\n"
)


def test_a_subnet_managers_failover_is_no_transport_failure(tmp_path: Path) -> None:
    text = _EVENT.format(e="SM change") + _EVENT.format(e="client reregistration")
    assert "net.ib_transport" not in critical_ids(diagnose_text(tmp_path, text))


def test_a_catastrophic_adapter_event_is_a_transport_failure(tmp_path: Path) -> None:
    text = _EVENT.format(e="local catastrophic error")
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["net.ib_transport"]


_CANCELLED = (
    "[rank0] step 760 | loss 4.0533 | lr 2.9e-04\n"
    "slurmstepd: error: *** JOB 4417023 ON gpu-r07 CANCELLED AT 2024-06-18T15:44:09 ***\n"
    "[2024-06-18 15:44:09,713] torch.distributed.elastic.agent.server.api: [WARNING] Received "
    "15 death signal, shutting down workers\n"
    "srun: error: gpu-r07: task 0: Exited with exit code 1\n"
)


def test_a_job_cancelled_from_outside_has_no_crash(tmp_path: Path) -> None:
    assert critical_ids(diagnose_text(tmp_path, _CANCELLED)) == []


def test_a_task_that_failed_before_the_cancel_is_still_the_crash(tmp_path: Path) -> None:
    crashed = (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/workspace/train.py", line 88, in <module>\n'
        "[rank3]:     main()\n"
        "[rank3]: ValueError: shape mismatch in batch 761\n"
        "srun: error: gpu-r07: task 3: Exited with exit code 1\n"
    )
    assert critical_ids(diagnose_text(tmp_path, crashed + _CANCELLED))[:1] == ["launch.rank_crash"]


# -- hang evidence collected by hand: fr_trace's report, RAS's counts, retold versions ----------

_FR = (
    "Training froze at step ~27k and the watchdog killed it. fr_trace says:\n"
    "Not all ranks joining collective, sequence number: 27481\n"
    "internal record id: 1003\n"
    "group info: 0:default_pg\n"
    "collective: nccl:all_reduce\n"
    "missing ranks: {5}\n"
    "collective state: scheduled\n"
)


def test_fr_traces_missing_rank_is_the_hangs_origin(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FR)
    assert critical_ids(report)[:1] == ["app.hang"]
    finding = report.findings[0]
    assert "rank 5 is the origin" in finding.summary
    assert finding.collective is not None
    assert finding.collective.seq == 27481


def test_fr_traces_header_without_missing_ranks_names_no_origin(tmp_path: Path) -> None:
    text = _FR.replace("missing ranks: {5}\n", "")
    report = diagnose_text(tmp_path, text)
    assert not any("is the origin" in f.summary for f in report.findings)


_RAS = (
    "$ ncclras\n"
    "NCCL version 2.27.3 compiled with CUDA 12.9\n"
    "\n"
    "Job summary\n"
    "===========\n"
    "\n"
    "  Nodes  Processes         GPUs  Processes     GPUs\n"
    "(total)   per node  per process    (total)  (total)\n"
    "      4          8            1         32       32\n"
    "\n"
    "Communicators... (0.02s)\n"
    "=============\n"
    "\n"
    "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
    "    #  in group  per comm  per node  per comm  in group\n"
    "    0         1         4         8        32        32   RUNNING  MISMATCH\n"
    "\n"
    "Warnings\n"
    "========\n"
    "\n"
    "#0-0 (9f4c2b71e08a3d56) MISMATCH\n"
    "  Communicator ranks have different AllReduce operation counts\n"
    "  31 ranks have launched up to operation 88412\n"
    "  Rank 17 has launched up to operation 88411 -- GPU 1 managed by process 51244 on node "
    "10.1.3.12\n"
)


def test_ras_counts_name_the_origin_of_a_hang_told_in_words(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "Training hangs every day or two, with no error.\n" + _RAS)
    assert critical_ids(report)[:1] == ["app.hang"]
    assert "rank 17 is the origin" in report.findings[0].summary


def test_ras_counts_one_apart_in_a_running_job_are_no_hang(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "A RAS query while training runs fine:\n" + _RAS)
    assert "app.hang" not in critical_ids(report)


def test_an_nccl_release_in_brackets_is_read(tmp_path: Path) -> None:
    text = (
        "torch 2.2.1 with the NCCL it ships (2.19.3): the MoE job freezes in all_to_all_single "
        "every few hundred steps.\n"
    )
    report = diagnose_text(tmp_path, text)
    assert [f.id for f in report.findings][:1] == ["nccl.internal"]
    assert "NCCL 2.19.3" in report.findings[0].summary


def _row(gpu: int, pid: int, name: str, mib: int) -> str:
    """One process row of nvidia-smi's table."""
    return f"|  {gpu:>3}   N/A  N/A  {pid:>9}      C   {name:<38}{mib:>9}MiB |\n"


def test_a_process_list_of_one_launch_places_the_failing_rank(tmp_path: Path) -> None:
    table = (
        "+" + "-" * 89 + "+\n"
        "| Processes:" + " " * 78 + "|\n"
        "|  GPU   GI   CI        PID   Type   Process name" + " " * 30 + "GPU Memory |\n"
        "|        ID   ID" + " " * 63 + "Usage      |\n"
        "|"
        + "=" * 89
        + "|\n"
        + _row(0, 41207, "/opt/conda/bin/python", 61244)
        + _row(1, 41208, "/opt/conda/bin/python", 61180)
        + _row(1, 39876, "...ome/mlee/.venv/bin/python3.10", 17442)
        + "+"
        + "-" * 89
        + "+\n"
    )
    timeout = (
        "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=188204, OpType=ALLREDUCE, NumelIn=131072000, "
        "NumelOut=131072000, Timeout(ms)=600000) ran for 600358 milliseconds before timing out.\n"
    )
    report = diagnose_text(tmp_path, timeout + table)
    assert critical_ids(report)[:1] == ["gpu.contention"]
    assert report.findings[0].summary.startswith("GPU 1 (rank 1): PID 39876")


def test_a_wedged_gpu_beside_a_named_fault_is_that_fault(tmp_path: Path) -> None:
    wedged = "Rank 1's process could not be killed, even with kill -9, and only a reboot helped.\n"
    report = diagnose_text(tmp_path, wedged + "dmesg has an Xid 62 on GPU 1 at 02:14.\n")
    assert "gpu.lost" not in [f.id for f in report.findings]
    report = diagnose_text(tmp_path, wedged + "dmesg has an Xid 79 on GPU 1 at 02:14.\n")
    assert "gpu.lost" in [f.id for f in report.findings]


def test_a_first_death_told_in_chinese_is_the_crash(tmp_path: Path) -> None:
    text = (
        "4 台机器跑 torchrun，训练 20 小时后卡住。第二台机器上的 torchrun 最先报错，说 local_rank 5"
        "（也就是全局 rank 13）退出码是 -9。其他机器的进程 30 分钟后全部报 NCCL watchdog 超时。\n"
    )
    assert diagnose_text(tmp_path, text).top(1) == ["launch.rank_crash"]


def test_a_timeout_told_first_in_chinese_is_no_crash(tmp_path: Path) -> None:
    text = "4 台机器跑 torchrun，训练 20 小时后卡住，最先报错的是 rank 13 的 NCCL watchdog 超时。\n"
    assert diagnose_text(tmp_path, text).top(1) != ["launch.rank_crash"]


def test_a_bracket_after_nccl_without_a_release_names_none(tmp_path: Path) -> None:
    text = (
        "torch 2.2.1 with its NCCL plugin (libnccl-net.so) freezes in all_to_all_single every "
        "few hundred steps.\n"
    )
    report = diagnose_text(tmp_path, text)
    assert not any("known hang bug" in f.summary for f in report.findings)
