"""The stack under and around PyTorch, read from its own messages: gloo, the driver and its
tools, the kernel, the launchers other than torchrun.

Each family: a realistic line of it runs through the whole pipeline and gives
its symptom class and the ids its mechanism points at; where a harmless line
looks like it, that line stays silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report


def _report(tmp_path: Path, text: str, name: str = "log.txt") -> Report:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return diagnose_paths([str(path)])


def _lead(report: Report) -> tuple[str, str]:
    """The first hypothesis's id and the catalogued message it was read from."""
    first = report.hypotheses[0]
    return first.id, first.for_[0]


# --- gloo -----------------------------------------------------------------------------------

GLOO_SIZE_MISMATCH = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    dist.all_reduce(t)\n"
    '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1292, '
    "in all_reduce\n"
    "    work = default_pg.allreduce([tensor], opts)\n"
    "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
    "op.preamble.length <= op.nbytes. 8773512 vs 8386560\n"
)
GLOO_LOOPBACK_REFUSED = (
    "Traceback (most recent call last):\n"
    '  File "main.py", line 40, in <module>\n'
    '    dist.init_process_group(backend="gloo", init_method="env://")\n'
    "RuntimeError: [/opt/conda/conda-bld/pytorch_1616554793803/work/third_party/gloo/gloo/"
    "transport/tcp/pair.cc:799] connect [127.0.1.1]:31582: Connection refused\n"
)


def test_gloos_receive_larger_than_posted_is_a_collective_mismatch(tmp_path: Path) -> None:
    """The peer sent more bytes than this rank's buffer holds: different collectives or sizes
    (before, the traceback's place made it NCCL's first-collective class: /dev/shm first)."""
    report = _report(tmp_path, GLOO_SIZE_MISMATCH)
    first, why = _lead(report)
    assert first == "app.collective_mismatch"
    assert "gloo.tcp.recv_size_mismatch" in why
    assert report.hypotheses[0].symptom.startswith("ranks issued different collectives")
    assert "nccl.shm" not in [h.id for h in report.hypotheses]


def test_gloos_2026_wording_of_the_size_check_and_its_emoji_sign_off() -> None:
    mismatch = signature_of(
        "RuntimeError: [enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= "
        "op.nbytes. 4096 vs 1024. Received data size doesn't match expected size. Is there a "
        "distributed collective mismatch in your code?"
    )
    assert mismatch is not None
    assert (mismatch.id, mismatch.symptom) == ("gloo.tcp.recv_size_mismatch_2", "desync")
    closed = signature_of(
        "RuntimeError: [gloo/transport/tcp/pair.cc:544] Connection closed by peer "
        "[10.0.3.7]:19443. This is typically caused by a remote worker crashing. Check the logs "
        "of the remote worker before reporting an error. GLHF!"  # the emoji lost in a paste
    )
    assert closed is not None
    assert (closed.id, closed.symptom) == ("gloo.tcp.connection_closed_2", "connection")
    assert closed.hint_ids == ("launch.rank_crash", "net.unreachable")


def test_gloos_connect_refused_at_a_loopback_address_is_the_interface_first(
    tmp_path: Path,
) -> None:
    """Gloo before 2023 reports the asynchronous connect's error with the peer's address."""
    report = _report(tmp_path, GLOO_LOOPBACK_REFUSED)
    first, why = _lead(report)
    assert first == "net.socket_interface"
    assert "gloo.tcp.connect_peer_failed" in why
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks")


def test_a_hung_io_kernel_thread_is_the_hosts_storage_not_the_jobs_hang(
    tmp_path: Path,
) -> None:
    """The same kernel line for a filesystem's journal thread: the disk under the host stalled;
    the job's own hang comes second (a rank may wait on that disk)."""
    report = _report(
        tmp_path,
        "[Thu Dec  3 10:02:11 2026] INFO: task jbd2/nvme0n1p2-8:812 blocked for more than 122 "
        "seconds.\n"
        "[Thu Dec  3 10:02:11 2026]       Not tainted 5.15.0-91-generic #101-Ubuntu\n"
        "[Thu Dec  3 10:02:11 2026] task:jbd2/nvme0n1p2-8 state:D stack:    0 pid:  812 "
        "ppid:     2 flags:0x00004000\n",
    )
    first, why = _lead(report)
    assert first == "host.resources"
    assert "kernel.hung_task.io_thread" in why
    assert [h.id for h in report.hypotheses][:2] == ["host.resources", "app.hang"]
    assert not report.findings


