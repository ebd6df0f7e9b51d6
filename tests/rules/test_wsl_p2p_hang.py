"""A hang with NCCL's GPUs connected over P2P/IPC on a machine its own output shows to be WSL
is WSL's missing peer-to-peer path (folding nccl.p2p under it); WSL without a hang stays a
note; the same hang on native Linux stays nccl.p2p's."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_HANG = (
    "DDP with 2x RTX 3090 hangs forever at the first allreduce (single GPU works).\n"
    "DESKTOP-7Q:3412:3490 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    "DESKTOP-7Q:3412:3490 [0] NCCL INFO comm 0x55c0f1a2b3c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
    "busId 1000 commId 0x8d1f0c27a4e9b361 - Init COMPLETE\n"
    "Collecting environment information...\n"
    "PyTorch version: 2.4.0+cu121\n"
    "OS: Ubuntu 22.04.4 LTS (x86_64)\n"
    "Python platform: {platform}\n"
    "Is CUDA available: True\n"
)
_WSL = "Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35"


def test_a_p2p_hang_under_wsl_is_wsls(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _HANG.format(platform=_WSL))
    assert critical_ids(report) == ["driver.wsl"]
    assert report.findings[0].summary.startswith(
        "The job hangs while NCCL connects its GPUs over P2P"
    )


def test_wsl_with_no_hang_is_a_note(tmp_path: Path) -> None:
    healthy = _HANG.format(platform=_WSL).replace(" hangs forever at the first allreduce", " runs")
    report = diagnose_text(tmp_path, healthy)
    [wsl] = [f for f in report.findings if f.id == "driver.wsl"]
    assert wsl.severity.value == "info"


def test_a_p2p_hang_on_native_linux_is_not_wsls(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _HANG.format(platform="Linux-6.5.0-41-generic-x86_64"))
    assert "driver.wsl" not in [f.id for f in report.findings]


_SAID = (
    "I moved the training into WSL2 on the same machine. DDP on the two 3090s now hangs at the "
    "first all_reduce; if I set NCCL_P2P_DISABLE=1 it runs.\n"
)


def test_wsl_said_with_p2p_off_working_is_wsls_missing_path(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAID)
    assert report.top(1) == ["driver.wsl"]
    assert report.findings[0].severity.value == "warning"
    assert [f.id for f in dict(report.folded)["driver.wsl"]] == ["nccl.p2p"]
    # WSL said not used: the P2P path is the machine's own
    native = _SAID.replace("into WSL2 on the same machine", "to native Linux, not WSL")
    assert diagnose_text(tmp_path, native).top(1) == ["nccl.p2p"]
