"""The gpu.* and cuda.* rules read what they name from signs: the captured fields reach the report.

Each case runs the whole pipeline on a short, realistic log and checks a
value that only a sign's capture or a sign read on the right line can give:
the kernel's source line of a device assertion, the CUDA_VISIBLE_DEVICES
value, the MIG profile, the watchdog's wording, a sentence about host memory
or corrected ECC errors that must not count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.findings import Finding
from nccl_doctor.knowledge.gpu_boards import nvlink_board, nvswitch_model
from nccl_doctor.pipeline import diagnose_paths


def _diagnose(tmp_path: Path, **files: str) -> dict[str, Finding]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / name.replace("_", ".", 1)).write_text(text, encoding="utf-8")
    report = diagnose_paths([str(tmp_path)])
    folded = [kid for _, kids in report.folded for kid in kids]
    return {f.id: f for f in [*report.findings, *folded]}


def test_a_device_assertion_names_its_kernel_line_its_hint_and_what_nccl_saw(
    tmp_path: Path,
) -> None:
    found = _diagnose(
        tmp_path,
        train_log=(
            "[rank1]:/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: "
            "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] "
            "Assertion `t >= 0 && t < n_classes` failed.\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/work/train.py", line 40, in <module>\n'
            "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run "
            "with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n"
            "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "[rank1]: Last error:\n"
            "[rank1]: Cuda failure 'device-side assert triggered'\n"
        ),
    )
    summary = found["cuda.device_assert"].summary
    assert summary.startswith("Rank 1 hit a device-side assertion in Loss.cu:250 (`t >= 0")
    assert "usually asserts on a class label outside [0, n_classes)" in summary
    assert "NCCL's next call failed with 'unhandled cuda error'" in summary


def test_an_invalid_ordinal_reports_the_visible_devices_and_the_per_task_binding(
    tmp_path: Path,
) -> None:
    found = _diagnose(
        tmp_path,
        train_log=(
            "+ srun --ntasks-per-node=4 --gpus-per-task=1 python train.py\n"
            "[rank2]: CUDA_VISIBLE_DEVICES: 2\n"
            "[rank2]: Traceback (most recent call last):\n"
            '[rank2]:   File "/work/train.py", line 22, in <module>\n'
            "[rank2]:     torch.cuda.set_device(local_rank)\n"
            "[rank2]: RuntimeError: CUDA error: invalid device ordinal\n"
        ),
    )
    summary = found["cuda.device_visibility"].summary
    assert "Rank 2 asked for a GPU index beyond those it can see" in summary
    assert "at train.py:22" in summary
    assert "CUDA_VISIBLE_DEVICES is 2" in summary
    assert "the job uses `--gpus-per-task`" in summary


def test_an_illegal_access_the_watchdog_reported_says_so(tmp_path: Path) -> None:
    found = _diagnose(
        tmp_path,
        train_log=(
            "[rank0]:[E1203 10:00:01.000000000 ProcessGroupNCCL.cpp:1537] "
            "[PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated "
            "with exception: CUDA error: an illegal memory access was encountered\n"
        ),
    )
    summary = found["cuda.illegal_access"].summary
    assert summary.startswith("Rank 0 hit 'an illegal memory access was encountered'")
    assert "ProcessGroupNCCL's watchdog reported it" in summary


def test_cuda_failing_on_mig_slices_names_the_profile(tmp_path: Path) -> None:
    found = _diagnose(
        tmp_path,
        train_log=(
            "Using device NVIDIA A100-SXM4-80GB MIG 3g.40gb\n"
            "RuntimeError: CUDA error: invalid device ordinal\n"
        ),
    )
    assert found["gpu.mig"].summary.startswith(
        "The job runs on MIG slices (3g.40gb) and CUDA fails"
    )


_MIG_SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA A100 80GB PCIe          Off |   00000000:31:00.0 Off |                   On |
| N/A   34C    P0             43W /  300W |      53MiB /  81920MiB |     N/A      Default |
|                                         |                        |              Enabled |
+-----------------------------------------+------------------------+----------------------+
"""


def test_mig_beside_cudas_device_count_failure_is_the_cause(tmp_path: Path) -> None:
    """NVML counts the GPU, CUDA enumerates one MIG instance: asking for device 1 fails."""
    found = _diagnose(
        tmp_path,
        smi_txt=_MIG_SMI,
        train_log=(
            "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
            '"/opt/conda/conda-bld/pytorch/work/aten/src/ATen/cuda/CUDAContext.cpp":49, please '
            "report a bug to PyTorch.\n"
        ),
    )
    mig = found["gpu.mig"]
    assert (mig.severity.value, mig.confidence.value) == ("critical", "high")
    assert "a process enumerates only one MIG instance" in mig.summary


