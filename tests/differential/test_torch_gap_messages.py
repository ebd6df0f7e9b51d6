"""PyTorch's messages that end a multi-GPU run early: a build without CUDA, a collective on a
device its group has no backend for, FSDP's and DeviceMesh's checks, an RPC timeout and the
allocator's NVML assertion on the out-of-memory path.

Before they were catalogued each fell to the catch-all class ("a rank failed with an error no
rule explains"). Each realistic line opens the class of its mechanism; the harmless lines beside
them (FSDP's order warning, DeviceMesh's numpy notice) stay silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from tests.knowledge._signature_lines import assert_reads_as


def _report(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "log.txt"
    path.write_text(text, encoding="utf-8")
    return diagnose_paths([str(path)])


def _trace(rank: int, call: str, error: str) -> str:
    return (
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/workspace/train.py", line 57, in <module>\n'
        f"[rank{rank}]:     {call}\n"
        f"[rank{rank}]: {error}\n"
    )


LINES = [
    (
        "AssertionError: Torch not compiled with CUDA enabled",
        "torch.cuda.not_compiled",
        "library_missing",
        {},
    ),
    (
        "RuntimeError: No backend type associated with device type cpu",
        "torch.c10d.no_backend_for_device",
        "app_error",
        {"device_type": "cpu"},
    ),
    (
        (
            "RuntimeError: Forward order differs across ranks: rank 0 is all-gathering 12 "
            "parameters while rank 3 is all-gathering 14 parameters"
        ),
        "torch.fsdp.order_count_differs",
        "desync",
        {"r1": "0", "n1": "12", "r2": "3", "n2": "14"},
    ),
    (
        (
            "RuntimeError: Forward order differs across ranks: rank 0 is all-gathering parameters "
            "for ['layers.3.attn.weight'] while rank 1 is all-gathering parameters for "
            "['layers.4.attn.weight']"
        ),
        "torch.fsdp.order_params_differ",
        "desync",
        {"r1": "0", "r2": "1"},
    ),
    (
        (
            "RuntimeError: FSDP needs a non-CPU accelerator device, but no accelerator device is "
            "detected."
        ),
        "torch.fsdp.no_accelerator",
        "cuda_device",
        {},
    ),
    (
        ("ValueError: Inconsistent compute device and `device_id` on rank 3: cuda:0 vs cuda:3"),
        "torch.fsdp.device_id_mismatch",
        "cuda_device",
        {"rank": "3", "compute_device": "cuda:0", "device_from_device_id": "cuda:3"},
    ),
    (
        (
            "RuntimeError: DeviceMesh only support homogeneous hardware, but found 12 ranks and "
            "8 cuda devices!"
        ),
        "torch.device_mesh.heterogeneous",
        "cuda_device",
        {"world_size": "12", "num_devices_per_host": "8", "device_type": "cuda"},
    ),
    (
        "RuntimeError: Mesh should not be bigger than default world size 8, but found 16 ranks!",
        "torch.device_mesh.bigger_than_world",
        "app_error",
        {"world_size": "8", "numel": "16"},
    ),
    (
        # 2.0-2.4 (torch.distributed._tensor): no world size in the message
        "RuntimeError: Mesh should not be bigger than default world size, but found 16 ranks!",
        "torch.device_mesh.bigger_than_world_2_4_1",
        "app_error",
        {"numel": "16"},
    ),
    (
        (
            "RuntimeError: RPC ran for more than set timeout (60000 ms) and will now be marked "
            "with an error"
        ),
        "torch.rpc.timeout",
        "collective_timeout",
        {"timeout_ms": "60000"},
    ),
    (
        (
            'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/'
            'CUDACachingAllocator.cpp":838, please report a bug to PyTorch. '
        ),
        "torch.cuda.oom_nvml_processes_assert",
        "gpu_oom",
        {"line": "838"},
    ),
    (
        (
            "RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT "
            'FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1135, please report a bug '
            "to PyTorch. "
        ),
        "torch.cuda.oom_nvml_init_assert",
        "gpu_oom",
        {"path": "/pytorch/c10/cuda/CUDACachingAllocator.cpp"},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), LINES)
def test_torch_gap_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


def test_a_cpu_only_build_points_at_the_build_not_the_network(tmp_path: Path) -> None:
    """A CPU wheel under torchrun: the library, not the catch-all's network candidates."""
    report = _report(
        tmp_path,
        _trace(
            0,
            "torch.cuda.set_device(local_rank)",
            "AssertionError: Torch not compiled with CUDA enabled",
        ),
    )
    first = report.hypotheses[0]
    assert first.id == "driver.cuda_mismatch"
    assert "torch.cuda.not_compiled" in first.for_[0]
    assert "net.socket_interface" not in [h.id for h in report.hypotheses]


