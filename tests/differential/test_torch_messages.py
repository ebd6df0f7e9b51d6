"""PyTorch's own messages through the whole diagnosis: each opens the class of its mechanism.

Before these messages were catalogued, each of these logs fell back to the
place the traceback failed (CUDA's initialisation) or to the catch-all class.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report

TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 41, in <module>\n'
    "    torch.cuda.set_device(local_rank)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", line 302, in '
    "_lazy_init\n"
    "    torch._C._cuda_init()\n"
)
UNKNOWN = (
    "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: CUDA "
    "initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available "
    "devices to be zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\n"
    + TRACE
    + "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, "
    "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available "
    "devices to be zero.\n"
)
NO_DRIVER = (
    "$ docker run --rm -v $PWD:/w pytorch/pytorch:2.1.2-cuda12.1-cudnn8-runtime torchrun "
    "--nproc_per_node=4 /w/train.py\n"
    + TRACE
    + "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
    "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
)
GLOO = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 30, in <module>\n'
    '    dist.init_process_group(backend="gloo")\n'
    "RuntimeError: Gloo connectFullMesh failed with "
    "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
)
DEVICE_ASSERT = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/workspace/train.py", line 19, in <module>\n'
    "[rank1]:     model = model.to(f'cuda:{local_rank}')\n"
    '[rank1]: RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/'
    'src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. device=1, num_gpus=\n'
)
RELAYED = (
    "[E ProcessGroupNCCL.cpp:828] [Rank 2] NCCL watchdog thread terminated with exception: CUDA "
    "error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
)


def _report(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "log.txt"
    path.write_text(text)
    return diagnose_paths([str(path)])


def test_torchs_wording_of_cuda_999_is_cudas_unknown_error(tmp_path: Path) -> None:
    report = _report(tmp_path, UNKNOWN)
    top = report.hypotheses[0]
    assert top.symptom.startswith("CUDA returned its unknown error")
    assert top.for_[0].startswith("the message is torch.cuda.unknown_error_env (")
    assert "driver.uvm" in [h.id for h in report.hypotheses[:2]]


def test_no_driver_inside_a_container_is_the_container_first(tmp_path: Path) -> None:
    report = _report(tmp_path, NO_DRIVER)
    assert report.top(1) == ["driver.container"]
    assert all(h.symptom.startswith("the CUDA driver or runtime could not start") for h in
               report.hypotheses)  # fmt: skip


def test_gloos_full_mesh_failure_is_a_connection_between_ranks(tmp_path: Path) -> None:
    report = _report(tmp_path, GLOO)
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks")
    # gloo binds the interface its host name resolves to: the development corpora's gloo
    # connection failures were that interface, 7 of 7 (differential.priors "connection")
    assert [h.id for h in report.hypotheses][:2] == ["net.socket_interface", "net.unreachable"]
    assert report.hypotheses[0].for_[0].startswith("the message is torch.gloo.full_mesh_failed")


def test_a_device_index_past_the_visible_gpus_is_visibility_then_mig(tmp_path: Path) -> None:
    report = _report(tmp_path, DEVICE_ASSERT)
    ids = [h.id for h in report.hypotheses]
    assert report.hypotheses[0].symptom.startswith("CUDA could not give the process the GPU")
    assert report.top(2) == ["cuda.device_visibility", "gpu.mig"]
    assert ids[0] in {"cuda.device_visibility", "gpu.mig"}


def test_the_watchdogs_exception_is_read_as_the_cuda_error_it_carries(tmp_path: Path) -> None:
    report = _report(tmp_path, RELAYED)
    symptoms = {h.symptom for h in report.hypotheses}
    assert symptoms == {"a kernel or the GPU faulted (a sticky CUDA error: the context is lost)"}


_STORE_GET = (
    "[7] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
    "key-value store by key '0', but store->get('0') got error: Socket Timeout\n"
)


@pytest.mark.parametrize(
    ("env", "where"),
    [
        (
            "PyTorch version: 2.0.1+cu117\nIs debug build: False\n",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.0.1",
        ),
        ("", "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.11.0"),
    ],
)
def test_the_cited_source_is_the_users_release(tmp_path: Path, env: str, where: str) -> None:
    """collect_env names torch 2.0.1: the hypothesis cites the message's place in that release,
    not in the newest one read (which it cites when no version is known)."""
    log = tmp_path / "report.txt"
    log.write_text(f"Collecting environment information...\n{env}\n{_STORE_GET}", encoding="utf-8")
    report = diagnose_paths([str(log)])
    why = report.hypotheses[0].for_[0]
    assert why == (
        f"the message is torch.pgnccl.unique_id_store ({where}): the first collective: the other "
        "ranks wait on the store for rank 0's ncclUniqueId, and rank 0 never reached it (still "
        "busy before it, or crashed); the store itself worked for the rendezvous"
    )