def test_mig_on_a_healthy_node_is_context(tmp_path: Path) -> None:
    mig = _diagnose(tmp_path, smi_txt=_MIG_SMI)["gpu.mig"]
    assert (mig.severity.value, mig.confidence.value) == ("info", "high")
    assert "enumerates" not in mig.summary


_MIXED_SMI = _MIG_SMI.replace(
    "|   0  NVIDIA A100 80GB PCIe          Off |   00000000:31:00.0 Off |                   On |",
    "|   0  NVIDIA A100 80GB PCIe          Off |   00000000:17:00.0 Off |                    0 |\n"
    "| N/A   31C    P0             45W /  300W |       4MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |             Disabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   1  NVIDIA A100 80GB PCIe          Off |   00000000:31:00.0 Off |                   On |",
)


def test_a_device_count_failure_on_a_node_with_mig_on_another_gpu_is_the_visibility(
    tmp_path: Path,
) -> None:
    """One GPU of the node is partitioned, another is whole: the job's 'invalid device ordinal'
    is not MIG's enumeration (the whole GPU enumerates as itself); asking for more devices than
    visible stays the cause, MIG context."""
    assert _MIXED_SMI.count("Disabled") == 1
    found = _diagnose(
        tmp_path,
        smi_txt=_MIXED_SMI,
        train_log=(
            "Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            "    torch.cuda.set_device(local_rank)\n"
            "RuntimeError: CUDA error: invalid device ordinal\n"
        ),
    )
    assert found["cuda.device_visibility"].severity.value == "critical"
    mig = found["gpu.mig"]
    assert mig.severity.value != "critical"
    assert "enumerates" not in mig.summary


_TWO_OF_FOUR_SMI = _MIXED_SMI.replace(
    "|   1  NVIDIA A100 80GB PCIe          Off |   00000000:31:00.0 Off |                   On |",
    "|   1  NVIDIA A100 80GB PCIe          Off |   00000000:65:00.0 Off |                    0 |\n"
    "| N/A   31C    P0             45W /  300W |       4MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |             Disabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   2  NVIDIA A100 80GB PCIe          Off |   00000000:CA:00.0 Off |                   On |\n"
    "| N/A   34C    P0             43W /  300W |      53MiB /  81920MiB |     N/A      Default |\n"
    "|                                         |                        |              Enabled |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   3  NVIDIA A100 80GB PCIe          Off |   00000000:E3:00.0 Off |                   On |",
)


def test_a_device_count_failure_with_mig_on_two_of_four_gpus_is_mig(tmp_path: Path) -> None:
    """Two whole GPUs and two partitioned ones: a process enumerates the two whole GPUs and
    one MIG instance, three devices of four, so local rank 3's 'invalid device ordinal' is
    MIG's counting, not the job's."""
    assert _TWO_OF_FOUR_SMI.count("Disabled") == 2
    assert _TWO_OF_FOUR_SMI.count("Enabled") == 2
    found = _diagnose(
        tmp_path,
        smi_txt=_TWO_OF_FOUR_SMI,
        train_log=(
            "Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            "    torch.cuda.set_device(local_rank)\n"
            "RuntimeError: CUDA error: invalid device ordinal\n"
        ),
    )
    mig = found["gpu.mig"]
    assert (mig.severity.value, mig.confidence.value) == ("critical", "high")
    assert mig.summary.startswith("MIG is enabled on GPU 2 (00000000:CA:00.0), GPU 3")
    assert "enumerates the 2 whole GPU(s) and one MIG instance, 3 device(s) of the 4" in mig.summary
    # the count the job asked beyond is MIG's: the visibility finding folds under it
    assert [f.id for f in diagnose_paths([str(tmp_path)]).findings] == ["gpu.mig"]


_ORDINAL = (
    "THCudaCheck FAIL file=/opt/pytorch/pytorch/torch/csrc/cuda/Module.cpp line=33 error=101 : "
    "invalid device ordinal\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib64/python3.6/site-packages/torch/cuda/__init__.py", line 265, in '
    "set_device\n"
    "    torch._C._cuda_setDevice(device)\n"
    "RuntimeError: cuda runtime error (101) : invalid device ordinal at "
    "/opt/pytorch/pytorch/torch/csrc/cuda/Module.cpp:33\n"
)


def test_gpus_said_to_be_mig_instances_beside_the_device_count_failure_are_the_cause(
    tmp_path: Path,
) -> None:
    """No nvidia-smi pasted: the reporter's 'MIG GPU instances' and CUDA's 'invalid device
    ordinal' for every rank but the first are MIG's enumeration, not a bad ordinal."""
    found = _diagnose(
        tmp_path,
        report_txt="I ran the ssd benchmark on an A100 with MIG GPU instances; every spawned "
        "process but the first fails:\n" + _ORDINAL,
    )
    mig = found["gpu.mig"]
    assert (mig.severity.value, mig.confidence.value) == ("critical", "medium")
    assert "'MIG GPU instances'" in mig.summary
    assert "'invalid device ordinal'" in mig.summary


