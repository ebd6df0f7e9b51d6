"""Real captured evidence for the gate's tests: check bundles and kernel logs."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200 = FIXTURES / "captured" / "check-h200"
HEALTHY = H200 / "bundle-healthy.tgz"
FOREIGN = H200 / "bundle-foreign-process.tgz"
BAD_ENV = H200 / "bundle-bad-env.tgz"
NO_GPU = FIXTURES / "captured" / "check-cpu" / "bundle-no-gpu.tgz"
XID = FIXTURES / "formats" / "xid"
FALLEN_OFF = XID / "dmesg-fallen-off-bus-multiline-no-xid-570.txt"
NVLINK_XIDS = XID / "journal-kernel-prefix-xid45-caused-by-nvlink-xid145-149.txt"
CONTAINED = XID / "dmesg-T-535-xid43-31-94-contained-board-serial.txt"
GSP = XID / "dmesg-595-gsp-heartbeat-timeout-rpc-gh100.txt"
REMAP_PENDING = (
    FIXTURES / "formats" / "nvidia-smi-q" / "a100-510.73-ecc-remapped-rows-pending-elided.txt"
)
#: An Xid 79 as the driver prints it (NVIDIA's Xid catalogue: "GPU has fallen off the bus").
XID79 = (
    "[Wed Dec  2 21:03:10 2026] NVRM: Xid (PCI:0000:61:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
)


def broken_bundle(tmp: Path, kernel_log: Path | str, name: str = "node") -> Path:
    """The healthy H200 bundle as a folder, its kernel log replaced by ``kernel_log``.

    ``kernel_log`` is a real captured kernel log (a path) or driver lines (text):
    the node the H200 was, after the fault those lines record.
    """
    folder = tmp / name
    with tarfile.open(HEALTHY) as archive:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
            archive.extractall(folder, filter="data")
        else:  # pragma: no cover -- older Pythons; the archive is the project's own fixture
            archive.extractall(folder)  # noqa: S202
    bundle = folder / "nccl-doctor-bundle"
    text = kernel_log if isinstance(kernel_log, str) else kernel_log.read_text()
    (bundle / "kernel-log.txt").write_text(text)
    return bundle


def copy(src: Path, dst: Path) -> Path:
    """``src`` copied to ``dst``."""
    shutil.copy(src, dst)
    return dst
