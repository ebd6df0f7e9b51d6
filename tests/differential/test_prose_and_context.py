"""The reporter's words, quoted messages and discriminating cues: each fires, and stays silent.

Every case runs the whole pipeline on a small, realistic bug report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from tests.helpers import critical_ids, diagnose_text

_diagnose = diagnose_text
_critical = critical_ids


def test_a_hang_at_the_end_of_an_epoch_is_the_application_first(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Training with DDP on 4 GPUs always hangs at the end of the first epoch.\n"
        "Nothing is printed, the GPUs stay busy.\n",
    )
    assert report.top(1) == ["app.hang"]
    lead = report.hypotheses[0]
    assert any("after training ran" in reason for reason in lead.for_)
    # P2P, weighed down by the late hang, is no longer among the likely causes
    assert "nccl.p2p" not in report.top(3)
    p2p = [h for h in report.hypotheses if h.id == "nccl.p2p"]
    assert all(any("after training ran" in r for r in h.against) for h in p2p)


@pytest.mark.parametrize(
    "said",
    [
        "Training is ok, but it gets stuck in `accelerator.save_state(save_path)`.",
        "With DDP on 4 GPUs the program freezes after the first step.",
        "The process hangs when evaluating the model before the epoch ends.",
        "It hangs every time while saving the model at the end of training.",
    ],
)
def test_a_hang_after_training_ran_is_the_application_first(tmp_path: Path, said: str) -> None:
    """Saving, evaluating, or the steps after the first: the ranks' collectives had worked."""
    report = _diagnose(tmp_path, f"Multi-GPU training with 4 GPUs. {said}\n")
    assert report.top(1) == ["app.hang"]
    assert any("after training ran" in why for why in report.hypotheses[0].for_)


def test_a_hang_at_the_first_step_is_no_hang_after_training_ran(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "Multi-GPU training with 4 GPUs freezes at the first step.\n")
    assert report.top(1) == ["nccl.p2p"]
    assert not any("after training ran" in why for h in report.hypotheses for why in h.for_)


def test_a_hang_without_the_late_cue_keeps_p2p_first(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "Training with DDP on 4 GPUs hangs, nothing is printed.\n")
    assert report.top(1) == ["nccl.p2p"]


def test_works_with_gloo_points_at_nccls_gpu_path(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "A two-GPU all_reduce gets stuck forever on this server.\n"
        "The same script works with the gloo backend.\n",
    )
    assert report.top(1) == ["nccl.p2p"]
    assert any("works with gloo" in r for r in report.hypotheses[0].for_)


def test_a_multi_node_start_up_hang_is_the_rendezvous(tmp_path: Path) -> None:
    text = "Multi-node runs hang at startup, single node is fine.\n"
    assert _diagnose(tmp_path, text).top(1) == ["launch.rendezvous"]
    one_node = _diagnose(tmp_path, "The run hangs at startup on my workstation.\n")
    assert one_node.top(1) != ["launch.rendezvous"]


def test_processes_on_gpu0_are_the_rank_to_gpu_mapping(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Unbalanced GPU memory with DDP\n"
        "There are 7 additional processes on GPU0, each takes about 500 MB.\n",
    )
    assert report.top(1) == ["cuda.device_visibility"]
    assert report.hypotheses[0].symptom.startswith("the job's processes or memory land on GPU 0")
    assert _critical(report) == []


def test_a_healthy_question_gets_no_hypothesis(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "How do I pick the GPU each rank uses with torchrun?\n")
    assert report.hypotheses == ()
    assert _critical(report) == []


def test_the_loader_names_the_missing_library(tmp_path: Path) -> None:
    nccl = _diagnose(
        tmp_path,
        "./build/all_gather_perf: error while loading shared libraries: libnccl.so.2: "
        "cannot open shared object file: No such file or directory\n",
    )
    assert nccl.hypotheses[0].symptom == "a shared library could not be loaded"
    assert nccl.top(1) == ["nccl.version_mismatch"]
    cuda = _diagnose(
        tmp_path,
        "python: error while loading shared libraries: libcuda.so.1: "
        "cannot open shared object file: No such file or directory\n",
    )
    assert cuda.top(1) == ["driver.container"]


@pytest.mark.parametrize(
    ("said", "fails"),
    [
        ("init_process_group raises an exception on the second node.", True),
        ("I am unable to run the script on 2 GPUs with torchrun.", True),
        ("The workers cannot connect to each other across the two machines.", True),
        ("How do I run the script on 2 GPUs with torchrun?", False),
        ("Which port can I use for MASTER_PORT on a shared cluster?", False),
        ("Inference on one GPU works fine, but I'm having trouble with two GPUs.", True),
        ("We ran into issues when the second node joined.", True),
        ("We haven't had problems with two GPUs since the upgrade.", False),
        ("I have no issues with two GPUs; how do I add a third node?", False),
    ],
)
def test_the_reporter_says_it_fails_in_other_words(tmp_path: Path, said: str, fails: bool) -> None:
    """An exception raised, or a job that cannot start, is a failure in words: the report
    ranks causes (none critical: only words say it); a question is none."""
    report = _diagnose(tmp_path, said + "\n")
    assert bool(report.hypotheses) is fails
    assert _critical(report) == []