@pytest.mark.parametrize(
    ("line", "ident", "symptom"),
    [
        (
            (
                "RuntimeError: [enforce fail at gloo/transport/ibverbs/buffer.cc:51] "
                "mr_ != nullptr. ibv_reg_mr: Cannot allocate memory (did you run into the locked "
                "memory limit?)"
            ),
            "gloo.ibverbs.reg_mr_memlock",
            "host_limit",
        ),
        (
            (
                "RuntimeError: [enforce fail at gloo/transport/ibverbs/pair.cc:496] wc->status == "
                "IBV_WC_SUCCESS. 5 vs 0. Recv for slot 3: Work Request Flushed Error"
            ),
            "gloo.ibverbs.completion_error",
            "connection",
        ),
        (
            "RuntimeError: [gloo/transport/tcp/pair.h:311] Connect timeout [10.0.0.9]:49321",
            "gloo.tcp.connect_timeout",
            "collective_timeout",
        ),
        (
            (
                "RuntimeError: [gloo/transport/uv/pair.cc:102] Error connecting to "
                "[192.168.1.20]:61100: connection refused"
            ),
            "gloo.uv.connect_error",
            "connection",
        ),
        (
            (
                "gloo::IoException: [gloo/rendezvous/file_store.cc:151] Wait timeout for key(s): "
                "[rank_1]"
            ),
            "gloo.rdzv.wait_timeout",
            "store_timeout",
        ),
    ],
)
def test_gloo_lines_read_as_their_class(line: str, ident: str, symptom: str) -> None:
    """(A completion status libibverbs names, ``transport retry counter exceeded``, is read
    as that status: the rdma catalogue's longer words are the more specific message.)"""
    sig = signature_of(line)
    assert sig is not None
    assert (sig.id, sig.symptom) == (ident, symptom)


def test_gloos_healthy_connection_summary_opens_no_class(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks "
        "is : 1\nepoch 0 step 100 loss 1.92\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


# --- the NVIDIA driver and its tools ------------------------------------------------------------


def test_nvidia_smi_that_cannot_reach_the_driver_ranks_the_module_then_the_container(
    tmp_path: Path,
) -> None:
    """A typed nvidia-smi error no rule confirms is still read as the message it is (the
    report was empty before: the differential read only unclaimed lines)."""
    report = _report(
        tmp_path,
        "root@node3:~# nvidia-smi\n"
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
        "sure that the latest NVIDIA driver is installed and running.\n",
    )
    assert [h.id for h in report.hypotheses][:2] == ["driver.version_mismatch", "driver.container"]
    assert "driver.smi.no_driver" in report.hypotheses[0].for_[0]
    assert report.hypotheses[0].symptom.startswith("the NVIDIA driver or NVML failed")


def test_the_driver_failing_to_bring_a_gpu_up_points_at_a_lost_gpu(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[  412.118203] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x22:0x56:762)\n"
        "[  412.118270] NVRM: GPU 0000:3b:00.0: rm_init_adapter failed, device minor number 0\n",
    )
    # decisive now (the driver's own words): a finding, not only the lead of the ranked causes
    top = report.findings[0]
    assert (top.id, top.root_cause) == ("gpu.lost", True)
    assert top.title == "The driver could not initialise the GPU"


def test_nvml_unknown_error_in_pynvml_points_at_the_container_first(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "monitor.py", line 12, in <module>\n'
        "    pynvml.nvmlInit()\n"
        "pynvml.NVMLError_Unknown: Unknown Error\n",
    )
    first, why = _lead(report)
    assert first == "driver.container"
    assert "driver.nvml.unknown" in why


