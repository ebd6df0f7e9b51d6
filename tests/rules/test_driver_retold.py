"""PyTorch's "driver on your system is too old" as reporters retell it, and the versions their
words name: the oldest driver is the one complained of, the newest CUDA the one that needs
more. Told in words, the finding says so instead of claiming CUDA printed the error."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_SAID = (
    "New image pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime. On our newer nodes (H100, driver "
    "550) everything works. On the older V100 nodes torch warns at import that the NVIDIA "
    "driver on the system is too old, and torch.cuda.is_available() returns False.\n"
    'nvidia-smi there shows driver 470.182.03, "CUDA Version: 11.4".\n'
)


def test_a_retold_driver_warning_names_the_old_driver_and_the_new_cuda(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAID)
    assert report.top(1) == ["driver.cuda_mismatch"]
    [found] = [f for f in report.findings if f.id == "driver.cuda_mismatch"]
    assert found.summary.startswith("The reporter tells of CUDA's error 35")
    assert "the reported driver 470.182.03 supports CUDA up to 11.4" in found.summary
    assert "the reported CUDA is 12.4" in found.summary
    assert found.fix[0].startswith("Upgrade the host NVIDIA driver to 550.54.14 or newer")


def test_a_driver_said_to_be_new_enough_is_no_complaint(tmp_path: Path) -> None:
    said = _SAID.replace("is too old", "is new enough").replace("returns False", "returns True")
    report = diagnose_text(tmp_path, said)
    assert "driver.cuda_mismatch" not in [f.id for f in report.findings]
