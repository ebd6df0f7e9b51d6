"""ulimit -a's locked-memory row in a job across nodes over InfiniBand whose NCCL failed with a
system error: a small limit is why the NIC could not pin NCCL's buffers. Unlimited, or one
node, says nothing; a grep-filtered ibv_devinfo paste still gives its port."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.net import IbPort
from nccl_doctor.pipeline import facts_of
from tests.helpers import critical_ids, diagnose_text

_REPORT = (
    "{nodes} x 8 H100, CX-7 NDR. In our container it fails at the first collective:\n"
    "[rank3]: torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/"
    "distributed/c10d/ProcessGroupNCCL.cpp:2117, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.22.3\n"
    "[rank3]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
    "failed or device error.\n\n"
    'root@h100-a04:/workspace# ibv_devinfo -d mlx5_0 | grep -E "hca_id|state|link_layer"\n'
    "hca_id:\tmlx5_0\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n\n"
    "root@h100-a04:/workspace# ulimit -a\n"
    "core file size              (blocks, -c) unlimited\n"
    "max locked memory           (kbytes, -l) {memlock}\n"
    "open files                          (-n) 1048576\n"
)


def test_a_small_locked_memory_limit_beside_a_system_error_over_ib(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REPORT.format(nodes="2 nodes", memlock="64"))
    assert critical_ids(report)[0] == "net.ib_config"
    assert report.findings[0].summary.startswith("The job's locked-memory limit is 64 KiB")


def test_an_unlimited_limit_says_nothing(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REPORT.format(nodes="2 nodes", memlock="unlimited"))
    assert all("locked-memory limit is" not in f.summary for f in report.findings)


def test_one_node_uses_no_ib(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REPORT.format(nodes="1 node", memlock="64"))
    assert all("locked-memory limit is" not in f.summary for f in report.findings)


def test_a_filtered_ibv_devinfo_paste_gives_its_port(tmp_path: Path) -> None:
    path = tmp_path / "ib.txt"
    path.write_text(
        "hca_id:\tmlx5_0\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tInfiniBand\n"
    )
    [port] = facts_of(read_paths([str(path)])).of(IbPort)
    assert (port.device, port.port, port.state, port.link_layer) == (
        "mlx5_0",
        None,
        "ACTIVE",
        "InfiniBand",
    )