@pytest.mark.parametrize(
    ("line", "ident", "symptom", "hint"),
    [
        (
            "pynvml.nvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
            "driver.nvml.driver_not_loaded",
            "driver_error",
            "driver.version_mismatch",
        ),
        (
            # the container runtime's hook failed on the host: the CLI's stage is the message
            "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown",
            "driver.nvc.init_error",
            "driver_error",
            "driver.container",
        ),
        (
            (
                "stderr: nvidia-container-cli: requirement error: unsatisfied condition: "
                "cuda>=12.4, please update your driver to a newer version, or use an earlier cuda "
                "container: unknown"
            ),
            "driver.nvc.unsatisfied_condition_2",
            "cuda_driver",
            "driver.cuda_mismatch",
        ),
        (
            (
                "nvidia-container-cli: device error: GPU-9c416c82-d801-d28f-0867-dd438d4be914: "
                "unknown device: unknown"
            ),
            "driver.nvc.device_error",
            "cuda_device",
            "cuda.device_visibility",
        ),
        (
            (
                "load library failed: libnvidia-ml.so.1: cannot open shared object file: no such "
                "file or directory"
            ),
            "driver.nvc.load_library_failed",
            "library_missing",
            "driver.container",
        ),
        (
            "[ 1043.221] NVRM: API mismatch: the client 'nvidia-smi' (pid 4242)",
            "driver.nvrm.api_mismatch_2",
            "driver_error",
            "driver.version_mismatch",
        ),
        (
            "modprobe: ERROR: could not insert 'nvidia_uvm': No such device",
            "driver.modprobe.uvm_insert_failed",
            "driver_error",
            "driver.uvm",
        ),
        (
            "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
            "driver.smi.device_handle",  # on the host: a GPU that stopped answering
            "xid",
            "gpu.lost",
        ),
    ],
)
def test_driver_lines_read_as_their_class(line: str, ident: str, symptom: str, hint: str) -> None:
    sig = signature_of(line)
    assert sig is not None
    assert (sig.id, sig.symptom) == (ident, symptom)
    assert sig.hint_ids[0] == hint