@pytest.mark.parametrize(
    ("said", "symptom"),
    [
        ("Title: Process got SIGABRT during DDP init", "a rank aborted (SIGABRT)"),
        ("Title: torchrun returns non-zero exit status -6", "a rank aborted (SIGABRT)"),
        (
            "Title: GPU utilization stays at 100% but nothing happens",
            "the job hangs without an error (the reporter's words)",
        ),
        (
            "Title: DDP: the second node never joins",
            "the job hangs without an error (the reporter's words)",
        ),
        (
            "Title: training gets slower and slower on 2 nodes",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
        (
            "Title: multi-node training exits with exit code 1 and no message",
            "a rank failed with an error the catalogue does not classify",
        ),
        (
            "Title: process group initialization timeout",
            "the rendezvous or the c10d store timed out or could not connect",
        ),
        ("Title: DDP training on 2 nodes times out", "a collective timed out (watchdog)"),
        ("Title: Out of memory on rank 0 only", "CUDA ran out of memory"),
        ("Title: GPU memory leak in DDP", "CUDA ran out of memory"),
        (
            "Title: all_reduce takes forever with 8 GPUs",
            "the job hangs without an error (the reporter's words)",
        ),
        (
            "Title: vllm serve with tp=4 exits without any message",
            "a rank failed with an error the catalogue does not classify",
        ),
        (
            "I run the command above, but no output, no error.",
            "the job hangs without an error (the reporter's words)",
        ),
        ("The process exits with no output and no error.", None),
        (
            "Some of our training runs were about 0.3% slower than others.",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
        (
            "We saw a 20% slowdown whenever node-1147 was in the job.",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
        ("    HW Slowdown                       : Not Active", None),
        ("The training did not time out this time and finished.", None),
        ("I set the timeout for the job to 2 hours.", None),
        ("The script exits with code 0 and the loss goes down.", None),
        ("GPU utilization is 100% and training is fast.", None),
    ],
)
def test_more_ways_of_saying_it_aborts_hangs_or_is_slow(
    tmp_path: Path, said: str, symptom: str | None
) -> None:
    report = _diagnose(tmp_path, said + "\n")
    assert (report.hypotheses[0].symptom if report.hypotheses else None) == symptom
    assert _critical(report) == []


def test_the_host_running_out_of_memory_is_not_cuda_oom(tmp_path: Path) -> None:
    """'CPU OOM', or out of memory beside swap, is the host's memory: not CUDA's class."""
    for said in ("Title: CPU OOM in training of step3", "It is out of memory, increase swap."):
        report = _diagnose(tmp_path, said + "\n")
        assert not report.hypotheses or report.hypotheses[0].symptom != "CUDA ran out of memory"


def test_nccl_versions_said_to_differ_weigh_for_a_version_mismatch(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "Title: nccl version mismatch between nodes\n")
    assert report.hypotheses[0].id == "nccl.version_mismatch"
    same = _diagnose(tmp_path, "Title: init fails on 2 nodes, the NCCL version is 2.21.5\n")
    assert not any("NCCL versions differ" in r for h in same.hypotheses for r in h.for_)


def test_a_node_that_never_joins_is_the_rendezvous_first(tmp_path: Path) -> None:
    """The second node is a multi-node job; a node that never joins hangs at start-up."""
    report = _diagnose(tmp_path, "Title: DDP: the second node never joins\n")
    assert report.top(1) == ["launch.rendezvous"]


@pytest.mark.parametrize(
    ("said", "filtered"),
    [
        ("The nodes run CentOS with firewall-cmd; I opened port 29500 only.", True),
        ("Our pods get an Istio sidecar injected.", True),
        ("The AWS security group allows all egress to 0.0.0.0/0.", True),
        ("The firewall is disabled on both nodes.", False),
        ("There is no firewall between the machines.", False),
    ],
)
def test_something_that_filters_traffic_weighs_for_unreachable(
    tmp_path: Path, said: str, filtered: bool
) -> None:
    """A firewall, a security group or a sidecar named: the peers' ports are filtered; one
    ruled out ("is disabled", "no firewall") says nothing."""
    report = _diagnose(tmp_path, f"Two-node training hangs at init_process_group. {said}\n")
    reasons = [why for h in report.hypotheses for why in (*h.for_, *h.against)]
    assert any("filters the hosts' TCP traffic" in why for why in reasons) is filtered
    if filtered:
        assert report.hypotheses[0].id == "net.unreachable"


def test_a_quoted_message_without_an_error_word_is_looked_up(tmp_path: Path) -> None:
    """NCCL's "Could not find NET with id 0" ends init with ncclInternalError though it says
    no "error": a title quoting it is read through the catalogue; NCCL's notice that it uses
    its internal network plugin ("Could not find: libnccl-net.so") is no failure."""
    quoted = _diagnose(tmp_path, "Title: Could not find NET with id 0\n")
    assert quoted.top(1) == ["nccl.internal"]
    notice = _diagnose(
        tmp_path,
        "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n",
    )
    assert notice.hypotheses == ()
    assert _critical(notice) == []


def test_nvml_version_mismatch_is_the_driver(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path, "agent | 2024/01/02 10:00:00 Error: nvml: Driver/library version mismatch\n"
    )
    assert report.top(1) == ["driver.version_mismatch"]


def test_c10d_ipv6_warning_alone_is_not_a_failure(tmp_path: Path) -> None:
    warning = (
        "[W socket.cpp:601] [c10d] The IPv6 network addresses of (node-a, 29500) cannot be "
        "retrieved (gai error: -2 - Name or service not known).\n"
    )
    report = _diagnose(tmp_path, warning + "epoch 1 step 100 loss 0.31\n")
    assert _critical(report) == []
    assert report.hypotheses == ()
    failing = _diagnose(
        tmp_path,
        warning + "[E socket.cpp:957] [c10d] The client socket has timed out after 900s while "
        "trying to connect to (node-a, 29500).\n",
    )
    assert "net.unreachable" in failing.top(3)


def test_verbs_enomem_is_not_host_memory(tmp_path: Path) -> None:
    verbs = _diagnose(
        tmp_path,
        "NCCL init dies on the worker: `ibv_reg_mr_iova2 failed: Cannot allocate memory`, "
        "MemFree is 88 GiB.\n",
    )
    assert "host.resources" not in _critical(verbs)
    assert verbs.top(1) == ["net.ib_config"]
    host = _diagnose(tmp_path, "OSError: [Errno 12] Cannot allocate memory\n")
    assert host.top(1) == ["host.resources"]


def test_old_nccl_formats_are_in_the_catalogue() -> None:
    sig = signature_of(
        "node1:1:2 [0] transport/net_ib.cc:840 NCCL WARN NET/IB : Got completion with error 12, "
        "opcode 1, len 32, vendor err 129"
    )
    assert sig is not None
    assert sig.versions.first.startswith("2.")
    assert int(sig.versions.first.split(".")[1]) < 18
    assert "net.ib_transport" in sig.hint_ids
    qp = signature_of("misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error 110")
    assert qp is not None
    assert "net.ib_config" in qp.hint_ids


def test_ib_protection_errors_point_at_gpudirect(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "n2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)\n",
    )
    # a local protection error with GDR not shown off: the GPU-to-NIC path leads (net.gdr's
    # own finding), the IB transport's failure it explains follows
    assert report.top(2) == ["net.gdr", "net.ib_transport"]
    retry = _diagnose(
        tmp_path,
        "n2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.1<49189> with error 12, opcode 5327, len 5327, vendor err 129 (Send)\n",
    )
    assert "net.gdr" not in retry.top(3)


def test_wsl_weighs_on_nccl_errors_not_on_a_killed_process(tmp_path: Path) -> None:
    nccl = _diagnose(
        tmp_path,
        "all_reduce_perf does not run under WSL2 on my desktop.\n"
        "DESKTOP: Test NCCL failure common.cu:777 'unhandled system error'\n",
    )
    assert nccl.top(1) == ["driver.wsl"]
    killed = _diagnose(
        tmp_path, "Killed\n\nUnder WSL2 the loader just says killed after the model loads.\n"
    )
    assert killed.top(1) == ["host.resources"]


def test_a_version_that_works_points_at_an_nccl_bug(tmp_path: Path) -> None:
    text = (
        "alltoall_perf on 16 nodes hangs at communicator initialization with NCCL 2.19.3.\n"
        "With NCCL 2.18.6 it works.\n"
    )
    assert _diagnose(tmp_path, text).top(1) == ["nccl.internal"]


def test_containers_sharing_a_machine_point_at_host_identity(tmp_path: Path) -> None:
    text = (
        "NCCL crashes at init when two containers of the job are scheduled on the same machine.\n"
    )
    assert _diagnose(tmp_path, text).top(1) == ["nccl.host_identity"]
    alone = "NCCL crashes at init inside one docker container.\n"
    assert "nccl.host_identity" not in _diagnose(tmp_path, alone).top(3)


def test_a_host_name_resolving_to_loopback_points_at_the_advertised_interface(
    tmp_path: Path,
) -> None:
    """Paddle's gloo report (dev corpus): Chinese around English words, loopback resolution."""
    report = _diagnose(
        tmp_path,
        "[Issue title: gloo出现connection refused]\n"
        "如果节点分布在多台机器上就会报如下错误\n"
        "在这台机器上，socket.gethostbyname(socket.gethostname())得到的是127.0.0.1\n",
    )
    assert report.hypotheses[0].symptom.startswith("the rendezvous or the c10d store")
    assert report.top(1) == ["net.socket_interface"]
    assert any("resolves to the loopback address" in r for r in report.hypotheses[0].for_)


def test_a_loopback_master_address_on_one_machine_is_not_the_cue(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "I run on a single machine with MASTER_ADDR set to 127.0.0.1 and get connection refused.\n",
    )
    assert report.hypotheses[0].symptom.startswith("the rendezvous or the c10d store")
    assert all(
        "resolves to the loopback address" not in r for h in report.hypotheses for r in h.for_
    )


def test_chinese_hang_and_multi_machine_words_are_read(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "多机多卡训练的时候，初始化之后就卡住了，没有任何输出\n")
    assert report.hypotheses[0].symptom == "the job hangs without an error (the reporter's words)"
    silent = _diagnose(tmp_path, "多机多卡训练正常结束，只是想问一下速度\n")
    assert silent.hypotheses == ()


def test_a_bus_error_in_ncclgroupend_is_shared_memory_first(tmp_path: Path) -> None:
    """HugeCTR's report (dev corpus): UCX's signal line for SIGBUS inside NCCL's threads."""
    report = _diagnose(
        tmp_path,
        "HugeCTR backend server dies with SIGBUS during server startup in the "
        "merlin-inference container\n"
        "```\n"
        "[node1:1    :0:381] Caught signal 7 (Bus error: nonexistent physical address)\n"
        "==== backtrace (tid:    381) ====\n"
        " 2 0x0000000000068d6c ncclGroupEnd()  ???:0\n"
        "```\n",
    )
    lead = report.hypotheses[0]
    assert lead.symptom.startswith("a rank died of a bus error (SIGBUS)")
    assert lead.id == "nccl.shm"
    assert "runs in a container (Docker's /dev/shm is 64 MB)" in lead.for_


def test_a_segfault_is_not_a_bus_error(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Training on 8 GPUs crashes at start-up:\n```\nSegmentation fault (core dumped)\n```\n",
    )
    lead = report.hypotheses[0]
    assert lead.symptom == "a rank crashed (SIGSEGV, SIGFPE or SIGILL)"
    assert lead.id == "launch.rank_crash"


def test_a_report_that_says_it_does_not_work_is_a_failure(tmp_path: Path) -> None:
    english = _diagnose(tmp_path, "Training on 3 GPUs stops working after an hour.\n")
    assert (
        english.hypotheses[0].symptom
        == "a rank failed with an error the catalogue does not classify"
    )
    assert _critical(english) == []
    # Chinese: "in a container torchrun starts many training processes, cannot train"
    chinese = _diagnose(
        tmp_path, "使用torchrun启动分布式训练，每个容器里产生很多个训练进程，无法训练\n"
    )
    assert (
        chinese.hypotheses[0].symptom
        == "a rank failed with an error the catalogue does not classify"
    )
    # a container alone does not put shared memory first: its failure is an error of its own
    assert chinese.hypotheses[0].id != "nccl.shm"


def test_a_question_about_what_works_is_not_a_failure(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "Does NCCL work with two GPUs of different models?\n")
    assert report.hypotheses == ()


def test_a_setting_that_made_it_work_points_at_what_it_steers(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Two nodes, 8 GPUs each: training hangs at the first all_reduce.\n"
        "Setting NCCL_IB_DISABLE=1 fixed it, but it is slow now.\n",
    )
    top = report.hypotheses[0]
    assert top.id.startswith("net.ib_")
    assert "the reporter says NCCL_IB_DISABLE=1 made it work (it steers " in " ".join(top.for_)
    reverse = _diagnose(
        tmp_path, "It crashes at init. Solved it by exporting NCCL_SOCKET_IFNAME=eth0 on both.\n"
    )
    # the interface setting that worked is the socket-interface rule's own evidence: a finding
    assert reverse.top(1) == ["net.socket_interface"]
    assert [f.id for f in reverse.findings] == ["net.socket_interface"]


def test_a_setting_that_did_not_help_points_nowhere(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Two nodes, 8 GPUs each: training hangs at the first all_reduce.\n"
        "NCCL_IB_DISABLE=1 did not help, it still hangs.\n",
    )
    assert all("made it work" not in r for h in report.hypotheses for r in h.for_)
    assert not report.hypotheses[0].id.startswith("net.ib_")


@pytest.mark.parametrize(
    ("said", "no_help"),
    [
        ("已经加了 NCCL_P2P_DISABLE=1 和 NCCL_IB_DISABLE=1，还是一样。", True),
        ("设置了 NCCL_P2P_DISABLE=1 也没用，还是卡住。", True),
        ("NCCL_P2P_DISABLE=1 无效。", True),
        ("加了 NCCL_P2P_DISABLE=1 就好了。", False),
    ],
)
def test_a_setting_that_did_not_help_in_chinese(tmp_path: Path, said: str, no_help: bool) -> None:
    said = "8 卡单机训练，第一个 all_reduce 就 NCCL timeout。\n" + said + "\n"
    report = _diagnose(tmp_path, said)
    # a switch that changed nothing clears its path; one that fixed it names it
    assert (report.top(1) == ["nccl.p2p"]) is not no_help


def test_a_hypervisor_under_the_gpus_weighs_for_p2p_on_one_node_and_gdr_across(
    tmp_path: Path,
) -> None:
    one = _diagnose(
        tmp_path,
        "NCCL hangs with 4 GPUs in a KVM virtual machine (GPU passthrough).\n",
    )
    assert one.hypotheses[0].id == "nccl.p2p"
    assert any("hypervisor" in r for r in one.hypotheses[0].for_)
    across = _diagnose(
        tmp_path,
        "Slow inter-node all_reduce_perf bandwidth on two VMs with GPU passthrough, IB SR-IOV.\n",
    )
    gdr = next(h for h in across.hypotheses if h.id == "net.gdr")
    assert any("GPUDirect traffic too" in r for r in gdr.for_)


def test_geforce_cards_weigh_for_p2p_and_datacentre_cards_do_not(tmp_path: Path) -> None:
    geforce = _diagnose(tmp_path, "Training hangs on 2x GeForce RTX 4090 with DDP.\n")
    p2p = next(h for h in geforce.hypotheses if h.id == "nccl.p2p")
    assert any("GeForce/TITAN" in r for r in p2p.for_)
    a100 = _diagnose(tmp_path, "Training hangs on 2x A100 PCIe with DDP.\n")
    assert all("GeForce/TITAN" not in r for h in a100.hypotheses for r in h.for_)


def test_the_fabric_manager_is_a_cause_only_on_nvswitch_boards(tmp_path: Path) -> None:
    text = (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error "
        "803: system has unsupported display driver / cuda driver combination\n"
    )
    hgx = _diagnose(tmp_path, "8x H100 SXM (HGX) node, CUDA fails to start.\n" + text)
    fm = next(h for h in hgx.hypotheses if h.id == "gpu.fabric_manager")
    assert "the GPUs sit on an NVLink/NVSwitch board" in fm.for_
    pcie = _diagnose(tmp_path, "Two GeForce RTX 3090 cards, CUDA fails to start.\n" + text)
    assert "gpu.fabric_manager" not in [h.id for h in pcie.hypotheses][:3]


def test_a_stall_across_nodes_is_the_network_before_p2p(tmp_path: Path) -> None:
    across = _diagnose(tmp_path, "Training on two nodes hangs at the first all_reduce.\n")
    ids = [h.id for h in across.hypotheses]
    assert ids[0] == "net.socket_interface"
    assert "nccl.p2p" not in ids  # weighed down below the four shown
    one = _diagnose(
        tmp_path, "Training on one machine with 4 GPUs hangs at the first all_reduce.\n"
    )
    assert one.hypotheses[0].id == "nccl.p2p"


def test_the_whole_machine_freezing_is_hardware_not_a_job_on_a_machine(tmp_path: Path) -> None:
    frozen = _diagnose(tmp_path, "During training the whole machine freezes and needs a reboot.\n")
    # the freeze weighs NVLink and Xid up; the reboot it needs, a GPU lost to the driver
    assert {"gpu.nvlink", "gpu.lost", "gpu.xid"} <= set(frozen.top(4))
    assert frozen.hypotheses[0].id.startswith("gpu.")
    nvlink = next(h for h in frozen.hypotheses if h.id == "gpu.nvlink")
    assert any("the whole machine freezes" in r for r in nvlink.for_)
    lost = next(h for h in frozen.hypotheses if h.id == "gpu.lost")
    assert any("only a reboot or a power cycle" in r for r in lost.for_)
    job = _diagnose(tmp_path, "On a machine with 8 GPUs the job hangs at the first step.\n")
    assert all("the whole machine freezes" not in r for h in job.hypotheses for r in h.for_)
    # the run is the subject: "running with --nproc_per_node=2 on an 8-GPU machine hangs"
    run = _diagnose(tmp_path, "Running with 2 processes on an 8-GPU machine hangs at init.\n")
    assert run.hypotheses[0].id == "nccl.p2p"
    assert all("the whole machine freezes" not in r for h in run.hypotheses for r in h.for_)


HEALTHY = "epoch 0 step 100 loss 2.31\n{line}\nepoch 1 step 200 loss 1.97\ntraining finished\n"


def test_a_programs_own_chinese_or_tip_lines_are_not_a_failure(tmp_path: Path) -> None:
    for line in (
        "epoch 1 验证集错误率: 3.2%  准确率: 96.8%",  # an error *rate*
        "提示: 无法连接到 wandb，已切换到离线模式",  # a program's tip: offline mode
        "Tip: if auto-resume does not work, pass --resume explicitly.",
    ):
        report = _diagnose(tmp_path, HEALTHY.format(line=line))
        assert report.hypotheses == (), line
        assert _critical(report) == [], line


def test_an_error_measured_or_said_to_be_absent_is_not_a_failure(tmp_path: Path) -> None:
    for line in (
        "[rank0]: Epoch 3: train loss 0.412, validation error 0.087, took 41.2 s",
        "Evaluation finished. Word error rate on dev-clean is 3.1% and it did not crash.",
        "INFO: no errors found in the dataset check; 0 files failed to decode",
        "checkpoint saved without any error; none of the ranks failed",
        "mean absolute error: 0.42, error bars from 5 seeds",
        "CUDA error checking enabled: CUDA_LAUNCH_BLOCKING=1",
        "elastic: failover to the spare node is on; node failure rate budget 2 per day",
    ):
        report = _diagnose(tmp_path, HEALTHY.format(line=line))
        assert report.hypotheses == (), line
        assert report.verdict.value != "failed", line


def test_a_failure_beside_a_measure_or_a_negation_is_still_a_failure(tmp_path: Path) -> None:
    for line in (
        "It runs without error on 1 GPU but fails on 2 GPUs.",
        "validation error 0.087 at epoch 3, then the training crashes",
        "I get error 13 when I launch it on the second node",
        "there are no errors in the log but it crashes after 10 minutes",
    ):
        report = _diagnose(tmp_path, line + "\n")
        assert [h.symptom for h in report.hypotheses[:1]] == [
            "a rank failed with an error the catalogue does not classify"
        ], line


def test_a_setting_on_a_command_line_or_at_its_default_is_no_workaround(tmp_path: Path) -> None:
    for line in (
        "NCCL_P2P_DISABLE=0 python -m torch.distributed.run --nproc_per_node 8 train.py",
        "Launching with NCCL_IB_HCA=mlx5_0,mlx5_1 for the fine-tuning job",
        "With NCCL_SOCKET_IFNAME=eth0 the bootstrap works, but the first allreduce hangs.",
    ):
        report = _diagnose(tmp_path, line + "\nTraining on two nodes hangs.\n")
        assert all("made it work" not in r for h in report.hypotheses for r in h.for_), line


def test_a_negated_multi_node_is_one_node(tmp_path: Path) -> None:
    for text in (
        "This is not an inter-node job: one node, 8 GPUs, and it hangs.\n",
        "We never ran multi-node; single node with 4 GPUs hangs.\n",
    ):
        assert _diagnose(tmp_path, text).hypotheses[0].id == "nccl.p2p", text


def test_a_host_limit_in_the_data_loader_is_no_nccl_error(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/multiprocessing/popen_fork.py", line 66, in _launch\n'
        "    parent_r, child_w = os.pipe()\n"
        "OSError: [Errno 24] Too many open files\n",
    )
    assert report.top(1) == ["host.resources"]
    assert all("NCCL" not in h.symptom for h in report.hypotheses)
    assert report.hypotheses[0].symptom.startswith("a system call hit a host limit")


@pytest.mark.parametrize(
    ("title", "symptom"),
    [
        ("qwen2.5 vl DataLoader worker exited unexpectedly", "a system call hit a host limit"),
        # torch's own line, whole: the signal is SIGKILL, the OOM killer's
        (
            "DeepSpeed ZeRO-3: DataLoader worker (pid 4123) is killed by signal: Killed.",
            "the kernel's OOM killer ended a process",
        ),
    ],
)
def test_a_data_loader_worker_said_to_have_died_is_a_host_limit(
    tmp_path: Path, title: str, symptom: str
) -> None:
    """torch's words for a worker that died without a Python error, retold in a title."""
    report = _diagnose(
        tmp_path,
        f"Title: {title}\n\nFine-tuning on 4 GPUs with --dataloader_num_workers 4 and video "
        "inputs; after some steps the run stops.\n",
    )
    assert report.top(1) == ["host.resources"]
    assert report.hypotheses[0].symptom.startswith(symptom)


def test_data_loader_workers_named_without_dying_are_no_host_limit(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Fine-tuning on 4 GPUs with 4 DataLoader workers per rank hangs at the first step.\n",
    )
    assert report.top(1) != ["host.resources"]
    assert all("host limit" not in h.symptom for h in report.hypotheses)


def test_a_python_error_in_the_jobs_own_code_is_the_ranks_own_bug(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/workspace/data.py", line 44, in collate\n'
        '[rank0]:     ids = [s["input_ids"] for s in samples]\n'
        "[rank0]: KeyError: 'input_ids'\n",
    )
    assert report.top(1) == ["launch.rank_crash"]
    assert report.hypotheses[0].symptom.startswith("the job's own code raised")
    assert "nccl.p2p" not in report.top(3)


def test_pcie_cards_are_no_nvswitch_board_and_eight_h20s_are(tmp_path: Path) -> None:
    from nccl_doctor.differential.context import context_of
    from nccl_doctor.evidence.reader import read_paths
    from nccl_doctor.pipeline import facts_of

    def board(smi: str) -> bool | None:
        path = tmp_path / "collect_env.txt"
        path.write_text(
            "PyTorch version: 2.4.1+cu121\nIs CUDA available: True\n"
            "GPU models and configuration:\n" + smi + "\nNvidia driver version: 550.54.15\n"
        )
        return context_of(facts_of(read_paths([str(path)]))).nvlink_board

    assert board("GPU 0: NVIDIA H100 PCIe\nGPU 1: NVIDIA H100 PCIe") is False
    assert board("\n".join(f"GPU {i}: NVIDIA H20" for i in range(8))) is True
    assert board("GPU 0: NVIDIA H20\nGPU 1: NVIDIA H20") is None


def test_chinese_killed_without_an_error_is_the_host_killing_a_rank(tmp_path: Path) -> None:
    # "case one: no error reported, just killed" - 无报错 says there was no error message
    report = _diagnose(
        tmp_path, "训练中经常出现killed\n情况一：无报错，直接killed，执行的命令如图。\n"
    )
    assert report.hypotheses[0].symptom.startswith("a rank was killed")
    assert report.hypotheses[0].id == "host.resources"
    # no 'killed' word: "no error reported" alone opens no failure, "an error is reported" does
    assert _diagnose(tmp_path, "训练正常结束，无报错。\n").hypotheses == ()
    assert _diagnose(tmp_path, "多卡训练时报错\n").hypotheses != ()


def test_a_job_that_fits_on_other_nodes_is_short_of_memory_on_this_one(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "Title: cn119 fails to allocate GPU memory\n"
        "Each time I submit a job on cn119 I get a CUDA error about failing to allocate memory.\n"
        "The same job on a different node works fine.\n",
    )
    assert report.hypotheses[0].symptom == "CUDA ran out of memory"
    assert [h.id for h in report.hypotheses[:2]] == ["gpu.contention", "gpu.oom"]
    alone = _diagnose(tmp_path, "Title: training fails to allocate GPU memory at batch 64\n")
    assert [h.id for h in alone.hypotheses[:2]] == ["gpu.oom", "gpu.contention"]


def test_the_exceptions_own_type_outranks_the_reporters_words(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "This error will trigger when I set --num-gpus 2, any advice will be welcome.\n"
        "Traceback (most recent call last):\n"
        '  File "tools/train_net.py", line 68, in build_train_loader\n'
        "    return build_detection_train_loader(cfg, mapper=mapper)\n"
        "[...]\n"
        "KeyError: \"Dataset 'xxxx-train' is not registered!\"\n",
    )
    lead = report.hypotheses[0]
    assert lead.symptom == "the job's own code raised a Python exception (its data or logic)"
    assert lead.id == "launch.rank_crash"


_AER_CORRECTED = (
    "{stamp}pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0\n"
    "{stamp}nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
    "(Receiver ID)\n"
    "{stamp}nvidia 0000:01:00.0:   device [10de:2330] error status/mask=00000001/0000e000\n"
    "{stamp}nvidia 0000:01:00.0:    [ 0] RxErr\n"
)


def test_the_kernels_own_lines_are_not_the_reporters_words(tmp_path: Path) -> None:
    # a healthy node's dmesg with one corrected PCIe error: its register line says "error"
    for stamp in (
        "[   12.441020] ",
        "[Mon Dec  4 10:00:01 2024] ",
        "Dec  4 10:00:01 gpu-node-3 kernel: ",
    ):
        report = _diagnose(tmp_path, _AER_CORRECTED.format(stamp=stamp))
        assert report.hypotheses == (), stamp
        assert report.verdict.value != "failed", stamp
    # the same words without the kernel's stamp are a person's, and still say it failed
    said = _diagnose(tmp_path, "after the device error status came up the training failed\n")
    assert [h.symptom for h in said.hypotheses[:1]] == [
        "a rank failed with an error the catalogue does not classify"
    ]


def test_japanese_hang_failure_and_multi_node_words_are_read(tmp_path: Path) -> None:
    # "with 2 nodes training stops in all_reduce; no error comes up"
    hang = _diagnose(
        tmp_path, "2ノードで学習するとall_reduceで止まってしまいます。エラーは出ません。\n"
    )
    assert hang.hypotheses[0].symptom == "the job hangs without an error (the reporter's words)"
    assert any("several nodes" in r for h in hang.hypotheses for r in h.for_)
    # "an NCCL error occurs when training starts and it fails"
    failed = _diagnose(tmp_path, "学習を開始するとNCCLのエラーが発生して失敗します。\n")
    assert (
        failed.hypotheses[0].symptom
        == "a rank failed with an error the catalogue does not classify"
    )
    # "training ended without a problem; there are no errors" / "no error comes up"
    for line in (
        "学習は問題なく終了しました。エラーはありません。",
        "エラーは出ません。速度の質問です。",
    ):
        assert _diagnose(tmp_path, line + "\n").hypotheses == (), line


def test_a_message_quoted_at_the_end_of_a_sentence_is_that_message(tmp_path: Path) -> None:
    message = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.19.3"
    )
    for text in (f"My job fails with `{message}`\n", f"My job fails with {message}\n"):
        report = _diagnose(tmp_path, text)
        assert report.hypotheses[0].symptom == (
            "NCCL reported an unhandled CUDA error (ncclUnhandledCudaError)"
        ), text
    # a setting quoted at the end of a sentence is not read as the node's environment
    setting = _diagnose(tmp_path, "Training is fine, I only set `NCCL_P2P_DISABLE=1`\n")
    assert setting.hypotheses == ()


_VLLM_REPLICA = (
    "Title: [Bug]: RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for "
    "details) [repeated 6x across cluster]\n\n"
    "I deploy the model as 4 replicas on an 8 node Kubernetes cluster. 3 of the replicas are "
    "running in stable state, the 4th keeps restarting with the following error.\n\n"
    "```\n"
    "(RayWorkerWrapper pid=1181, ip=192.168.145.194) INFO 08-27 05:11:55 pynccl.py:63] vLLM is "
    "using nccl==2.20.5 [repeated 14x across cluster]\n"
    "ERROR 08-27 05:12:18 worker_base.py:382] Error executing method init_device. This might "
    "cause deadlock in distributed execution.\n"
    "```\n"
)


def test_a_bindings_nccl_error_text_and_one_bad_replica_point_at_the_gpu(tmp_path: Path) -> None:
    """vLLM raises ncclGetErrorString's text in its own words; its logger's 'deadlock' line is
    its output, not the reporter saying it hangs; one replica of four failing is one node."""
    report = _diagnose(tmp_path, _VLLM_REPLICA)
    first = report.hypotheses[0]
    assert first.symptom == "NCCL reported an unhandled CUDA error (ncclUnhandledCudaError)"
    ids = [h.id for h in report.hypotheses]
    assert "gpu.xid" in ids[:2]
    xid = next(h for h in report.hypotheses if h.id == "gpu.xid")
    assert "it fails only on one node" in xid.for_


def test_a_short_result_text_counts_beside_nccl_only(tmp_path: Path) -> None:
    """'invalid argument' is also cudaErrorInvalidValue's text: without NCCL beside it, the
    line is no NCCL result."""
    cuda = _diagnose(tmp_path, "ERROR 08-27 05:12:18 ops.py:12] kernel launch: invalid argument\n")
    assert not cuda.hypotheses
    nccl = _diagnose(
        tmp_path, "ERROR 08-27 05:12:18 ops.py:12] NCCL call failed: invalid argument\n"
    )
    assert nccl.hypotheses[0].symptom.startswith("NCCL rejected its arguments or usage")


def test_two_processes_on_the_same_gpu_in_words_is_the_gpu_mapping(tmp_path: Path) -> None:
    said = _diagnose(
        tmp_path,
        "I run it with `mpirun -n 2 python script.py`. I found the two processes are running on "
        "the same GPU.\n",
    )
    assert [h.id for h in said.hypotheses][:3] == [
        "cuda.device_visibility",
        "gpu.contention",
        "nccl.duplicate_gpu",
    ]
    apart = _diagnose(
        tmp_path, "I checked that the two processes are running on different GPUs, as intended.\n"
    )
    assert not apart.hypotheses


def test_a_hang_after_rank_zero_only_work_is_a_collective_mismatch(tmp_path: Path) -> None:
    """Rank 0 alone evaluates: the others wait in the next collective it has not reached."""
    report = _diagnose(
        tmp_path,
        "Training with DDP on 4 GPUs hangs forever. I run the evaluation only on rank 0 "
        "(`if rank == 0: evaluate(model)`), the other ranks go on to the next epoch.\n",
    )
    assert report.hypotheses[0].id == "app.collective_mismatch"
    assert any("the ranks run different code" in why for why in report.hypotheses[0].for_)


def test_a_hang_without_a_rank_branch_keeps_the_transport_first(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "Training with DDP on 4 GPUs hangs forever at the first step.\n")
    assert report.hypotheses[0].id != "app.collective_mismatch"


_SOCKET_TIMEOUT = (
    "[rank0]:[E1204 10:00:00.000000 123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
    "node1:123:456 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.1<0>\n"
)


@pytest.mark.parametrize(
    ("said", "branch"),
    [
        ("The timeout is reported only on rank 0, the other ranks print nothing.", False),
        ("The error appears only on one of the ranks.", False),
        ("Only one rank crashes with the timeout, the rest wait.", False),
        ("The hang is reported only on rank 0 and I have no idea what to do.", False),
        ("Not sure what to do, the hang is reported only on rank 0.", False),
        ("I do not use early stopping, and every rank gets the same number of batches.", False),
        ("There is no early stopping in my script.", False),
        ("I use early stopping with patience 3.", True),
        ('My loop ends with: if rank == 0: print(f"step {step} loss {loss.item()} done")', False),
        ("My loop ends with: if rank == 0: evaluate(model, val_loader, epoch)", True),
        ("I run the evaluation only on rank 0.", True),
        ("Only rank 0 saves the checkpoint, the others go on.", True),
        ("Validation is done only on the main process.", True),
        ("It happens when any one rank has an all-empty validation shard.", True),
        ("A pipeline stage with no metrics returns early and skips the all_gather_object.", True),
        ("The dump shows one rank exactly one collective op behind the others.", True),
        ("The ranks end up with a different number of all_reduce calls.", True),
        ("Each rank has no problem loading the data, and I skip nothing.", False),
        # the frameworks' own rank-0 guards around work that calls a collective
        ("It freezes only when I call `trainer.log_dir` only in process 0.", True),
        ("The hook that reads trainer.log_dir is decorated with @rank_zero_only.", True),
        ("I save with `if self.global_rank == 0: self.save_ckpt()`.", True),
        ("The script evaluates under `if args.local_rank in [-1, 0]:`.", True),
        ("I print the loss under `if self.global_rank == 0: print(loss)`.", False),
        ("The communicator init never reaches the collective.", False),
        # the ranks said to have issued different collectives
        ("DETAIL mode showed 2 trainers sent out mismatched collectives.", True),
        ("One rank is doing all-to-all, the other doing all-reduce.", True),
        ("The ranks called different collectives after the change.", True),
        ("There are no mismatched collectives in my code.", False),
        ("Every rank calls the same all-reduce.", False),
    ],
)
def test_the_reporter_says_the_ranks_run_different_code(
    tmp_path: Path, said: str, branch: bool
) -> None:
    """'Reported only on rank 0' says which rank shows the failure, not that the ranks run
    different code; 'I run the evaluation only on rank 0' does; early stopping counts where
    it is used, not where the reporter rules it out."""
    report = _diagnose(
        tmp_path,
        f"Training with DDP on 2 nodes hangs at the first allreduce. {said}\n\n" + _SOCKET_TIMEOUT,
    )
    mismatch = next(h for h in report.hypotheses if h.id == "app.collective_mismatch")
    assert any("the ranks run different code" in why for why in mismatch.for_) is branch
    if branch:
        assert report.hypotheses[0] is mismatch


@pytest.mark.parametrize(
    "checked",
    [
        "I checked that the two processes are not on the same GPU (nvidia-smi shows one on each).",
        "Could it be that both ranks use the same GPU? nvidia-smi shows one process on each.",
    ],
)
def test_the_same_gpu_denied_or_asked_is_no_gpu_mapping(tmp_path: Path, checked: str) -> None:
    """The reporter ruling the shared GPU out (or asking) does not say the job shares one."""
    report = _diagnose(
        tmp_path,
        f"I run it with `mpirun -n 2 python script.py` and it hangs in the first allreduce. "
        f"{checked}\n",
    )
    assert "cuda.device_visibility" not in [h.id for h in report.hypotheses][:1]
    assert not report.hypotheses or "GPU 0" not in report.hypotheses[0].symptom


def test_a_job_on_two_nodes_that_works_on_one_is_not_one_bad_node(tmp_path: Path) -> None:
    """'2 nodes ..., NCCL works with a single node' says the job fails across nodes: the
    opposite of one node failing while the others work."""
    report = _diagnose(
        tmp_path,
        "We train on 2 nodes with 8 GPUs each, NCCL works with a single node but the two-node "
        "job hangs at the first allreduce.\n\n" + _SOCKET_TIMEOUT,
    )
    assert not any("it fails only on one node" in why for h in report.hypotheses for why in h.for_)
    replicas = _diagnose(
        tmp_path,
        "3 of the replicas are running in stable state, the 4th hangs at the first allreduce.\n\n"
        + _SOCKET_TIMEOUT,
    )
    assert any("it fails only on one node" in why for h in replicas.hypotheses for why in h.for_)


def test_working_with_only_one_gpu_is_no_single_bad_node(tmp_path: Path) -> None:
    """'Only with one GPU' counts GPUs; 'only on node 3' names a node."""
    gpus = _diagnose(tmp_path, "The training works only with one GPU, with two it hangs.\n")
    assert all("it fails only on one node" not in h.for_ for h in gpus.hypotheses)
    node = _diagnose(tmp_path, "The training hangs only on node 3, the same job runs elsewhere.\n")
    assert any("it fails only on one node" in h.for_ for h in node.hypotheses)


@pytest.mark.parametrize(
    "text",
    [
        # the process group's default timeout by its length (torch's 30 minutes)
        "Training with DPOTrainer on big datasets keeps failing, always after 30 minutes.\n",
        # Chinese: "full fine-tuning on one machine errors with timeout every time at 30
        # minutes; changing --ddp_timeout did not take effect"
        (
            "单机多卡全量微调，使用deepspeed的stage3，每次到30分钟报错timeout：\n"
            "尝试修改--ddp_timeout但无法生效\n"
        ),
        # Chinese: "after raising the nccl timeout it still errors"
        "增加 nccl 超时时间设置后，仍然报错\n",
    ],
)
def test_a_failure_at_the_process_groups_timeout_is_a_collective_timeout(
    tmp_path: Path, text: str
) -> None:
    report = _diagnose(tmp_path, text)
    assert report.hypotheses[0].symptom == "a collective timed out (watchdog)"
    assert report.top(1) == ["app.hang"]
    assert _critical(report) == []


@pytest.mark.parametrize(
    "text",
    [
        "I set the timeout to 30 minutes and training runs fine.\n",
        "We use ddp_timeout=7200 in our config. Everything works as expected.\n",
    ],
)
def test_a_timeout_setting_without_a_failure_is_no_symptom(tmp_path: Path, text: str) -> None:
    assert _diagnose(tmp_path, text).hypotheses == ()


def test_a_crash_after_thirty_minutes_with_its_own_message_is_that_message(
    tmp_path: Path,
) -> None:
    text = "It crashed after 30 minutes of training with CUDA out of memory.\n"
    report = _diagnose(tmp_path, text)
    assert report.top(1) == ["gpu.oom"]


@pytest.mark.parametrize(
    "text",
    [
        'Multi-GPU DDP training crashes with "unused parameters" error for detection models\n',
        (
            "With LayerDrop on 8 GPUs this produced an error, suggesting that"
            ' "some parameters aren\'t contributing to the loss"\n'
        ),
    ],
)
def test_ddps_unused_parameter_error_in_words_is_the_models_unused_parameters(
    tmp_path: Path, text: str
) -> None:
    report = _diagnose(tmp_path, text)
    assert report.top(1) == ["app.unused_params"]


def test_the_unused_parameter_setting_without_its_error_is_not_that_error(tmp_path: Path) -> None:
    assert (
        _diagnose(
            tmp_path, "We train with find_unused_parameters=False; fine on 8 GPUs.\n"
        ).hypotheses
        == ()
    )
    hang = _diagnose(tmp_path, "Training hangs at step 3. We set find_unused_parameters=True.\n")
    assert hang.top(1) != ["app.unused_params"]


@pytest.mark.parametrize(
    ("text", "symptom"),
    [
        (
            "Can only run tensor parallel=2 once and subsequent runs stall on 2x RTX A6000\n",
            "the job hangs without an error (the reporter's words)",
        ),
        (
            "Train Alexnet with 4 GPUs seems slower than one\n",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
        (
            "Performance degrades drastically between two dockers on one host\n",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
        # a sentence that names the code it ran is the reporter's, not an environment dump
        (
            "I used os.environ['NCCL_DEBUG'] = 'INFO' to show the NCCL hang up\n",
            "the job hangs without an error (the reporter's words)",
        ),
    ],
)
def test_stalls_slowness_and_a_sentence_about_code_are_read(
    tmp_path: Path, text: str, symptom: str
) -> None:
    report = _diagnose(tmp_path, text)
    assert report.hypotheses[0].symptom == symptom
    assert _critical(report) == []


@pytest.mark.parametrize(
    "text",
    [
        "It does not hang, the job finishes fine.\n",
        "Nothing hangs and training finishes.\n",
        "No stalls were observed during the run.\n",
    ],
)
def test_a_hang_word_denied_is_no_hang(tmp_path: Path, text: str) -> None:
    assert _diagnose(tmp_path, text).hypotheses == ()


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # MIG named beside CUDA seeing one GPU: a process enumerates one instance at most
        ("Torch.cuda.device_count() shows only one gpu in MIG A100\n", "gpu.mig"),
        (
            "On our 4-GPU box torch.cuda.device_count() shows only one GPU\n",
            "cuda.device_visibility",
        ),
        # Chinese: "training on several V100s, the GPUs were all allocated to the same card"
        ("使用v100来多卡训练，发现分配gpu都分配到同一张卡了\n", "cuda.device_visibility"),
        (
            "When I ran the script, I got out of memory. GPU 0 gets more memory than others.\n",
            "gpu.oom",
        ),
    ],
)
def test_gpu_enumeration_and_placement_in_words(tmp_path: Path, text: str, first: str) -> None:
    assert _diagnose(tmp_path, text).top(1) == [first]


def test_a_full_device_count_is_no_enumeration_failure(tmp_path: Path) -> None:
    assert (
        _diagnose(tmp_path, "On our box device_count() returns 8 as expected.\n").hypotheses == ()
    )


def test_an_exit_by_signal_9_in_words_is_a_killed_process(tmp_path: Path) -> None:
    killed = _diagnose(
        tmp_path, "With 8 GPUs the host memory reached 8*60GB and it caused exited -9 ;\n"
    )
    assert killed.hypotheses[0].symptom == "a rank was killed (SIGKILL / exit 137)"
    assert killed.top(1) == ["host.resources"]
    assert _diagnose(tmp_path, "The process exited with code 0 after 9 epochs.\n").hypotheses == ()


def test_another_job_on_the_same_gpus_is_contention(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "I accidentally ran two parallel training processes on the same bunch of GPUs, then"
        " those GPUs stopped responding.\n",
    )
    assert report.hypotheses[0].symptom == "the job hangs without an error (the reporter's words)"
    assert report.top(1) == ["gpu.contention"]


def test_the_jobs_own_ranks_on_one_gpu_are_its_placement(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path, "I ran two processes of my DDP job on the same GPU and it fails.\n"
    )
    assert report.top(1) == ["cuda.device_visibility"]
    assert _diagnose(tmp_path, "The server is responding fine.\n").hypotheses == ()


@pytest.mark.parametrize(
    ("said", "one_gpu"),
    [
        ("Only GPU 0 has load in each node; and the training stucks at line 212.", True),
        (
            "I start 8 processes with torchrun and all 8 processes run on GPU 0, then it hangs.",
            True,
        ),
        ("多卡训练卡住，只有0号卡有占用。", True),
        # a stray context beside each rank's own work is the rank-to-GPU mapping, not this
        ("Each process also creates a 500 MB context on GPU 0, and training hangs.", False),
        ("Training with DDP on 4 GPUs hangs, all GPUs show 100% utilisation.", False),
    ],
)
def test_every_rank_on_one_gpu_points_at_ranks_sharing_it(
    tmp_path: Path, said: str, one_gpu: bool
) -> None:
    report = _diagnose(tmp_path, said + "\n")
    top = report.hypotheses[0]
    assert (top.id == "nccl.duplicate_gpu") is one_gpu
    assert any("every rank computes on one GPU" in why for why in top.for_) is one_gpu


@pytest.mark.parametrize(
    ("said", "late"),
    [
        ("After epoch 0, epoch 1 was stuck.", True),
        ("The trainer stays stuck on iteration 999 after saving.", True),
        ("It always hangs in the second epoch.", True),
        ("多 GPU 训练在第二个 epoch 卡在 loss.backward()", True),
        ("trainer.fit() hangs forever after the first train+val epoch.", True),
        ("It hangs after the first epoch ends.", True),
        ("It hangs before the first epoch starts.", False),
        # Keras counts epochs from 1: 'Epoch 1/24' is the first
        ("It freezes in Epoch 1/24 and prints nothing more.", False),
        ("It hangs at step 1, before any loss is printed.", False),
        ("It hangs right at the start, nothing is printed.", False),
    ],
)
def test_a_hang_past_the_first_epoch_or_step_is_late(tmp_path: Path, said: str, late: bool) -> None:
    """A named epoch or step past the first says training ran: the path between the GPUs
    worked for it, so the application comes before the transport."""
    report = _diagnose(tmp_path, f"Training with DDP on 4 GPUs hangs. {said}\n")
    lead = report.hypotheses[0]
    assert any("after training ran" in why for why in lead.for_) is late
    assert (lead.id in ("app.hang", "app.collective_mismatch")) is late


@pytest.mark.parametrize(
    ("said", "branch"),
    [
        ("LBANN hangs when there are ranks that have no data to compute with.", True),
        ("It hangs when some nodes have no samples in the last mini-batch.", True),
        ("感觉是数据不平衡导致的。", True),
        ("Every rank has data; none of them gets an empty batch.", False),
        ("数据已经打乱，每个进程数据量相同。", False),
    ],
)
def test_ranks_without_data_run_different_code(tmp_path: Path, said: str, branch: bool) -> None:
    """A rank with nothing to work on skips the step, and its collectives, that the others
    enter."""
    report = _diagnose(tmp_path, f"Training with DDP on 4 GPUs hangs forever. {said}\n")
    mismatch = [h for h in report.hypotheses if h.id == "app.collective_mismatch"]
    said_so = any("the ranks run different code" in why for h in mismatch for why in h.for_)
    assert said_so is branch


def test_an_nvlink_board_weighs_pcie_peer_to_peer_down(tmp_path: Path) -> None:
    """On an SXM/HGX board the GPUs' peer traffic goes over NVLink, where ACS and an IOMMU
    are not on the path; on PCIe cards P2P keeps its place."""
    hang = "Training with DDP on 8 GPUs hangs at the first allreduce, nothing is printed.\n"
    sxm = _diagnose(tmp_path, hang + "GPU 0: NVIDIA A100-SXM4-80GB\nGPU 1: NVIDIA A100-SXM4-80GB\n")
    p2p = next(h for h in sxm.hypotheses if h.id == "nccl.p2p")
    assert any("over NVLink" in why for why in p2p.against)
    assert sxm.hypotheses[0].id != "nccl.p2p"
    pcie = _diagnose(
        tmp_path, hang + "GPU 0: NVIDIA A100-PCIE-40GB\nGPU 1: NVIDIA A100-PCIE-40GB\n"
    )
    assert pcie.hypotheses[0].id == "nccl.p2p"
    assert not any("over NVLink" in why for h in pcie.hypotheses for why in h.against)
    # a hypervisor under the GPUs keeps P2P in question on any board
    vm = _diagnose(
        tmp_path,
        hang.replace("hangs", "hangs in a KVM virtual machine") + "GPU 0: "
        "NVIDIA A100-SXM4-80GB\nGPU 1: NVIDIA A100-SXM4-80GB\n",
    )
    assert not any("over NVLink" in why for h in vm.hypotheses for why in h.against)


@pytest.mark.parametrize(
    ("said", "imbalance"),
    [
        ("I found that there are several processes on the gpu 0, and they take memory.", True),
        ("I found that there are multiple processes on the rank 0 devices.", True),
        ("In training, there are 8 extra processes who occupy memory of the same one gpu.", True),
        ("nvidia-smi shows one process on each GPU, 8 processes in all.", False),
        ("There are several processes in the container, one per GPU.", False),
    ],
)
def test_the_ranks_processes_on_gpu_0_in_words(tmp_path: Path, said: str, imbalance: bool) -> None:
    """Every rank opening a context on GPU 0 (a checkpoint loaded without map_location, a
    pipeline built for device 0) shows as the job's extra processes there."""
    report = _diagnose(tmp_path, f"Training with DDP on 8 GPUs. {said}\n")
    lead = report.hypotheses[0] if report.hypotheses else None
    on_gpu0 = lead is not None and lead.symptom.startswith("the job's processes or memory land")
    assert on_gpu0 is imbalance
    if imbalance:
        assert lead is not None
        assert lead.id == "cuda.device_visibility"


def test_memory_said_beside_processes_on_gpu_0_names_the_jobs_memory(tmp_path: Path) -> None:
    """The memory those processes take is what the reporter lacks: the job's own memory on
    GPU 0 (gpu.oom) comes before the ranks given one GPU."""
    memory = _diagnose(
        tmp_path,
        "Extra processes and extra gpu memory on rank=0: there are several processes on the "
        "gpu 0. This limits the batch size.\n",
    )
    assert memory.top(3)[2:] == ["gpu.oom"]
    oom = next(h for h in memory.hypotheses if h.id == "gpu.oom")
    assert any("memory the job's processes take" in why for why in oom.for_)
    plain = _diagnose(tmp_path, "I found that there are several processes on the gpu 0.\n")
    assert [h.id for h in plain.hypotheses][:3] == [
        "cuda.device_visibility",
        "gpu.contention",
        "nccl.duplicate_gpu",
    ]


def test_a_titles_words_count_even_where_they_quote_a_command(tmp_path: Path) -> None:
    """A title is the reporter's sentence: 'stuck' in it is a hang though the nccl-tests
    command it quotes is read as a command too; the same command on its own line is output."""
    titled = _diagnose(tmp_path, "Title: ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4 stuck\n")
    assert titled.hypotheses[0].symptom.startswith("the job hangs without an error")
    bare = _diagnose(tmp_path, "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4 stuck\n")
    assert not bare.hypotheses


@pytest.mark.parametrize(
    ("said", "fails"),
    [
        ("I'd like to train both models at once, but I've been unsuccessful so far.", True),
        ("I tried NCCL_P2P_DISABLE=1 without success.", True),
        ("The upgrade was successful and training runs on all 8 GPUs.", False),
    ],
)
def test_an_attempt_that_did_not_succeed_is_a_failure(
    tmp_path: Path, said: str, fails: bool
) -> None:
    report = _diagnose(tmp_path, said + "\n")
    assert bool(report.hypotheses) is fails


def test_a_quoted_symbol_is_still_the_loaders_undefined_symbol(tmp_path: Path) -> None:
    """People quote the missing function's name; the loader prints it bare."""
    for line in (
        '[BUG]: undefined symbol: "ncclCommWindowRegister"',
        "ImportError: libtorch_cuda.so: undefined symbol: ncclCommWindowRegister",
    ):
        report = _diagnose(tmp_path, line + "\n")
        assert report.hypotheses[0].symptom.startswith("a shared library could not be loaded")
        assert report.hypotheses[0].id == "nccl.version_mismatch"


def test_a_failure_across_nodes_weighs_one_nodes_p2p_down(tmp_path: Path) -> None:
    """No message explains it and the job spans nodes: the path between them first."""
    across = _diagnose(tmp_path, "Multi-node training on 2 nodes fails at start-up.\n")
    p2p = [h for h in across.hypotheses if h.id == "nccl.p2p"]
    assert across.hypotheses[0].id != "nccl.p2p"
    assert all(any("path between them" in why for why in h.against) for h in p2p)
    one = _diagnose(tmp_path, "Training on my 4-GPU workstation fails at start-up.\n")
    assert not any("path between them" in why for h in one.hypotheses for why in h.against)


@pytest.mark.parametrize(
    "said",
    [
        (
            "Training with DDP on 4 GPUs hangs forever when the script calls dist.barrier() "
            "after saving.\n"
        ),
        "With Accelerate and ZeRO-3 the job hangs inside accelerator.main_process_first().\n",
        "All 8 ranks hang at the barrier at the end of training.\n",
    ],
)
def test_a_hang_at_a_barrier_the_code_calls_weighs_for_a_rank_on_another_path(
    tmp_path: Path, said: str
) -> None:
    report = _diagnose(tmp_path, said)
    assert report.top(1) == ["app.collective_mismatch"]
    lead = report.hypotheses[0]
    assert any("barrier the code calls" in reason for reason in lead.for_)


@pytest.mark.parametrize(
    "said",
    [
        # the store's own barrier of start-up is not one the code calls
        (
            "Training with DDP on 4 GPUs hangs after 'Waiting in store based barrier to "
            "initialize process group', nothing is printed.\n"
        ),
        "Training with DDP on 4 GPUs hangs, nothing is printed.\n",
    ],
)
def test_no_barrier_named_no_barrier_weight(tmp_path: Path, said: str) -> None:
    report = _diagnose(tmp_path, said)
    assert report.hypotheses
    assert all(
        "barrier the code calls" not in reason for h in report.hypotheses for reason in h.for_
    )


def test_a_gloo_mesh_that_cannot_connect_is_the_interface_first(tmp_path: Path) -> None:
    """Gloo binds the interface its host name resolves to: a full mesh that does not connect
    is that interface first (the development corpora's gloo connection failures, 7 of 7)."""
    report = _diagnose(
        tmp_path,
        "RuntimeError: Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n",
    )
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks failed")
    assert report.top(2) == ["net.socket_interface", "net.unreachable"]


def test_a_refused_gloo_connection_stays_the_unreachable_peer(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "terminate called after throwing an instance of 'gloo::IoException'\n"
        "  what():  [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Connection refused\n",
    )
    assert report.top(1) == ["net.unreachable"]


def test_vllms_own_nccl_line_names_the_release_the_gpu_needs(tmp_path: Path) -> None:
    # vLLM's pynccl logs the libnccl it loaded; with an RTX 5090 named, 2.21.5 predates it
    log = (
        "Title: vLLM TP=2 fails on two RTX 5090\n\n"
        "INFO 03-02 09:12:40 utils.py:918] Found nccl from library libnccl.so.2\n"
        "INFO 03-02 09:12:40 pynccl.py:69] vLLM is using nccl==2.21.5\n"
        "ERROR 03-02 09:12:41 worker_base.py:145] RuntimeError: NCCL error: unhandled cuda "
        "error (run with NCCL_DEBUG=INFO for details)\n"
    )
    report = diagnose_text(tmp_path, log)
    assert dict(report.inventory.versions)["nccl"] == "2.21.5"
    first = report.hypotheses[0]
    assert first.id == "nccl.internal"
    assert any("2.21.5" in r and "RTX 5090" in r for r in first.for_)
    # a release that knows the GPU: no such reason
    newer = diagnose_text(tmp_path, log.replace("nccl==2.21.5", "nccl==2.27.3"))
    assert dict(newer.inventory.versions)["nccl"] == "2.27.3"
    assert not any("predates" in r for h in newer.hypotheses for r in h.for_)


@pytest.mark.parametrize(
    ("said", "imbalance"),
    [
        ("nvidia-smi的结果中可以看到0号显卡上会有每个进程的编号。", True),
        ("GPU 0上有所有进程，其他卡正常。", True),
        ("0号显卡上的进程显存占用正常。", False),
    ],
)
def test_every_process_on_gpu_0_told_in_chinese(tmp_path: Path, said: str, imbalance: bool) -> None:
    report = _diagnose(tmp_path, "用mp.spawn和DistributedDataParallel训练。\n" + said + "\n")
    told = bool(report.hypotheses) and "GPU 0" in report.hypotheses[0].symptom
    assert told is imbalance
