"""driver.uvm from pasted reads: ``ls -l /dev/nvidia*`` without ``nvidia-uvm``, ``lsmod``
without ``nvidia_uvm``.

CUDA needs the unified-memory module and its node besides the driver's own; nvidia-smi does
not, so a node where only the main module loaded (a headless boot, no persistence daemon)
looks healthy to it while CUDA's first call fails with 999. A listing that holds the
driver's control node and no ``nvidia-uvm``, or lsmod lines of ``nvidia`` and none of
``nvidia_uvm``, say the module is not there; a listing or an lsmod with it says nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nccl_doctor.findings import Severity
from tests.helpers import diagnose_text

if TYPE_CHECKING:
    from pathlib import Path

UNKNOWN = (
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:128: UserWarning: CUDA "
    "initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available "
    "devices to be zero.\n"
)
LISTING = (
    "$ ls -l /dev/nvidia*\n"
    "crw-rw-rw- 1 root root 195,   0 Mar  4 08:01 /dev/nvidia0\n"
    "crw-rw-rw- 1 root root 195,   1 Mar  4 08:01 /dev/nvidia1\n"
    "crw-rw-rw- 1 root root 195, 255 Mar  4 08:01 /dev/nvidiactl\n"
)
UVM_NODE = "crw-rw-rw- 1 root root 509,   0 Mar  4 08:01 /dev/nvidia-uvm\n"
LSMOD = (
    "$ lsmod | grep nvidia\n"
    "nvidia_drm             98304  0\n"
    "nvidia_modeset       1351680  1 nvidia_drm\n"
    "nvidia              54358016  1 nvidia_modeset\n"
)
UVM_MODULE = "nvidia_uvm           1642496  0\n"


def _uvm(tmp_path: Path, text: str) -> list[tuple[Severity, str]]:
    report = diagnose_text(tmp_path, text)
    return [(f.severity, f.summary) for f in report.findings if f.id == "driver.uvm"]


def test_a_listing_without_the_uvm_node_beside_999_is_the_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, UNKNOWN + LISTING)
    assert report.top(1) == ["driver.uvm"]
    (uvm,) = [f for f in report.findings if f.id == "driver.uvm"]
    assert uvm.severity is Severity.CRITICAL
    assert uvm.summary.startswith("/dev/nvidia-uvm is missing; CUDA's first call fails with 999")
    assert [e.line for e in uvm.evidence] == [5, 1]  # the control node, the 999


def test_lsmod_without_the_uvm_module_is_the_same(tmp_path: Path) -> None:
    assert [s for s, _ in _uvm(tmp_path, UNKNOWN + LSMOD)] == [Severity.CRITICAL]
    # without a failure it is a warning: the node is not ready for CUDA
    assert [s for s, _ in _uvm(tmp_path, LSMOD)] == [Severity.WARNING]


def test_a_listing_or_lsmod_that_holds_uvm_says_nothing(tmp_path: Path) -> None:
    assert _uvm(tmp_path, UNKNOWN + LISTING + UVM_NODE) == []
    assert _uvm(tmp_path, UNKNOWN + LSMOD + UVM_MODULE) == []
    # a listing of the GPUs' nodes alone (no control node: filtered) proves nothing
    assert (
        _uvm(tmp_path, UNKNOWN + "crw-rw-rw- 1 root root 195, 0 Mar  4 08:01 /dev/nvidia0\n") == []
    )


BARE = "$ ls /dev/nvidia*\n/dev/nvidia0  /dev/nvidia1  /dev/nvidiactl  /dev/nvidia-modeset\n"


def test_a_plain_listing_without_the_uvm_node_is_read_too(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, UNKNOWN + BARE)
    assert report.top(1) == ["driver.uvm"]
    assert _uvm(tmp_path, UNKNOWN + BARE)[0][0] is Severity.CRITICAL
    with_node = BARE.replace("/dev/nvidia-modeset", "/dev/nvidia-modeset  /dev/nvidia-uvm")
    assert _uvm(tmp_path, UNKNOWN + with_node) == []


_NO_GPU = (
    "torch.distributed.DistBackendError: ProcessGroupNCCL is only supported with GPUs, "
    "no GPUs found!\n"
)


def test_a_missing_module_told_beside_no_gpu_found_is_the_cause(tmp_path: Path) -> None:
    said = "lsmod on the reimaged nodes shows no nvidia_uvm, and /dev has no nvidia-uvm.\n"
    report = diagnose_text(tmp_path, said + _NO_GPU)
    assert report.top(1) == ["driver.uvm"]
    assert _uvm(tmp_path, said + _NO_GPU)[0][0] is Severity.CRITICAL
    assert "cuda.device_visibility" not in [f.id for f in report.findings]  # explained


def test_the_machine_that_went_to_sleep_before_the_999_is_the_cause(tmp_path: Path) -> None:
    said = "It worked last week; the workstation went to sleep over the weekend, since then:\n"
    assert diagnose_text(tmp_path, said + UNKNOWN).top(1) == ["driver.uvm"]
    # the same words without the first call's 999 say nothing of the module
    assert _uvm(tmp_path, said + _NO_GPU.replace("no GPUs found", "no GPU with index 3")) == []