def test_harmless_nvml_and_driver_lines_open_no_class(tmp_path: Path) -> None:
    """A monitoring library's query the GPU does not offer, the UVM module's load line and a
    CIFS mount's error are no failure of the GPU stack."""
    assert signature_of("pynvml.NVMLError_NotSupported: Not Supported") is None
    assert signature_of("mount error(13): Permission denied") is None
    report = _report(
        tmp_path,
        "[    5.301] nvidia-uvm: Loaded the UVM driver, major device number 510.\n"
        "WARNING: pynvml.NVMLError_NotSupported: Not Supported (power draw)\n"
        "epoch 1 step 200 loss 0.91\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


# --- the kernel -----------------------------------------------------------------------------


def test_an_uncorrectable_pcie_error_points_at_the_gpu_and_its_link(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[86211.445] pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: "
        "0000:3b:00.0\n"
        "[86211.445] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
        "type=Transaction Layer, (Receiver ID)\n",
    )
    assert [h.id for h in report.hypotheses][:2] == ["gpu.lost", "gpu.pcie_degraded"]
    assert report.hypotheses[0].symptom.startswith("the kernel logged an uncorrectable PCIe")


def test_corrected_pcie_errors_are_no_failure(tmp_path: Path) -> None:
    """The link retried and fixed them; people worry about the stream of them in dmesg."""
    assert (
        signature_of(
            "pcieport 0000:00:01.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
            "(Receiver ID)"
        )
        is None
    )
    report = _report(
        tmp_path,
        "[ 101.2] pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0\n"
        "[ 101.2] nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical "
        "Layer, (Receiver ID)\n"
        "epoch 2 step 300 loss 0.71\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


def test_the_kernels_hung_task_warning_is_a_hang(tmp_path: Path) -> None:
    """It says no 'error': the lookup reads it all the same."""
    report = _report(
        tmp_path,
        "[ 7380.112] INFO: task python:4242 blocked for more than 120 seconds.\n"
        '[ 7380.112] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this '
        "message.\n",
    )
    first, why = _lead(report)
    assert first == "app.hang"
    assert "kernel.hung_task" in why


@pytest.mark.parametrize(
    ("line", "ident", "symptom"),
    [
        (
            (
                "oom_reaper: reaped process 4242 (python), now anon-rss:0kB, file-rss:0kB, "
                "shmem-rss:0kB"
            ),
            "kernel.oom.reaper",
            "host_oom",
        ),
        (
            (
                "traps: python[4242] general protection fault ip:7f3a1c2b3d4e sp:7ffd5e6f7a80 "
                "error:0 in libc.so.6[7f3a1c200000+195000]"
            ),
            "kernel.gpf",
            "crashed",
        ),
        (
            (
                "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), "
                "type=Transaction Layer, (Requester ID)"
            ),
            "kernel.aer.bus_error_uncorrected",
            "pcie_error",
        ),
    ],
)
def test_kernel_lines_read_as_their_class(line: str, ident: str, symptom: str) -> None:
    sig = signature_of(line)
    assert sig is not None
    assert (sig.id, sig.symptom) == (ident, symptom)


def test_harmless_means_an_info_message_not_a_failures_wrapper() -> None:
    """A corrected PCIe error is harmless; c10d's 'NCCL error in:' (class info, level error:
    a typed fact reads its cause) still says something failed, so the reporter may quote it."""
    from nccl_doctor.facts.catalogue import harmless_message

    corrected = harmless_message(
        "pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0"
    )
    assert corrected is not None
    assert corrected.id == "kernel.aer.corrected_received"
    assert (
        harmless_message(
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
            "c10d/NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.21.5"
        )
        is None
    )


# --- launchers besides torchrun ---------------------------------------------------------------


def test_deepspeeds_child_killed_by_sigkill_is_the_oom_killer_first(tmp_path: Path) -> None:
    """Python's returncode -9: the launcher's child died of SIGKILL, not of its own error."""
    report = _report(
        tmp_path,
        "[2024-05-01 10:00:00,118] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
        "51234\n"
        "[2024-05-01 10:00:00,123] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', "
        "'-u', 'train.py', '--local_rank=3', '--deepspeed'] exits with return code = -9\n",
    )
    first, why = _lead(report)
    assert first == "host.resources"
    assert why == "the kernel's OOM killer ends the biggest process"
    assert report.hypotheses[0].symptom.startswith("a rank was killed")


def test_deepspeeds_exit_line_is_the_first_failure_and_names_no_rank(tmp_path: Path) -> None:
    """DeepSpeed's sigkill_handler kills every child ("Killing subprocess N", printed first)
    because one exited, then logs the exit code with the command of the LAST child it spawned
    (``cmd``): the exit line is the failure, the kills its cascade, and its --local_rank is not
    the rank that died. A pasted log often wraps the long command."""
    report = _report(
        tmp_path,
        "Initializing language decoder from ./vicuna_ckpt/7b_v0/ ...\n"
        "[2023-11-13 16:59:54,760] [INFO] [launch.py:314:sigkill_handler] Killing subprocess "
        "9439\n"
        "[2023-11-13 16:59:54,783] [INFO] [launch.py:314:sigkill_handler] Killing subprocess "
        "9440\n"
        "[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/"
        "python', '-u', 'train.py', '--local_rank=1', '--model', 'openllama', '--data_path', \n"
        "'../data/instructions.json', '--save_path', './ckpt/'\n"
        "] exits with return code = -9\n",
    )
    assert report.first_failure is not None
    cite = report.first_failure.cite
    assert (cite.line, cite.text) == (6, "] exits with return code = -9")
    crash = next(f for f in report.findings if f.id == "launch.rank_crash")
    assert "A worker died first with exit code -9 (SIGKILL)" in crash.summary
    assert "local rank 1" not in crash.summary.lower()


@pytest.mark.parametrize(
    ("code", "ident", "symptom"),
    [
        ("-11", "deepspeed.launch.exit_code_sigsegv", "crashed"),
        ("-7", "deepspeed.launch.exit_code_sigbus", "bus_error"),
        ("1", "deepspeed.launch.exit_code", "failure"),
    ],
)
def test_deepspeeds_exit_code_names_the_signal(code: str, ident: str, symptom: str) -> None:
    sig = signature_of(f"['/usr/bin/python', '-u', 'train.py'] exits with return code = {code}")
    assert sig is not None
    assert (sig.id, sig.symptom) == (ident, symptom)


def test_horovods_tensor_shape_mismatch_is_a_collective_mismatch(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "train_hvd.py", line 91, in <module>\n'
        "    hvd.allreduce(grad)\n"
        "horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: Mismatched "
        "ALLREDUCE tensor shapes: One rank sent a tensor of shape [1024, 10], but another rank "
        "sent a tensor of shape [1024, 12].\n",
    )
    first, why = _lead(report)
    assert first == "app.collective_mismatch"
    assert "horovod.common.mismatch" in why


def test_horovods_shutdown_is_the_cascade_of_a_rank_that_failed_or_left(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[1,0]<stderr>:tensorflow.python.framework.errors_impl.UnknownError: Horovod has been "
        "shut down. This was caused by an exception on one of the ranks or an attempt to "
        "allreduce, allgather or broadcast a tensor after one of the ranks finished execution. "
        "If the shutdown was caused by an exception, you should see the exception in the log "
        "before the first shutdown message.\n",
    )
    assert [h.id for h in report.hypotheses][:2] == ["launch.rank_crash", "app.collective_mismatch"]


def test_accelerates_rtx_4000_guard_points_at_p2p() -> None:
    sig = signature_of(
        "NotImplementedError: Using RTX 4000 series doesn't support faster communication "
        'broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or '
        "use `accelerate launch` which will do this automatically."
    )
    assert sig is not None
    assert (sig.id, sig.hint_ids) == ("accelerate.state.rtx4000_p2p", ("nccl.p2p",))


@pytest.mark.parametrize(
    "flag",
    ["`----main_process_port`", "`--main_process_port`"],  # accelerate 0.21-0.27, then 0.28+
)
def test_accelerates_port_check_points_at_the_port_in_use(tmp_path: Path, flag: str) -> None:
    """accelerate tests the main process port itself before it starts torchrun's agent."""
    report = _report(
        tmp_path,
        "ConnectionError: Tried to launch distributed communication on port `29500`, but "
        "another process is utilizing it. Please specify a different port (such as using the "
        f"{flag} flag or specifying a different `main_process_port` in your config file) and "
        "rerun your script. To automatically use the next open port (on a single node), you can "
        "set this to `0`.\n",
    )
    assert report.hypotheses[0].id == "launch.port_in_use"
    assert signature_of("Tried to launch distributed communication on port 29500") is None


def test_accelerates_defaults_warning_opens_no_class(tmp_path: Path) -> None:
    """Every `accelerate launch` without a config prints it; it is never the failure."""
    report = _report(
        tmp_path,
        "The following values were not passed to `accelerate launch` and had defaults used "
        "instead:\n"
        "\t`--num_machines` was set to a value of `1`\n"
        "To avoid this warning pass in values for each of the problematic parameters or run "
        "`accelerate config`.\n"
        "epoch 0: loss=2.11\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


def test_a_hung_worker_thread_is_read_whatever_its_work(tmp_path: Path) -> None:
    """A kworker's name holds a colon (kworker/u256:3): the line is still the kernel's
    hung-task warning, and a workqueue thread (here stuck in the NVIDIA driver) is no evidence
    of the storage stalling."""
    report = _report(
        tmp_path,
        "[Fri Dec  4 10:00:00 2026] INFO: task kworker/u256:3:12345 blocked for more than 122 "
        "seconds.\n"
        "[Fri Dec  4 10:00:00 2026] task:kworker/u256:3  state:D stack:    0 pid:12345 "
        "ppid:     2 flags:0x00004000\n"
        "[Fri Dec  4 10:00:00 2026] Workqueue: nvidia-modeset/kthread_q nv_kthread_q_run "
        "[nvidia_modeset]\n"
        "[Fri Dec  4 10:00:00 2026]  os_acquire_mutex+0x30/0x50 [nvidia]\n",
    )
    first, why = _lead(report)
    assert first == "app.hang"
    assert why.startswith("the message is kernel.hung_task ")


@pytest.mark.parametrize(
    "comm", ["btrfs-transacti", "kjournald", "ptlrpcd_00_01", "ldlm_bl_02", "scsi_eh_3", "loop7"]
)
def test_other_io_threads_hung_are_the_hosts_storage(tmp_path: Path, comm: str) -> None:
    """btrfs's transaction thread (its name cut at 15 characters), ext3's journal, Lustre's
    RPC and lock threads, the SCSI error handler, a loop device: the storage stack's own."""
    report = _report(
        tmp_path, f"[ 7380.112] INFO: task {comm}:812 blocked for more than 122 seconds.\n"
    )
    first, why = _lead(report)
    assert first == "host.resources"
    assert "kernel.hung_task.io_thread" in why