def test_the_allocators_nvml_assertion_is_an_out_of_memory(tmp_path: Path) -> None:
    """reportProcessMemoryInfo runs only when an allocation failed: the OOM is the cause."""
    report = _report(
        tmp_path,
        _trace(
            2,
            "loss.backward()",
            'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/'
            'CUDACachingAllocator.cpp":1154, please report a bug to PyTorch. ',
        ),
    )
    assert [h.id for h in report.hypotheses][:2] == ["gpu.oom", "gpu.contention"]
    assert "torch.cuda.oom_nvml_processes_assert" in report.hypotheses[0].for_[0]


def test_fsdps_forward_order_check_is_a_collective_mismatch(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _trace(
            1,
            "out = model(batch)",
            "RuntimeError: Forward order differs across ranks: rank 0 is all-gathering 12 "
            "parameters while rank 1 is all-gathering 14 parameters",
        ),
    )
    first = report.hypotheses[0]
    assert first.id == "app.collective_mismatch"
    assert "torch.fsdp.order_count_differs" in first.for_[0]


def test_a_mesh_the_hosts_gpus_do_not_divide_is_device_visibility(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _trace(
            5,
            'mesh = init_device_mesh("cuda", (2, 6))',
            "RuntimeError: DeviceMesh only support homogeneous hardware, but found 12 ranks and "
            "8 cuda devices!",
        ),
    )
    assert report.hypotheses[0].id == "cuda.device_visibility"


def test_an_rpc_timeout_is_a_peer_that_never_answered(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _trace(
            0,
            'fut = rpc.rpc_sync("worker1", step, args=(x,))',
            "RuntimeError: RPC ran for more than set timeout (60000 ms) and will now be marked "
            "with an error",
        ),
    )
    ids = [h.id for h in report.hypotheses]
    assert ids[0] == "app.hang"
    assert "launch.rank_crash" in ids[:3]


def test_the_harmless_lines_beside_them_open_no_class(tmp_path: Path) -> None:
    """FSDP's order warning when checking is off, DeviceMesh's numpy notice and a CPU tensor
    on a gloo group are no failure."""
    warning = (
        "UserWarning: Forward order differs from that of the first iteration on rank 1. "
        "Collectives are unchecked and may give incorrect results or hang."
    )
    assert signature_of(warning) is None
    numpy = "DeviceMesh requires numpy >= 1.21 to be installed for type checking"
    assert signature_of(numpy) is None
    report = _report(
        tmp_path,
        "INFO:root:backend gloo: device type cpu, backend type associated: GLOO\n"
        "W1204 05:40:01.000 device_mesh.py:67] DeviceMesh requires numpy >= 1.21 to be "
        "installed for type checking\n"
        "epoch 1 step 100 loss 1.02\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


def test_entries_that_moved_module_name_each_releases_file() -> None:
    """DeviceMesh lived in torch.distributed._tensor up to 2.1, FSDP's checks in
    fully_sharded_data_parallel.py in 1.13: each release's ``where`` names its own file."""
    mesh = by_id()["torch.device_mesh.heterogeneous"]
    assert mesh.where[0].startswith("torch/distributed/_tensor/device_mesh.py:")
    assert mesh.where[0].endswith("@v2.1.2")
    assert mesh.where[-1].startswith("torch/distributed/device_mesh.py:")
    order = by_id()["torch.fsdp.order_count_differs"]
    assert order.where[0].startswith("torch/distributed/fsdp/fully_sharded_data_parallel.py:")
    assert order.versions.first == "1.13.1"
    assert order.where[-1].startswith("torch/distributed/fsdp/_exec_order_utils.py:")