@pytest.mark.parametrize(
    "said",
    [
        "MIG mode is disabled on the node; every spawned process but the first fails:\n",
        "The A100 is not partitioned (no MIG instances); every process but the first fails:\n",
    ],
)
def test_mig_ruled_out_leaves_the_device_count_failure_to_visibility(
    tmp_path: Path, said: str
) -> None:
    found = _diagnose(tmp_path, report_txt=said + _ORDINAL)
    assert "gpu.mig" not in found
    assert found["cuda.device_visibility"].severity.value == "critical"


def test_mig_instances_said_with_no_device_count_failure_are_no_finding(tmp_path: Path) -> None:
    found = _diagnose(
        tmp_path,
        report_txt="We split the A100 into MIG instances for inference and it runs fine.\n",
    )
    assert "gpu.mig" not in found


def test_a_sentence_about_a_gpu_oom_counts_unless_it_is_about_host_memory(
    tmp_path: Path,
) -> None:
    gpu = _diagnose(tmp_path / "gpu", report_md="NCCL init hits an OOM on the GPU every time.\n")
    assert gpu["gpu.oom"].summary.startswith("The report says the GPU ran out of memory")
    host = _diagnose(
        tmp_path / "host",
        report_md="NCCL init hits an OOM on the GPU node when system memory runs out.\n",
    )
    assert "gpu.oom" not in host


def test_words_about_ecc_errors_count_unless_they_were_all_corrected(tmp_path: Path) -> None:
    bad = _diagnose(tmp_path / "bad", report_md="After a day we see uncorrectable ECC errors.\n")
    assert bad["gpu.ecc"].summary.startswith("The report mentions ECC errors")
    fine = _diagnose(
        tmp_path / "fine", report_md="We see ECC errors on GPU 3, but all correctable ones.\n"
    )
    assert "gpu.ecc" not in fine


def test_board_names_tell_nvlink_and_nvswitch_parts() -> None:
    assert nvlink_board("NVIDIA A100-SXM4-80GB")
    assert nvlink_board("NVIDIA H200")
    assert not nvlink_board("NVIDIA H200 NVL")
    assert not nvlink_board("Tesla V100-PCIE-16GB")
    assert not nvlink_board(None)
    assert nvswitch_model("NVIDIA H100 80GB HBM3")
    assert not nvswitch_model("NVIDIA L40S")
    assert not nvswitch_model("nvidia h100")  # the model list is as NVIDIA prints it
    assert not nvswitch_model("")


def _fabric_manager(tmp_path: Path, active: str, status: str, extra: str = "") -> Finding | None:
    """The fabric manager finding of a pasted ``systemctl status nvidia-fabricmanager``."""
    text = (
        "$ sudo systemctl status nvidia-fabricmanager\n"
        "\u25cf nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
        "     Loaded: loaded (/lib/systemd/system/nvidia-fabricmanager.service; enabled; vendor "
        f"preset: enabled)\n     Active: {active} since Mon 2024-07-01 14:43:57 UTC; 5s ago\n"
        "    Process: 444114 ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/"
        f"fabricmanager.cfg (code=exited, status={status})\n{extra}"
    )
    return _diagnose(tmp_path, status_txt=text).get("gpu.fabric_manager")


def test_a_failed_fabric_manager_unit_is_the_nvswitch_fabric(tmp_path: Path) -> None:
    """systemctl's status block: the ExecStart line's exit status names the failed binary."""
    fm = _fabric_manager(
        tmp_path,
        "failed (Result: exit-code)",
        "1/FAILURE",
        "Jul 01 14:43:57 p5 systemd[1]: nvidia-fabricmanager.service: Failed with result "
        "'exit-code'.\n",
    )
    assert fm is not None
    assert (fm.severity.value, fm.confidence.value) == ("critical", "medium")
    assert "status=1/FAILURE" in fm.summary
    assert [c.line for c in fm.evidence] == [5, 6]


def test_a_running_fabric_manager_unit_says_nothing(tmp_path: Path) -> None:
    assert _fabric_manager(tmp_path, "active (running)", "0/SUCCESS") is None


