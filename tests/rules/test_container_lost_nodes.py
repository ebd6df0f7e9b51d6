"""driver.container: a running pod that lost its GPU device nodes (a systemd reload on a
cgroup v2 host) says 'Failed to initialize NVML: Unknown Error' inside while the host is
fine; the job's CUDA error at that moment and the peers' timeouts are that loss's."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_POD = (
    "Kubernetes 1.27, containerd 1.7, cgroup v2. A running PyTorchJob dies hours into "
    "training: one rank gets {error} and the other ranks time out in NCCL. When I exec into "
    "the failed pod, nvidia-smi inside the container prints Failed to initialize NVML: "
    "{nvml}, while nvidia-smi on the host shows all GPUs healthy.\n"
)


def test_nvml_unknown_inside_a_pod_explains_the_jobs_cuda_error(tmp_path: Path) -> None:
    text = _POD.format(error='"unspecified launch failure"', nvml="Unknown Error")
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report) == ["driver.container"]
    assert "'Failed to initialize NVML: Unknown Error'" in report.findings[0].summary


def test_an_nvml_version_mismatch_inside_a_pod_is_not_lost_nodes(tmp_path: Path) -> None:
    text = _POD.format(error='"unspecified launch failure"', nvml="Driver/library version mismatch")
    report = diagnose_text(tmp_path, text)
    assert not any("lost access" in f.summary for f in report.findings)