def test_an_nvswitch_sxid_is_critical_only_when_fatal(tmp_path: Path) -> None:
    """The driver prints each SXid with its severity: Non-fatal holds the word 'fatal' too."""
    line = "[ 9123.456] nvidia-nvswitch1: SXid (PCI:0000:88:00.0): {code}, {severity}, Link 32\n"
    fatal = _diagnose(tmp_path / "f", dmesg_txt=line.format(code=20034, severity="Fatal"))
    assert fatal["gpu.nvlink"].severity.value == "critical"
    other = _diagnose(tmp_path / "n", dmesg_txt=line.format(code=12028, severity="Non-fatal"))
    assert other["gpu.nvlink"].severity.value == "warning"


def test_a_fabric_manager_with_no_nvswitch_to_manage_says_nothing(tmp_path: Path) -> None:
    """On PCIe GPUs the fabric manager finds no NVSwitch and exits; systemd calls that failed."""
    fm = _fabric_manager(
        tmp_path,
        "failed (Result: exit-code)",
        "1/FAILURE",
        "Jul 01 14:43:57 pc nv-fabricmanager[4177]: request to query NVSwitch device information "
        "from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n",
    )
    assert fm is None


_FM_JOURNAL = (
    "Dec 04 09:10:01 node1 systemd[1]: Starting NVIDIA fabric manager service...\n"
    "Dec 04 09:10:02 node1 systemd[1]: nvidia-fabricmanager.service: Control process exited, "
    "code=exited, status=1/FAILURE\n"
    "Dec 04 09:10:02 node1 systemd[1]: nvidia-fabricmanager.service: Failed with result "
    "'exit-code'.\n"
    "Dec 04 09:10:02 node1 systemd[1]: Failed to start NVIDIA fabric manager service.\n"
)


@pytest.mark.parametrize(
    "recovered",
    [
        (
            "Dec 04 09:12:01 node1 systemd[1]: Starting NVIDIA fabric manager service...\n"
            "Dec 04 09:12:03 node1 nv-fabricmanager[2215]: Successfully configured all the "
            "available GPUs and NVSwitches to route NVLink traffic.\n"
        ),
        "Dec 04 09:12:03 node1 systemd[1]: Started NVIDIA fabric manager service.\n",
    ],
)
def test_a_fabric_manager_unit_that_failed_and_then_started_says_nothing(
    tmp_path: Path, recovered: str
) -> None:
    """The journal's earlier failure is the past: the unit started after it."""
    fm = _fabric_manager(tmp_path, "active (running)", "0/SUCCESS", "\n" + _FM_JOURNAL + recovered)
    assert fm is None


def test_a_running_unit_above_its_journals_failures_says_nothing(tmp_path: Path) -> None:
    """systemctl status shows the unit's state now above its journal's older lines."""
    assert _fabric_manager(tmp_path, "active (running)", "0/SUCCESS", "\n" + _FM_JOURNAL) is None


def test_a_fabric_manager_that_failed_after_it_had_started_is_read(tmp_path: Path) -> None:
    fm = _diagnose(
        tmp_path,
        journal_txt=(
            "Dec 04 09:08:03 node1 systemd[1]: Started NVIDIA fabric manager service.\n"
            + _FM_JOURNAL
        ),
    ).get("gpu.fabric_manager")
    assert fm is not None
    assert fm.severity.value == "critical"


def test_one_nodes_fabric_manager_with_nothing_to_do_leaves_anothers_failure(
    tmp_path: Path,
) -> None:
    """The PCIe node's 'nothing to do' says nothing of the NVSwitch node's own log."""
    fm = _diagnose(
        tmp_path,
        pcie_log=(
            "Jul 01 14:43:57 pc nv-fabricmanager[4177]: request to query NVSwitch device "
            "information from NVSwitch driver failed with error:WARNING Nothing to do "
            "[NV_WARN_NOTHING_TO_DO]\n"
        ),
        hgx_log=(
            "Jul 01 14:44:02 hgx nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver "
            "interface version 550.127.05 don't match with driver version 550.120. Please update "
            "with matching NVIDIA driver package.\n"
        ),
    ).get("gpu.fabric_manager")
    assert fm is not None
    assert "don't match" in fm.summary


def test_a_mig_instance_named_with_no_gpu_listed_beside_the_count_failure(
    tmp_path: Path,
) -> None:
    """No nvidia-smi at all, only the MIG-<uuid> the job was given: nothing counts the GPUs,
    and a process enumerates that one instance."""
    found = _diagnose(
        tmp_path,
        train_log=(
            "CUDA_VISIBLE_DEVICES=MIG-4b5c1d2e-aaaa-bbbb-cccc-123456789abc\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            "    torch.cuda.set_device(local_rank)\n"
            "RuntimeError: CUDA error: invalid device ordinal\n"
        ),
    )
    mig = found["gpu.mig"]
    assert mig.severity.value == "critical"
    assert mig.summary.endswith(
        "('invalid device ordinal'): a process enumerates only one MIG instance, however many "
        "GPUs NVML counts"
    )
